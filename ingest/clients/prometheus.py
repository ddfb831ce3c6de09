"""A Prometheus HTTP API client for pulls: instant queries with a range selector, which
answer with the raw samples and their own timestamps.

Errors are raised as :class:`PrometheusError` in the server's words (its ``errorType`` and
``error``, or the HTTP status and body); the credentials are never part of any message.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any


class PrometheusError(Exception):
    """What the server (or the way to it) said went wrong."""

    def __init__(self, message: str, *, too_many_samples: bool = False) -> None:
        super().__init__(message)
        self.too_many_samples = too_many_samples


@dataclass(frozen=True)
class Server:
    """Where to ask and how to authenticate (a bearer token, or basic auth)."""

    url: str
    bearer_token: str = field(default="", repr=False)
    username: str = ""
    password: str = field(default="", repr=False)
    timeout: float = 60.0

    def headers(self) -> dict[str, str]:
        if self.bearer_token:
            return {"Authorization": f"Bearer {self.bearer_token}"}
        if self.username or self.password:
            raw = f"{self.username}:{self.password}".encode()
            return {"Authorization": f"Basic {base64.b64encode(raw).decode()}"}
        return {}


def public_url(url: str) -> str:
    """The URL without any user:password@ part, for labels and messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def instant_query(server: Server, promql: str, at: float) -> dict[str, Any]:
    """POST /api/v1/query (``time`` = ``at``, unix seconds); the decoded success answer."""
    endpoint = public_url(server.url) + "/api/v1/query"
    body = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"}).encode()
    request = urllib.request.Request(  # noqa: S310  (the URL is the data source's, http(s) only)
        endpoint,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded", **server.headers()},
    )
    if urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
        raise PrometheusError(f"{endpoint}: only http and https URLs can be pulled from")
    try:
        with urllib.request.urlopen(request, timeout=server.timeout) as response:  # noqa: S310
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        answer = _json(raw)
        if answer is not None and answer.get("status") == "error":
            raise _error(answer) from None
        text = raw.decode("utf-8", "replace").strip()[:500]
        raise PrometheusError(f"HTTP {exc.code} {exc.reason}: {text}".rstrip(": ")) from None
    except TimeoutError:
        raise PrometheusError(f"{endpoint}: no answer within {server.timeout:g} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise PrometheusError(f"{endpoint}: no answer within {server.timeout:g} s") from None
        raise PrometheusError(f"{endpoint}: cannot connect: {exc.reason}") from None
    except OSError as exc:
        raise PrometheusError(f"{endpoint}: {exc}") from None
    answer = _json(raw)
    if answer is None:
        raise PrometheusError(f"{endpoint}: the answer is not JSON: {raw[:200]!r}")
    if answer.get("status") != "success":
        raise _error(answer)
    return answer


def _json(raw: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def _error(answer: dict[str, Any]) -> PrometheusError:
    kind = str(answer.get("errorType", "unknown"))
    text = str(answer.get("error", ""))
    return PrometheusError(f"{kind}: {text}", too_many_samples="too many samples" in text.lower())

"""A Prometheus HTTP API client (Prometheus, Thanos, Mimir and VictoriaMetrics share the API).

Pulls and the analysis ask for raw samples: instant queries with a range selector, which answer
with every sample at its own timestamp (:func:`query_fetch`). The timeline's remote series ask
``query_range`` at a step (:func:`range_query`).

Errors are raised as :class:`PrometheusError` in the server's words (its ``errorType`` and
``error``, or the HTTP status and body); the credentials are never part of any message.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CHUNK_S = 3600  # one request per hour of window (the store's chunk), halved when too big
MIN_CHUNK_S = 60
SOURCE_LABEL = "source"
SELECTOR = re.compile(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)?\s*(\{.*\})?\s*$", re.DOTALL)

Progress = Callable[[float], None]


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
    return _post(server, "/api/v1/query", {"query": promql, "time": f"{at:.3f}"})


def range_query(
    server: Server, promql: str, *, start: float, end: float, step: float
) -> dict[str, Any]:
    """POST /api/v1/query_range (unix seconds, ``step`` seconds); the decoded success answer."""
    params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    return _post(server, "/api/v1/query_range", params)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not followed: urllib would repeat the request, Authorization
    header included, to whatever address the server names (another host, plain http)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _post(server: Server, path: str, params: dict[str, str]) -> dict[str, Any]:
    endpoint = public_url(server.url) + path
    body = urllib.parse.urlencode(params).encode()
    request = urllib.request.Request(  # noqa: S310  (the URL is the data source's, http(s) only)
        endpoint,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded", **server.headers()},
    )
    if urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
        raise PrometheusError(f"{endpoint}: only http and https URLs can be pulled from")
    try:
        with _OPENER.open(request, timeout=server.timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = public_url(exc.headers.get("Location", "") or "") or "another address"
            raise PrometheusError(
                f"{endpoint}: the server redirects to {where}; give the address it redirects to "
                "as the data source's URL (its credentials are never sent on to another one)"
            ) from None
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


def query_fetch(
    server: Server,
    query: str,
    *,
    start: float,
    end: float,
    step: float = 0.0,
    origin: str = "",
    on_progress: Progress | None = None,
) -> dict[str, Any]:
    """Every raw sample of ``query`` in [start, end] (unix seconds) as one ``query_range``
    (matrix) document; each series gets ``source`` = ``origin``. A query that is not a series
    selector is asked as a subquery at ``step`` seconds (60 when not given)."""
    series: dict[tuple[tuple[str, str], ...], list[list[Any]]] = {}
    metrics: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
    todo = _hours(start, end)
    total = sum(b - a for a, b in todo) or 1.0
    done = 0.0
    while todo:
        lo, hi = todo.pop(0)
        try:
            answer = instant_query(server, _ranged(query, hi - lo, step), hi)
        except PrometheusError as exc:
            if exc.too_many_samples and hi - lo > MIN_CHUNK_S:
                mid = lo + (hi - lo) / 2
                todo[:0] = [(lo, mid), (mid, hi)]  # smaller requests, still in time order
                continue
            if str(exc).startswith("bad_data:"):
                # Said of the query with a range added: ask for the query as the user wrote
                # it, so that an error in it is reported about their own text.
                instant_query(server, query, hi)
            raise
        data = answer.get("data") or {}
        if data.get("resultType") != "matrix":
            raise PrometheusError(
                f"{query}: expected a range of samples (matrix), got {data.get('resultType')!r}"
            )
        for item in data.get("result") or []:
            metric = dict(item.get("metric") or {})
            if origin:
                key = SOURCE_LABEL if SOURCE_LABEL not in metric else f"prometheus_{SOURCE_LABEL}"
                metric[key] = origin
            ident = tuple(sorted(metric.items()))
            values = series.setdefault(ident, [])
            metrics[ident] = metric
            last = values[-1][0] if values else None
            for point in item.get("values") or []:
                # Adjacent requests share their boundary instant: keep each time once.
                if (last is None or point[0] > last) and lo <= point[0] <= end:
                    values.append(point)
                    last = point[0]
        done += hi - lo
        if on_progress:
            on_progress(done / total)
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": metrics[ident], "values": values}
                for ident, values in series.items()
                if values
            ],
        },
    }


def _hours(start: float, end: float) -> list[tuple[float, float]]:
    """[start, end] cut at CHUNK_S boundaries (aligned to the epoch)."""
    out = []
    lo = start
    while True:
        hi = min(end, (lo // CHUNK_S + 1) * CHUNK_S)
        out.append((lo, hi))
        if hi >= end:
            return out
        lo = hi


def _ranged(query: str, seconds: float, step: float) -> str:
    """The query with a range over the last ``seconds`` before the evaluation time."""
    length = f"{max(round(seconds * 1000), 1)}ms"
    if SELECTOR.match(query) and query.strip():
        return f"{query.strip()}[{length}]"
    return f"({query})[{length}:{max(round((step or 60) * 1000), 1)}ms]"

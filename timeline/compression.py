"""The figure's JSON compressed in the coding the client accepts that costs the server least.

``timeline.json`` is up to ~3 MB of base64 typed arrays (a 30 min zoom of 88 series: 2.86 MB).
Django's ``gzip_page`` compresses at zlib level 6: 34 ms for that body (to 0.41 MB), twice the
time of building it. The same body, measured on the same machine: zstd level 1 1.9 ms (0.27 MB),
Brotli quality 1 3.8 ms (0.29 MB), gzip through ISA-L (``isal``, level 1) 2.5 ms (0.44 MB).
Chromium 156 offers ``gzip, deflate, br, zstd`` even over plain HTTP (``./dev run`` on
localhost) and gets zstd; a client that offers gzip alone gets the ISA-L gzip, which any gzip
reader decodes.

The body holds no secret (no CSRF token, no session data), so compressing it is no BREACH-style
oracle; pages with a CSRF token are not compressed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import brotli
import zstandard
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from isal import igzip

# The server's order when the client weighs several codings the same: least time for the size.
CODINGS = ("zstd", "br", "gzip")
MIN_BYTES = 200  # (what Django's GZipMiddleware leaves alone too: headers would outweigh it)


def _zstd(body: bytes) -> bytes:
    # Level 1 uses a window of at most 512 KiB (browsers decode zstd windows up to 8 MiB).
    return zstandard.ZstdCompressor(level=1).compress(body)


def _br(body: bytes) -> bytes:
    return bytes(brotli.compress(body, quality=1))


def _gzip(body: bytes) -> bytes:
    return bytes(igzip.compress(body, compresslevel=1, mtime=0))


_COMPRESS: dict[str, Callable[[bytes], bytes]] = {"zstd": _zstd, "br": _br, "gzip": _gzip}


def chosen_coding(accept_encoding: str) -> str | None:
    """The coding of :data:`CODINGS` the ``Accept-Encoding`` header weighs highest (RFC 9110
    12.5.3: ``q=0`` refuses one, ``*`` stands for those not named, ``x-gzip`` is gzip); ties
    go by :data:`CODINGS`' order; None for the body as it is."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
        if name == "x-gzip":
            name = "gzip"
        weights[name] = max(weight, weights.get(name, 0.0))
    star = weights.get("*", 0.0)
    best: tuple[float, int] | None = None
    pick = None
    for rank, coding in enumerate(CODINGS):
        weight = weights.get(coding, star)
        if weight > 0 and (best is None or (weight, -rank) > best):
            best, pick = (weight, -rank), coding
    return pick


def compress(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """``response`` compressed for ``request`` when that is worth it; its ETag weakened then
    (the bytes differ by coding; ``live.etag_matches`` compares weakly), and Vary names
    Accept-Encoding either way (caches keep one copy per coding)."""
    patch_vary_headers(response, ("Accept-Encoding",))
    if response.streaming or response.status_code != 200 or response.has_header("Content-Encoding"):
        return response
    body = response.content
    if len(body) < MIN_BYTES:
        return response
    coding = chosen_coding(request.headers.get("Accept-Encoding", ""))
    if coding is None:
        return response
    packed = _COMPRESS[coding](body)
    if len(packed) >= len(body):
        return response
    response.content = packed
    response["Content-Length"] = str(len(packed))
    response["Content-Encoding"] = coding
    etag = response.get("ETag")
    if etag and etag.startswith('"'):
        response["ETag"] = "W/" + etag
    return response


def compressed(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` with its responses compressed (:func:`compress`)."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return compress(request, view(request, *args, **kwargs))

    return wrapped

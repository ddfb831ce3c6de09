"""Prometheus metrics: exposition text (Prometheus text 0.0.4 and OpenMetrics 1.0), HTTP API
query responses, and the streamed reading of big text files.

Pure: bytes in, :class:`~ingest.parsers.types.ParseResult` out. The modules, along the seams a
reader needs:

* :mod:`.exposition`: the entry point for exposition files, the rules that tell text from
  OpenMetrics and the text format's rules; :mod:`.grammar` reads series, values, timestamps
  and metadata lines for both; :mod:`.bulk` (fast, numpy) and :mod:`.careful` (line by line,
  the reference) are the two readers of the text format; :mod:`.chunks` cuts a file into
  pieces of whole lines;
* :mod:`.openmetrics`: OpenMetrics 1.0's rules and their line-by-line reader (the reference);
  :mod:`.om_bulk` checks the same rules over columns, fast;
* :mod:`.stream`: the same text parsed part by part for the streaming loader;
* :mod:`.query_range`: ``query`` / ``query_range`` JSON from the HTTP API.

nvidia-smi CSV is not Prometheus: it is :mod:`ingest.parsers.nvidia_smi`.
"""

from __future__ import annotations

from .exposition import KIND_EXPOSITION, looks_like_exposition, parse_exposition
from .query_range import KIND_QUERY_RANGE, looks_like_query_range, parse_query_range
from .stream import ExpositionStream, StreamFallback

__all__ = [
    "KIND_EXPOSITION",
    "KIND_QUERY_RANGE",
    "ExpositionStream",
    "StreamFallback",
    "looks_like_exposition",
    "looks_like_query_range",
    "parse_exposition",
    "parse_query_range",
]

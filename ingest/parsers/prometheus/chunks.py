"""Cutting an exposition file into pieces of whole lines, and telling OpenMetrics from text.

Pure: the data may be a read-only mapping of the file, made by the caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mmap  # the type of a mapped file a caller may hand over instead of bytes

CHUNK_BYTES = 1 << 22  # lines are tokenised in ~4 MiB chunks to bound memory


def has_eof_marker(data: bytes | mmap.mmap) -> bool:
    pos = data.find(b"# EOF")
    while pos != -1:
        at_start = pos == 0 or data[pos - 1] == 0x0A
        tail = data[pos + 5 : pos + 7]
        if at_start and (tail[:1] in (b"", b"\n") or tail in (b"\r", b"\r\n")):
            return True
        pos = data.find(b"# EOF", pos + 5)
    return False


def raw_chunks(data: bytes | mmap.mmap, end: int | None = None) -> Iterator[bytes]:
    """Yield ~4 MiB pieces of ``data`` (up to ``end``) cut at newlines (the newline itself
    dropped); ``data`` may be a read-only mapping of the file (no I/O here: the caller made
    it)."""
    start = 3 if data[:3] == b"\xef\xbb\xbf" else 0  # past a BOM
    size = len(data) if end is None else end
    while start < size:
        cut = data.find(b"\n", min(start + CHUNK_BYTES, size), size)
        if cut == -1:
            cut = size
        yield data[start:cut]
        start = cut + 1

"""timeline.json compressed in the coding the client accepts that costs least
(timeline.compression): zstd, then Brotli, then gzip through ISA-L; each decodes (with the
stdlib's gzip, brotli, zstandard) to the very bytes sent uncompressed, with a weak ETag that
revalidates to a 304."""

from __future__ import annotations

import gzip
import json
from typing import Any

import brotli
import pytest
import zstandard
from django.urls import reverse

from timeline.compression import chosen_coding

_DECODE = {
    "zstd": lambda b: zstandard.ZstdDecompressor().decompress(b),
    "br": brotli.decompress,
    "gzip": gzip.decompress,
}


@pytest.mark.parametrize(
    ("header", "coding"),
    [
        ("gzip, deflate, br, zstd", "zstd"),  # Chromium and Firefox over HTTPS
        ("gzip, deflate, br", "br"),
        ("gzip, deflate", "gzip"),  # browsers over plain HTTP
        ("GZIP", "gzip"),
        ("x-gzip", "gzip"),
        ("deflate", None),
        ("identity", None),
        ("", None),
        ("*", "zstd"),
        ("*;q=0, gzip", "gzip"),
        ("br;q=0, gzip, zstd;q=0", "gzip"),
        ("gzip;q=1.0, br;q=0.5, zstd;q=0.2", "gzip"),  # the client's weights come first
        ("gzip;q=0.8, br;q=0.8", "br"),  # a tie: the cheaper coding
        ("gzip;q=bad, br;q=0", None),  # an unreadable weight counts as a refusal
        (" br ; q=0.001 ,, ", "br"),
    ],
)
def test_the_coding_the_client_weighs_highest_and_costs_least(header: str, coding: str) -> None:
    assert chosen_coding(header) == coding


@pytest.mark.parametrize(
    ("header", "coding"),
    [("gzip, deflate, br, zstd", "zstd"), ("gzip, deflate, br", "br"), ("gzip, deflate", "gzip")],
)
def test_each_coding_decodes_to_the_uncompressed_body_and_revalidates(
    client: Any, user: Any, custom: Any, header: str, coding: str
) -> None:
    client.force_login(user)
    path = reverse("timeline_data", args=[custom.slug])
    plain = client.get(path)
    assert plain.status_code == 200 and "Content-Encoding" not in plain
    assert "Accept-Encoding" in plain["Vary"] and plain["ETag"].startswith('"')
    assert json.loads(plain.content)["figure"]["data"]  # a real figure, traces and all

    packed = client.get(path, HTTP_ACCEPT_ENCODING=header)
    assert packed.status_code == 200 and packed["Content-Encoding"] == coding
    assert "Accept-Encoding" in packed["Vary"]
    assert int(packed["Content-Length"]) == len(packed.content) < len(plain.content) // 3
    assert _DECODE[coding](packed.content) == plain.content
    # The bytes differ by coding, so the tag is weak; sent back, it gets a body-less 304.
    assert packed["ETag"] == f"W/{plain['ETag']}"
    again = client.get(path, HTTP_ACCEPT_ENCODING=header, HTTP_IF_NONE_MATCH=packed["ETag"])
    assert again.status_code == 304 and again.content == b""
    assert "Content-Encoding" not in again and "Accept-Encoding" in again["Vary"]


def test_a_refused_coding_is_never_sent(client: Any, user: Any, custom: Any) -> None:
    client.force_login(user)
    path = reverse("timeline_data", args=[custom.slug])
    response = client.get(path, HTTP_ACCEPT_ENCODING="zstd;q=0, br;q=0, gzip;q=0, deflate")
    assert response.status_code == 200 and "Content-Encoding" not in response
    assert json.loads(response.content)["figure"]["data"]

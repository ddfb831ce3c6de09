"""Ingest errors name the file, the line and what was expected, and nothing else (issue 15.8).

Values the database refuses (NUL characters, lone surrogates, label values past the unique
index's limit, metric names past their column, times the timeline cannot show, JSON nested
past any sense) are found before the load writes a row, at their line; what reaches the user
never holds SQL, database limits, driver names or server paths.
"""

from __future__ import annotations

import os
import random
import re
import string
from pathlib import Path

import pytest

from ingest.services import bundles, loading
from ingest.services.artifacts import public_text
from tests.reliability.helpers import row_counts
from timeline.choices import RunStatus
from timeline.models import Artifact

GOOD = Path(__file__).resolve().parent.parent / "fixtures" / "metrics" / "two_scrapes.prom"
RND = "".join(random.Random(15).choice(string.ascii_letters) for _ in range(20_000))
REST = '"case": "c", "status": "pass", "score": 0.9, "threshold": 0.9'
RUN = '"suite": "s", ' + REST
OK_RUN = '{"ts": "2026-11-20T08:00:00Z", ' + RUN + "}\n"
# Words no message for users may hold: the database's, the driver's and the server's.
INTERNALS = re.compile(
    r"psycopg|SQL|violates|index row|maximum size|varchar|character varying|out of range for|"
    r"DETAIL|HINT|Traceback|Errno|/tmp|/home|/work|/var|uploads/|recursion|codec|surrogates not",
    re.I,
)

# file name -> (bytes, line the error names, words the message must carry)
CASES: dict[str, tuple[bytes, int, str]] = {
    "long_label.prom": (
        f'# TYPE m gauge\nm 1 1700000000000\nm{{a="{RND}"}} 1 1700000000000\n'.encode(),
        3,
        "expected at most 2000",
    ),
    "long_name.prom": (
        f"# TYPE m gauge\nm 1 1700000000000\n{'m' * 400} 1 1700000000000\n".encode(),
        3,
        "a metric name of 400 characters; expected at most 300",
    ),
    "nul_label.prom": (
        b'# TYPE m gauge\nm{a="x"} 1 1700000000000\nm{a="x\x00y"} 1 1700000000000\n',
        3,
        "a NUL character",
    ),
    "nul_text.jsonl": (
        (OK_RUN + '{"ts": "2026-11-20T09:00:00Z", "suite": "s\\u0000", ' + REST + "}\n").encode(),
        2,
        "a NUL character",
    ),
    "surrogate.jsonl": (
        (OK_RUN + '{"ts": "2026-11-20T09:00:00Z", "suite": "s\\udc80", ' + REST + "}\n").encode(),
        2,
        "a lone surrogate",
    ),
    "year_one.jsonl": (
        (OK_RUN + '{"ts": "0001-01-01T00:00:00+05:00", ' + RUN + "}\n").encode(),
        2,
        "expected an ISO 8601 time",
    ),
    "year_1800.jsonl": (
        (OK_RUN + '{"ts": "1800-01-01T00:00:00Z", ' + RUN + "}\n").encode(),
        2,
        "outside the years 1900 to 2199",
    ),
    "huge_integer.jsonl": (
        (
            OK_RUN + '{"ts": "2026-11-20T09:00:00Z", ' + RUN + ', "n": ' + "9" * 5000 + "}\n"
        ).encode(),
        2,
        "more than 4300 digits",
    ),
    "deep.jsonl": (
        (
            OK_RUN + '{"ts": "2026-11-20T09:00:00Z", ' + RUN + ', "x": ' + "[" * 5000 + "]" * 5000
        ).encode()
        + b"}\n",
        2,
        "nested deeper than 32 levels",
    ),
    "deep_attrs.jsonl": (
        (
            OK_RUN + '{"ts": "2026-11-20T09:00:00Z", ' + RUN + ', "x": ' + "[" * 40 + "]" * 40
        ).encode()
        + b"}\n",
        2,
        "nested deeper than 32 levels",
    ),
    "deep.json": (
        b'{"status": "success", "data": \n' + b"[" * 5000 + b"]" * 5000 + b"}\n",
        2,
        "nested deeper than 32 levels",
    ),
}


@pytest.fixture
def baseline(incident):
    bundles.path_register(incident=incident, path=GOOD)
    artifact = Artifact.objects.get(incident=incident)
    assert loading.artifact_ingest(artifact_id=artifact.pk).status == RunStatus.DONE
    return incident, row_counts(incident)


def _ingest(incident, path: Path) -> Artifact:
    (artifact,) = bundles.path_register(incident=incident, path=path).artifacts
    return loading.artifact_ingest(artifact_id=artifact.pk)


@pytest.mark.attack("hostile file: a value the database refuses")
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_the_database_refuses_is_an_error_at_its_line(baseline, tmp_path, name):
    incident, before = baseline
    data, line, words = CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    artifact = _ingest(incident, path)
    assert artifact.status == RunStatus.FAILED
    assert re.match(rf"{re.escape(name)}:{line}: \S", artifact.error), artifact.error
    assert words in artifact.error
    assert not INTERNALS.search(artifact.error), artifact.error
    assert row_counts(incident) == before


@pytest.mark.attack("hostile file: a value the database refuses")
def test_a_big_file_with_a_label_too_long_names_its_line_too(baseline, tmp_path, settings):
    """The streaming path (big Prometheus files) hands such a file to the whole-file path."""
    from ingest import streaming

    incident, before = baseline
    lines = [f'm{{i="{i}"}} {i} 1700000000000\n' for i in range(200_000)]
    lines.insert(150_000, f'm{{i="{RND}"}} 1 1700000000000\n')
    path = tmp_path / "big.prom"
    path.write_text("# TYPE m gauge\n" + "".join(lines))
    assert path.stat().st_size >= 6_000_000
    streaming_min = streaming.STREAM_MIN_BYTES
    streaming.STREAM_MIN_BYTES = 1_000_000  # take the streaming path at this size
    try:
        artifact = _ingest(incident, path)
    finally:
        streaming.STREAM_MIN_BYTES = streaming_min
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith("big.prom:150002: labels: "), artifact.error
    assert not INTERNALS.search(artifact.error), artifact.error
    assert row_counts(incident) == before


def test_a_missing_stored_file_names_the_file_not_the_server_path(baseline, tmp_path, settings):
    incident, before = baseline
    path = tmp_path / "gone.prom"
    path.write_bytes(GOOD.read_bytes() + b"# another file\n")
    (artifact,) = bundles.path_register(incident=incident, path=path).artifacts
    stored = Path(settings.UPLOAD_ROOT).resolve() / artifact.path
    os.unlink(stored)
    artifact = loading.artifact_ingest(artifact_id=artifact.pk)
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith("gone.prom: "), artifact.error
    assert str(settings.UPLOAD_ROOT) not in artifact.error
    assert "/" not in artifact.error, artifact.error
    assert row_counts(incident) == before


def test_server_paths_are_cut_from_every_message(settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    root = settings.UPLOAD_ROOT
    assert public_text(f"git log in {root}/dsv4/bundle-x/deploy: bad") == (
        "git log in bundle-x/deploy: bad"
    )
    assert public_text(f"x.zip: not a readable archive ({root}/.tmp/tmpab12/x.zip)") == (
        "x.zip: not a readable archive (x.zip)"
    )
    assert public_text("fatal: not a git repository: '/srv/app/.git'") == (
        "fatal: not a git repository: '.git'"
    )
    # What is not a server path is left alone.
    kept = "scrape http://prom:9090/api/v1/query_range: 5 of 7 series; a/b/c"
    assert public_text(kept) == kept


@pytest.mark.parametrize("stream", [False, True], ids=["whole-file", "streamed"])
def test_samples_after_an_openmetrics_eof_are_an_error(baseline, tmp_path, stream):
    """Issue 15.9: the OpenMetrics parser ends at '# EOF' (ingest.parsers.prometheus); through
    the real ingest path, small files and big ones (the streaming path) alike."""
    from ingest import streaming

    incident, before = baseline
    rows = 120_000 if stream else 3
    lines = [f'm{{i="{i}"}} {i} 1795204800\n' for i in range(rows)]
    path = tmp_path / "after_eof.om"
    path.write_text("# TYPE m gauge\n" + "".join(lines) + '# EOF\nm{i="x"} 1 1795204860\n')
    streaming_min = streaming.STREAM_MIN_BYTES
    streaming.STREAM_MIN_BYTES = 1_000_000 if stream else streaming_min
    try:
        artifact = _ingest(incident, path)
    finally:
        streaming.STREAM_MIN_BYTES = streaming_min
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith(f"after_eof.om:{rows + 3}: expected nothing after '# EOF'")
    assert row_counts(incident) == before

"""Server starts through the real ingest path into Postgres (issue 13): one server_start event per
start on the Live config lane, idempotent re-ingest, symptoms on errors, bad input refused whole."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evidence.vocabulary import EventKind, Lane, SymptomKind
from timeline.choices import RunStatus
from timeline.models import Artifact, Event, Incident

REAL = Path(__file__).resolve().parent / "fixtures" / "real" / "sglang"

DECODE = (
    "Decode batch. #running-req: 2, #token: 900, token usage: 0.20, cuda graph: True, "
    "gen throughput (token/s): 80.00, #queue-req: 0,"
)
TWO_STARTS = f"""\
[2026-11-20 08:00:00] server_args=ServerArgs(model_path='/m', chunked_prefill_size=8192, tp_size=8)
[2026-11-20 08:00:30] INFO:     Started server process [4100]
[2026-11-20 08:00:31] The server is fired up and ready to roll!
[2026-11-20 08:10:00 TP0] {DECODE}
[2026-11-20 09:00:00] INFO:     Shutting down
[2026-11-20 09:00:01] INFO:     Finished server process [4100]
[2026-11-20 09:05:00] server_args=ServerArgs(model_path='/m', chunked_prefill_size=16384, tp_size=8)
[2026-11-20 09:05:30] INFO:     Started server process [4200]
[2026-11-20 09:05:31] The server is fired up and ready to roll!
[2026-11-20 09:10:00 TP0] {DECODE}
"""


def _ingest(path: Path, team: object, slug: str = "live") -> str:
    out = StringIO()
    call_command(
        "ingest",
        str(path),
        incident=slug,
        team=team.name,  # type: ignore[attr-defined]
        timezone="America/Los_Angeles",
        no_analyze=True,
        stdout=out,
        stderr=StringIO(),
    )
    return out.getvalue()


def _starts(slug: str = "live") -> list[Event]:
    return list(
        Event.objects.filter(incident__slug=slug, kind=EventKind.SERVER_START).order_by("at")
    )


@pytest.mark.django_db
def test_a_log_with_two_starts_stores_two_server_start_events(team, tmp_path):
    (tmp_path / "server.log").write_text(TWO_STARTS)
    _ingest(tmp_path, team)
    first, second = _starts()
    assert (first.lane, second.lane) == (Lane.LIVE_CONFIG, Lane.LIVE_CONFIG)
    assert first.at.isoformat() == "2026-11-20T16:00:00+00:00"  # 08:00 in Los Angeles
    assert first.ends_at is not None and first.ends_at.isoformat() == "2026-11-20T17:00:00+00:00"
    assert first.attrs["server_args"] == {
        "model_path": "'/m'",
        "chunked_prefill_size": "8192",
        "tp_size": "8",
    }
    assert second.attrs["server_args"]["chunked_prefill_size"] == "16384"
    assert (first.attrs["pid"], second.attrs["pid"]) == (4100, 4200)
    assert first.attrs["ready_at"] == "2026-11-20T16:00:31+00:00"
    assert second.title == "Server start (pid 4200): 3 args"
    artifact = Artifact.objects.get(incident__slug="live")
    assert artifact.status == RunStatus.DONE and artifact.kind == "sglang_log"


@pytest.mark.django_db
def test_re_ingesting_the_same_log_or_a_longer_copy_adds_no_start(team, tmp_path):
    (tmp_path / "server.log").write_text(TWO_STARTS)
    _ingest(tmp_path, team)
    events = Event.objects.filter(incident__slug="live").count()
    _ingest(tmp_path, team)
    assert Event.objects.filter(incident__slug="live").count() == events
    # The same log exported again later, under another name, with more lines at its end: the
    # two starts are the same starts.
    later = tmp_path / "later"
    later.mkdir()
    (later / "server-export.log").write_text(TWO_STARTS + f"[2026-11-20 09:20:00 TP0] {DECODE}\n")
    _ingest(later, team)
    assert len(_starts()) == 2
    assert Artifact.objects.filter(incident__slug="live", status=RunStatus.DONE).count() == 2


@pytest.mark.django_db
def test_real_launches_store_their_configuration_and_symptoms(team, tmp_path):
    for name in ("glm5_rocm_two_launches_sigquit.log", "glm5_rocm_hip_oom.log"):
        (tmp_path / name).write_bytes((REAL / name).read_bytes())
    _ingest(tmp_path, team)
    starts = _starts()
    assert [len(s.attrs["server_args"]) for s in starts] == [327, 333, 325]
    assert starts[0].attrs["server_args"]["attention_backend"] == "'triton'"
    symptoms = Event.objects.filter(incident__slug="live", kind=EventKind.LOG_ERROR)
    # Each rank logs the same failure in the same second: one event each, copies counted
    # (8 OOM lines, 26 + 4 crash lines).
    oom = symptoms.filter(attrs__symptom=SymptomKind.OOM)
    crash = symptoms.filter(attrs__symptom=SymptomKind.CRASH)
    assert oom.count() == 1 and sum(1 + e.attrs.get("copies", 0) for e in oom) == 8
    assert crash.count() == 4 + 1
    assert sum(1 + e.attrs.get("copies", 0) for e in crash) == 26 + 4


@pytest.mark.django_db
def test_a_cut_server_args_line_fails_the_file_with_its_line_and_stores_nothing(team, tmp_path):
    second = "[2026-11-20 09:05:30]"
    cut = TWO_STARTS.replace(f"tp_size=8)\n{second}", f"tp_size=8\n{second}")
    assert cut != TWO_STARTS
    (tmp_path / "server.log").write_text(cut)
    with pytest.raises(CommandError, match="1 of 1 files failed"):
        _ingest(tmp_path, team)
    artifact = Artifact.objects.get(incident__slug="live")
    assert artifact.status == RunStatus.FAILED
    assert artifact.error.startswith("server.log:7: server_args=ServerArgs(...)")
    assert "is not closed: expected ')' (the line may have been cut)" in artifact.error
    assert not Event.objects.filter(incident=Incident.objects.get(slug="live")).exists()


# --- DST: the log's resolved times checked against epoch-stamped metrics -----------------------

# A log that opens inside the repeated hour of 2026-11-01 in Los Angeles: nothing earlier tells
# which pass it is, so the parser reads the first (UTC-07:00).
DST_LOG = "".join(
    f"[2026-11-01 01:{m}0:00 TP0] Decode batch. #running-req: {n}, #token: 9, token usage: 0.20, "
    "gen throughput (token/s): 80.00, #queue-req: 0,\n"
    for m, n in zip("12345", (1, 2, 3, 4, 5), strict=True)
)


def _query_range(values_by_hour: dict[int, list[float]]) -> str:
    """A Prometheus query_range answer: running requests every 10 minutes at :10-:50 of each
    UTC hour given (2026-11-01)."""
    import datetime as dt
    import json

    values = []
    for hour, vals in sorted(values_by_hour.items()):
        for minute, value in zip((10, 20, 30, 40, 50), vals, strict=True):
            at = dt.datetime(2026, 11, 1, hour, minute, tzinfo=dt.UTC).timestamp()
            values.append([at, str(value)])
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [
                    {
                        "metric": {"__name__": "sglang:num_running_reqs", "instance": "a:30000"},
                        "values": values,
                    }
                ],
            },
        }
    )


def _warnings(slug: str = "live") -> list[str]:
    return [
        w
        for a in Artifact.objects.filter(incident__slug=slug)
        for w in (a.counts or {}).get("warnings", [])
    ]


@pytest.mark.django_db
def test_metrics_that_saw_the_log_an_hour_later_raise_a_load_warning(team, tmp_path):
    (tmp_path / "server.log").write_text(DST_LOG)
    # the server really logged the second pass (08:xx PST = 09:xx UTC): the metrics say so
    (tmp_path / "running.json").write_text(_query_range({8: [9, 9, 9, 9, 9], 9: [1, 2, 3, 4, 5]}))
    _ingest(tmp_path, team)
    notes = [w for w in _warnings() if "disagree with the metrics" in w]
    assert len(notes) == 1, _warnings()
    assert notes[0].startswith("server.log:1: lines 1-5 (read as pass 1 of a repeated hour)")
    assert "match the metrics 1:00:00 later" in notes[0]
    assert any("nothing earlier in the log tells which pass" in w for w in _warnings())


@pytest.mark.django_db
def test_metrics_that_agree_with_the_log_raise_no_warning(team, tmp_path):
    (tmp_path / "server.log").write_text(DST_LOG)
    (tmp_path / "running.json").write_text(_query_range({8: [1, 2, 3, 4, 5], 9: [9, 9, 9, 9, 9]}))
    _ingest(tmp_path, team)
    assert not [w for w in _warnings() if "disagree with the metrics" in w]
    assert Artifact.objects.filter(incident__slug="live", status=RunStatus.DONE).count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("first", ["log", "metrics"])
def test_the_check_runs_whichever_of_log_and_metrics_comes_second(team, tmp_path, first):
    log_dir, metrics_dir = tmp_path / "log", tmp_path / "metrics"
    log_dir.mkdir()
    metrics_dir.mkdir()
    (log_dir / "server.log").write_text(DST_LOG)
    (metrics_dir / "running.json").write_text(
        _query_range({8: [9, 9, 9, 9, 9], 9: [1, 2, 3, 4, 5]})
    )
    order = [log_dir, metrics_dir] if first == "log" else [metrics_dir, log_dir]
    for path in order:
        _ingest(path, team)
    later = "running.json" if first == "log" else "server.log"
    artifact = Artifact.objects.get(incident__slug="live", name__endswith=later)
    notes = [w for w in artifact.counts["warnings"] if "disagree with the metrics" in w]
    assert len(notes) == 1 and "match the metrics 1:00:00 later" in notes[0]


@pytest.mark.django_db
def test_a_crash_loop_split_over_one_log_per_restart_is_found_once(team, tmp_path):
    # an orchestrator restarting a crashing server: each start in a log of its own
    for n in range(4):
        (tmp_path / f"server-{n}.log").write_text(
            f"[2026-11-20 08:0{n}:00] server_args=ServerArgs(model_path='/m', tp_size=8)\n"
            f"[2026-11-20 08:0{n}:40] Received sigquit from a child process. It usually means "
            "the child failed.\n"
        )
    _ingest(tmp_path, team)
    loops = Event.objects.filter(incident__slug="live", attrs__symptom=SymptomKind.CRASH_LOOP)
    assert [(e.title, e.attrs["starts"], e.attrs["went_down"]) for e in loops] == [
        ("Crash loop: 4 starts in 3 min", 4, 4)
    ]
    assert "server-0.log:1" in loops[0].body
    # read again: nothing new
    count = Event.objects.filter(incident__slug="live").count()
    _ingest(tmp_path, team)
    assert Event.objects.filter(incident__slug="live").count() == count

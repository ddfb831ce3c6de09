"""Two servers' logs through the real ingest path and the stored analysis (timeline/correlation/
servers.py): the log each start, request and error was read from reaches the engine from
Postgres, so node-a's dropped requests convict node-a's change and node-b is its control."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import call_command

from timeline.analysis import current_analysis, load_inputs
from timeline.models import Incident

DAY = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
ARGS = "model_path='deepseek-ai/DeepSeek-V4', tp_size=8, schedule_policy='fcfs'"


def _stamp(t: dt.datetime) -> str:
    return t.strftime("[%Y-%m-%d %H:%M:%S]")


def _log(name: str, starts: list[tuple[int, int]], drop_from: int | None) -> str:
    """A server log: a start (ServerArgs, ready) at each (hour, chunked_prefill_size), and a
    request every two minutes from 07:01 to 16:00, unfinished from ``drop_from`` o'clock."""
    lines = []
    events: list[tuple[dt.datetime, str]] = []
    for hour, chunk in starts:
        t = DAY + dt.timedelta(hours=hour)
        events.append((t, f"server_args=ServerArgs({ARGS}, chunked_prefill_size={chunk})"))
        events.append((t + dt.timedelta(seconds=30), "The server is fired up and ready to roll!"))
    t = DAY + dt.timedelta(hours=7, minutes=1)
    while t < DAY + dt.timedelta(hours=16):
        rid = f"{name}-{t:%H%M}"
        events.append((t, f"Receive: obj=GenerateReqInput(rid='{rid}', text='hi', stream=True)"))
        if drop_from is None or t.hour < drop_from:
            done = t + dt.timedelta(seconds=20)
            events.append((done, f"Finish: obj=GenerateReqInput(rid='{rid}'), out={{}}"))
        t += dt.timedelta(minutes=2)
    end = DAY + dt.timedelta(hours=16, minutes=30)
    events.append((end, "Decode batch. #running-req: 0, #token: 0, token usage: 0.00, "
                   "gen throughput (token/s): 0.00, #queue-req: 0"))  # fmt: skip
    for at, text in sorted(events, key=lambda e: e[0]):
        lines.append(f"{_stamp(at)} {text}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def fleet(db, team, tmp_path) -> Incident:
    root = tmp_path / "bundle"
    (root / "logs").mkdir(parents=True)
    (root / "incident.toml").write_text('title = "Fleet"\ntimezone = "UTC"\n')
    (root / "DSV4_DEPLOY.md").write_text(
        "# DSV4 deployment\n\n## Changelog\n\n- 2026-11-20 11:30 set --chunked-prefill-size=16384\n"
    )
    (root / "logs" / "node-a.log").write_text(_log("a", [(7, 8192), (12, 16384)], drop_from=14))
    (root / "logs" / "node-b.log").write_text(_log("b", [(7, 8192), (13, 8192)], drop_from=None))
    call_command(
        "ingest", str(root), incident="fleet", team=team.name, stdout=StringIO(), stderr=StringIO()
    )
    return Incident.objects.get(slug="fleet")


def test_each_start_and_request_knows_its_log(fleet):
    inputs = load_inputs(fleet)
    names = {s.where for s in inputs.starts}
    assert names == {"logs/node-a.log", "logs/node-b.log"}
    sources = {s.where: s.source for s in inputs.starts}
    assert len(set(sources.values())) == 2 and 0 not in sources.values()
    assert set(inputs.requests.source.tolist()) == set(sources.values())
    assert {s.source for s in inputs.log_spans} == set(sources.values())


def test_the_stored_analysis_convicts_node_as_change_with_node_b_as_control(fleet):
    analysis = current_analysis(fleet)
    assert analysis is not None
    result = analysis.result
    top = result["suspects"][0]
    assert top["live"]["key"] == "chunked_prefill_size"
    assert top["live"]["after"] == "16384"
    assert top["live"]["live_where"].startswith("logs/node-a.log:")
    assert any(
        e.startswith("control logs/node-b.log never ran --chunked-prefill-size=16384")
        for e in top["live"]["evidence_for"]
    )


def test_a_rotated_log_pairs_a_request_across_its_files_through_postgres(db, team, tmp_path):
    """server.log.1 then server.log: the Finish of a request received before the cut is in the
    next file; the parser keeps it, the analysis pairs it (one server, one request)."""
    from timeline.correlation.engine import analyze

    root = tmp_path / "rotated"
    (root / "logs").mkdir(parents=True)
    (root / "incident.toml").write_text('title = "Rotated"\ntimezone = "UTC"\n')
    t0 = DAY + dt.timedelta(hours=7)
    first = [
        f"{_stamp(t0)} server_args=ServerArgs({ARGS}, chunked_prefill_size=8192)",
        f"{_stamp(t0 + dt.timedelta(seconds=30))} The server is fired up and ready to roll!",
        f"{_stamp(DAY + dt.timedelta(hours=10, minutes=59, seconds=40))} Receive: "
        "obj=GenerateReqInput(rid='across', text='hi', stream=True)",
        f"{_stamp(DAY + dt.timedelta(hours=11))} Decode batch. #running-req: 1, #token: 9, "
        "token usage: 0.00, gen throughput (token/s): 9.00, #queue-req: 0",
    ]
    second = [
        f"{_stamp(DAY + dt.timedelta(hours=11, seconds=13))} Finish: "
        "obj=GenerateReqInput(rid='across'), out={}",
        f"{_stamp(DAY + dt.timedelta(hours=12))} Decode batch. #running-req: 0, #token: 0, "
        "token usage: 0.00, gen throughput (token/s): 0.00, #queue-req: 0",
    ]
    (root / "logs" / "server.log.1").write_text("\n".join(first) + "\n")
    (root / "logs" / "server.log").write_text("\n".join(second) + "\n")
    call_command(
        "ingest", str(root), incident="rotated", team=team.name, stdout=StringIO(),
        stderr=StringIO(),
    )  # fmt: skip
    inputs = load_inputs(Incident.objects.get(slug="rotated"))
    assert [(rid, at) for _, rid, at in inputs.finishes] == [
        ("across", DAY + dt.timedelta(hours=11, seconds=13))
    ]
    result = analyze(inputs)
    assert not [s for s in result.symptoms if "across" in s.title]
    assert any("finished in its next file" in w for w in result.warnings)

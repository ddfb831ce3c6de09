"""A router log on an incident's timeline: its failures are server errors, and its span never
stands for the servers' own logging, so a request the server log leaves unfinished is not
called dropped because the router kept logging. Real Postgres, the ingest command, the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import ingest_folder
from timeline.analysis import current_analysis
from timeline.choices import FindingKind
from timeline.models import Event

SERVER = (
    "[2026-11-20 14:00:00] server_args=ServerArgs(model_path='/m', tp_size=8)\n"
    "[2026-11-20 14:00:10] Receive: obj=GenerateReqInput(rid='req-1', text='hi')\n"
    "[2026-11-20 14:00:30 TP0] Decode batch. #running-req: 1, #queue-req: 0\n"
)


def _later(minutes: int) -> str:
    return f"[2026-11-20 14:{minutes:02d}:00 TP0] Decode batch. #running-req: 1, #queue-req: 0\n"


def _dropped(incident: Any) -> list[str]:
    analysis = current_analysis(incident)
    assert analysis is not None
    return [
        f.title
        for f in analysis.findings.filter(kind=FindingKind.SYMPTOM)
        if f.data.get("kind") == "dropped_request"
    ]


def test_a_router_that_kept_logging_does_not_make_a_request_dropped(
    db: None, team: Any, tmp_path: Path
) -> None:
    bundle = tmp_path / "with-router"
    bundle.mkdir()
    (bundle / "server.log").write_text(SERVER)
    (bundle / "router.log").write_text(
        "2026-11-20 14:00:05  INFO sglang_router_rs::server: src/server.rs:830: Starting router\n"
        "2026-11-20 14:20:00 ERROR sglang_router_rs::core::worker: src/core/worker.rs:517: "
        "Failed to connect gRPC client for worker grpc://10.0.0.2:30000: transport error\n"
        "2026-11-20 14:59:00  INFO sglang_router_rs::server: src/server.rs:900: still routing\n"
    )
    incident = ingest_folder(bundle, "router", team)
    error = Event.objects.get(incident=incident, kind="log_error")
    assert error.title.startswith("router ERROR: Failed to connect gRPC client for worker")
    assert _dropped(incident) == []
    # The control: the server's own log going on past the request's timeout makes it dropped.
    control = tmp_path / "server-goes-on"
    control.mkdir()
    (control / "server.log").write_text(SERVER + _later(59))
    other = ingest_folder(control, "control", team)
    assert len(_dropped(other)) == 1

"""SGLang router logs (sgl-router, the SGLang Model Gateway): the router's span, its failures as
server errors (repeats folded), a panic as a crash. Real excerpts are in test_real_corpus."""

from __future__ import annotations

import datetime as dt

from ingest import sniff
from ingest.parsers.routerlog import parse_router_log
from ingest.parsers.types import ParseContext

UTC = dt.UTC


def _parse(text: str) -> list:
    return parse_router_log(text.encode(), ParseContext("router.log")).events


def test_a_panic_is_a_crash_and_its_message_its_body() -> None:
    events = _parse(
        "2026-11-20 14:00:00  INFO smg::server: model_gateway/src/server.rs:1165: Starting router\n"
        "thread 'actix-rt|system:0|arbiter:12' panicked at src/router.rs:463:40:\n"
        "called `Result::unwrap()` on an `Err` value: no worker\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
        "2026-11-20 14:00:05  WARN smg::core::worker: src/core/worker.rs:615: Health check failed\n"
    )
    crash, warn, span = events
    assert crash.kind == "log_error" and crash.attrs == {"symptom": "crash"}
    assert crash.at == dt.datetime(2026, 11, 20, 14, tzinfo=UTC) and crash.line == 2
    assert "no worker" in crash.body
    assert warn.title == "router WARN: Health check failed" and warn.attrs == {}
    assert span.kind == "log_span" and span.attrs["router"] is True
    assert (span.attrs["warn"], span.attrs["error"]) == (1, 0)
    assert span.ends_at == dt.datetime(2026, 11, 20, 14, 0, 5, tzinfo=UTC)


def test_repeats_fold_under_a_minute_apart_and_not_past_it() -> None:
    line = "2026-11-20 14:{:02d}:{:02d} ERROR sglang_router_rs::core::worker: src/w.rs:1: down {}\n"
    text = "".join(line.format(0, s, s) for s in range(0, 50, 10)) + line.format(3, 0, 99)
    first, later, _span = _parse(text)
    assert first.attrs["repeats"] == 4
    assert first.ends_at == dt.datetime(2026, 11, 20, 14, 0, 40, tzinfo=UTC)
    assert "4 more lines like it, numbers aside" in first.body
    assert later.at == dt.datetime(2026, 11, 20, 14, 3, tzinfo=UTC) and "repeats" not in later.attrs


def test_router_logs_are_told_from_server_logs() -> None:
    router = b"2025-10-07 23:31:33 ERROR sglang_router_rs::core::worker: src/w.rs:5: x\n"
    server = b"[2025-10-07 23:31:33 TP0] Decode batch. #running-req: 1, #queue-req: 0\n"
    other_rust = b"2025-10-07 23:31:33 ERROR my_service::db: src/db.rs:5: x\n"
    assert sniff.sniff("a.log", router).kind == "sglang_router_log"  # type: ignore[union-attr]
    assert sniff.sniff("b.log", server).kind == "sglang_log"  # type: ignore[union-attr]
    assert sniff.sniff("c.log", other_rust) is None


def test_a_record_after_a_progress_bars_redraw_is_read_from_its_time() -> None:
    """The router downloads its tokenizer at start and the bar's last redraw has no newline
    (the shape of sglang PR #9939's sample output): the record after it is read, and said."""
    result = parse_router_log(
        (
            b"2025-09-02 18:40:06  INFO sglang_router_rs::server: src/server.rs:269: Starting\n"
            b"tokenizer.json [00:00:00] [#####] 7.48 MiB/7.48 MiB 37.82 MiB/s (0s)"
            b"2025-09-02 18:40:07 ERROR sglang_router_rs::grpc::client: src/grpc/client.rs:9: "
            b"Failed to connect\n"
        ),
        ParseContext("router.log"),
    )
    error, span = result.events
    assert error.title == "router ERROR: Failed to connect" and error.line == 2
    assert span.ends_at == dt.datetime(2025, 9, 2, 18, 40, 7, tzinfo=UTC)
    assert result.warnings == [
        "router.log: 1 records had other text before their time (a progress bar's redraw, a "
        "paste's prefix); read from their time on"
    ]

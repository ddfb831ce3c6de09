"""Edges of this stop's real-evidence fixes (tests/parsers/test_real_corpus.py holds the real
files): where each new rule stops, so it takes nothing it should not."""

from __future__ import annotations

import datetime as dt

import pytest

from ingest import sniff
from ingest.parsers.goroutines import parse_goroutines
from ingest.parsers.prometheus import parse_exposition
from ingest.parsers.pyspy import parse_pyspy
from ingest.parsers.serverlog import parse_sglang_log
from ingest.parsers.types import ParseContext, ParseError
from timeline.figure_data import picked_panels

AT = dt.datetime(2026, 12, 4, 10, tzinfo=dt.UTC)


def _ctx(name: str) -> ParseContext:
    return ParseContext(name, default_time=AT)


def test_a_markdown_note_with_a_pasted_scrape_stays_markdown() -> None:
    scrape = "\n".join(
        [
            "# HELP sglang:num_running_reqs Running requests.",
            "# TYPE sglang:num_running_reqs gauge",
            *(f'sglang:num_running_reqs{{tp_rank="{i}"}} {i}' for i in range(12)),
        ]
    )
    doc = f"# Postmortem\n\nThe scrape at 10:00:\n\n```\n{scrape}\n```\n".encode()
    for name in ("postmortem.md", "notes.txt"):
        fmt = sniff.sniff(name, doc)
        assert fmt is not None and fmt.kind == "markdown_doc", (name, fmt and fmt.kind)


def test_a_traceback_interleaved_into_a_logged_pyspy_dump_stays_the_errors() -> None:
    first = (
        b"[2026-01-29 13:12:36 TP0] Scheduler hit an exception: Traceback (most recent call last):"
    )
    log = (
        first
        + b"""
  File "/sgl/scheduler.py", line 18, in run_scheduler_process
    scheduler.event_loop_normal()
[2026-01-29 13:12:37 TP1] Pyspy dump for PID 7:
Process 7: sglang::scheduler_TP1
Python v3.12.3 (/usr/bin/python3.12)

Thread 7 (idle): "MainThread"
    wait (threading.py:320)
  File "/sgl/scheduler.py", line 20, in event_loop_normal
    self.run_batch()
RuntimeError: CUDA error: an illegal memory access was encountered
[2026-01-29 13:12:38 TP2] Pyspy dump for PID 8:
Process 8: sglang::scheduler_TP2
    wait (threading.py:320)
[2026-01-29 13:12:39 TP1] done
"""
    )
    result = parse_sglang_log(log, ParseContext("x.log"))
    kinds = [str(e.kind) for e in result.events]
    assert kinds.count("stack_dump") == 1  # pid 7; pid 8's lines do not read as a dump
    error = next(e for e in result.events if str(e.kind) == "log_error")
    assert "line 20, in event_loop_normal" in error.body  # TP0's frames stayed with it
    assert error.title.startswith("Scheduler hit an exception: RuntimeError: CUDA error")
    assert any("x.log:15:" in w and "read as log lines" in w for w in result.warnings)


def test_expositions_one_after_another_say_each_warning_once_at_the_files_line() -> None:
    part = '# TYPE h counter\nh_total 1 {t} # {{a="1"}} 1\n# EOF\n'
    data = "".join(part.format(t=1700000000 + i) for i in range(5)).encode()
    result = parse_exposition(data, _ctx("h.om"))
    assert result.warnings[0].startswith("h.om: 5 OpenMetrics expositions")
    assert result.warnings[1:] == [
        "h.om:2: 1 exemplar(s) read and not kept (the samples they annotate are) "
        "(and in 4 more of the expositions)"
    ]
    # An error in a later exposition is named at the file's line.
    broken = data + b'# TYPE g gauge\ng 2 1700000001 # {a="1"} 1\n# EOF\n'
    with pytest.raises(ParseError) as caught:
        parse_exposition(broken, _ctx("h.om"))
    assert caught.value.line == 17 and "exposition 6 of 6" in caught.value.message


def test_a_colon_family_renames_only_its_own_samples() -> None:
    data = b"""# TYPE a:b gauge
a_b 1 1700000000
# TYPE a_b_sum gauge
a_b_sum 2 1700000000
# EOF
"""
    names = {b.key.name for b in parse_exposition(data, _ctx("m.om")).samples}
    assert names == {"a:b", "a_b_sum"}


def test_a_very_long_frame_line_is_refused_not_backtracked() -> None:
    line = "    " + "f (" * 20_000 + "x"
    dump = f"Process 1: python x.py\nPython v3.11.7\n\nThread 1 (idle)\n{line}\n".encode()
    with pytest.raises(ParseError) as caught:
        parse_pyspy(dump, _ctx("d.txt"))
    assert caught.value.line == 5


def test_a_pyspy_header_with_no_dump_after_it_is_refused() -> None:
    with pytest.raises(ParseError) as caught:
        parse_pyspy(b"Process 8: sglang::scheduler_TP2\n    wait (threading.py:320)\n", _ctx("d"))
    assert caught.value.line == 2 and "Python v" in caught.value.message
    failed = b"Process 9: sleep 100\n\nError: Failed to find python version from target process\n"
    with pytest.raises(ParseError) as caught:
        parse_pyspy(failed, _ctx("d"))
    assert "Failed to find python version" in caught.value.message


def test_goroutines_after_a_rule_that_were_not_listed_above_it_are_said() -> None:
    dump = b"""goroutine 1 [running]:
main.main()
\t/src/main.go:10 +0x1d

-----

goroutine 7 [chan receive]:
main.other()
\t/src/main.go:20 +0x1d
"""
    result = parse_goroutines(dump, _ctx("g.txt"))
    assert result.events[0].attrs["total"] == 1
    assert any("1 goroutine(s) after the '-----' rule" in w for w in result.warnings)


def test_a_series_asked_twice_is_one_panel() -> None:
    assert picked_panels(["x", "x", "y"], ["x", "y"]) == ["x", "y"]

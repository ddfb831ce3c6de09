"""A shipper's zoned time sets the zone of the server's naive [time] (FORMATS.md: a zone in the
text wins over the incident's). ``docker logs -t`` and ``kubectl logs --timestamps`` stamp each
line in UTC; SGLang's own ``[2026-04-05 20:02:51]`` has no zone. Read in the incident's zone
(America/Los_Angeles) a UTC server clock put every line 7-8 hours off, with no word (an end-to-end
review, stop 29). Now the two times on the same lines say which offset the server's clock ran
at, and the log is read at it, with a warning naming both zones."""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from pathlib import Path

import pytest

from ingest.parsers import logprefix
from ingest.parsers.serverlog import parse_sglang_log
from ingest.parsers.types import ParseContext
from ingest.services import orchestration
from ingest.services.orchestration import Load
from timeline.choices import RunStatus
from timeline.models import Event

REAL = Path(__file__).resolve().parent / "fixtures" / "real" / "sglang"
LA = zoneinfo.ZoneInfo("America/Los_Angeles")
# The verbatim excerpt behind `kubectl logs --timestamps` (tests/fixtures/real/README.md): its
# server clock ran in UTC (the shipper's 20:02:51.101Z beside SGLang's [2026-04-05 20:02:51]).
KUBECTL = REAL / "shipped_kubectl_timestamps.log"
FIRST_UTC = dt.datetime(2026, 4, 5, 20, 2, 51, tzinfo=dt.UTC)


def _times(data: bytes, tz: dt.tzinfo) -> tuple[list[dt.datetime], list[str]]:
    result = parse_sglang_log(data, ParseContext("node-a.log", tz=tz))
    return sorted(s.at for s in result.events), result.warnings


def _local_clock(data: bytes, hours: int) -> bytes:
    """The same lines with SGLang's own [time] moved by ``hours`` (a server clock at UTC+hours),
    the shipper's UTC time untouched."""

    def move(m: re.Match[bytes]) -> bytes:
        t = dt.datetime.strptime(m.group(1).decode() + "+0000", "%Y-%m-%d %H:%M:%S%z")
        return b"[" + (t + dt.timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S").encode()

    return re.sub(rb"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})", move, data)


def test_a_utc_server_clock_behind_a_utc_shipper_is_read_in_utc_whatever_the_incidents_zone():
    times, warnings = _times(KUBECTL.read_bytes(), LA)
    assert times[0] == FIRST_UTC  # not 2026-04-06T03:02:51Z (the bracket read in Los Angeles)
    (note,) = [w for w in warnings if "shipper" in w]
    assert note.startswith("node-a.log:1: ")
    assert "kubectl/docker timestamps" in note
    assert "at UTC" in note and "America/Los_Angeles" in note


def test_a_server_clock_in_the_incidents_zone_is_read_as_before_with_no_warning():
    # Pacific daylight time (UTC-7) on 2026-04-05: the bracket is local, the shipper's UTC.
    times, warnings = _times(_local_clock(KUBECTL.read_bytes(), -7), LA)
    assert times[0] == FIRST_UTC
    assert not [w for w in warnings if "shipper" in w]


def test_a_server_clock_in_a_third_zone_is_read_at_its_offset():
    times, warnings = _times(_local_clock(KUBECTL.read_bytes(), 5), LA)  # e.g. Asia/Karachi
    assert times[0] == FIRST_UTC
    (note,) = [w for w in warnings if "shipper" in w]
    assert "UTC+05:00" in note


def test_the_offset_allows_the_shippers_delay_and_a_half_hour_zone():
    naive = (2026, 4, 5, 20, 2, 51)  # SGLang's [2026-04-05 20:02:51]
    shipped = dt.datetime(2026, 4, 5, 14, 32, 52, 400000, tzinfo=dt.UTC)  # 1.4 s later
    assert logprefix.clock_offset([(naive, shipped)]) == dt.timedelta(hours=5, minutes=30)
    # A shipper minutes late on a tenth of the lines does not change the offset; on half, it
    # leaves none (the log stays in the incident's zone, with a warning).
    ok = [(naive, shipped)] * 9 + [(naive, shipped - dt.timedelta(minutes=7))]
    assert logprefix.clock_offset(ok) == dt.timedelta(hours=5, minutes=30)
    assert logprefix.clock_offset([(naive, shipped)] * 5 + ok[-1:] * 5) is None


def test_shipper_times_that_agree_on_no_offset_leave_the_incidents_zone_and_say_so():
    lines = KUBECTL.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    mixed = b"".join(lines[:half]) + _local_clock(b"".join(lines[half:]), 3)
    times, warnings = _times(mixed, LA)
    (note,) = [w for w in warnings if "shipper" in w]
    assert "nor any one UTC offset" in note
    assert "read in America/Los_Angeles" in note


@pytest.mark.django_db
def test_through_the_ingest_path_the_starts_are_at_the_shippers_moment(incident, tmp_path):
    assert incident.timezone == "America/Los_Angeles"
    path = tmp_path / "node-a.log"
    path.write_bytes(KUBECTL.read_bytes())
    outcome = orchestration.bundle_ingest(
        incident=incident, path=path, default_time=None, load=Load.HERE, analyze=False
    )
    (artifact,) = outcome.artifacts
    artifact.refresh_from_db()
    assert artifact.status == RunStatus.DONE, artifact.error
    assert any("shipper" in w and "at UTC" in w for w in artifact.counts["warnings"])
    first = Event.objects.filter(incident=incident).order_by("at").values_list("at", flat=True)[0]
    assert first == FIRST_UTC
    # ... and the analysis says it too (not only the file's own record)
    from timeline.analysis import load_inputs

    assert any("shipper" in w and "at UTC" in w for w in load_inputs(incident).warnings)

"""The local times of one server log, read in order: a daylight-saving change resolved from the
order of the lines, never guessed.

Pure (no Django, no I/O). SGLang writes ``[2026-11-01 01:30:00]``: a wall-clock reading without
a zone. Read in the incident's zone, such a reading names one moment, except around a change of
offset:

* clocks go back (fall): the hour before the change happens twice. A server log's time never
  goes back, so a reading that would put a line more than :data:`SLACK` before the line before
  it is the second pass (``fold=1``); otherwise the first. A log that opens inside the repeated
  hour has nothing earlier to tell: the first pass is assumed, and the warning says so;
* clocks jump forward (spring): a reading inside the skipped hour names no moment at all. It is
  read with the offset in force before the jump (as a clock nobody moved forward would show it),
  and the warning says the log's zone may not be the incident's.

What was resolved is kept (:attr:`LogClock.windows`) so a load can check it against sources
that carry epoch times (metrics): see ``ingest.services.clockcheck``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from .timestamps import wall_reading, zone_name

UTC = dt.UTC
# How far back a line may appear to go (processes of one server interleave their lines) before
# it is read as the second pass of a repeated hour.
SLACK = dt.timedelta(minutes=5)


@dataclass
class Window:
    """Lines whose reading the clock had to resolve: ``how`` is "repeated" (read as the
    ``fold`` pass of a repeated hour) or "skipped" (in a skipped hour)."""

    how: str
    fold: int
    first_line: int
    last_line: int
    start: dt.datetime
    end: dt.datetime
    shift: dt.timedelta  # the size of the offset change
    offsets: tuple[str, str]  # the offsets before and after the change, e.g. UTC-07:00
    lines: int = 0
    assumed: bool = False  # a first pass taken for want of an earlier line

    def as_attrs(self) -> dict[str, object]:
        return {
            "how": self.how,
            "fold": self.fold,
            "lines": [self.first_line, self.last_line],
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "shift_s": int(self.shift.total_seconds()),
            "assumed": self.assumed,
        }


@dataclass
class LogClock:
    """Readings of one log's clock in ``tz``, fed in line order."""

    tz: dt.tzinfo
    file: str
    last: dt.datetime | None = None
    windows: list[Window] = field(default_factory=list)
    _plain: dict[str, dt.datetime] = field(default_factory=dict)  # stamp -> its one moment

    def read(self, stamp: str, fields: Sequence[str], lineno: int) -> dt.datetime:
        """The moment of the reading ``stamp`` (its year, month, day, hour, minute and second
        in ``fields``) as aware UTC. Raises TimeError for fields that make no date."""
        at = self._plain.get(stamp)
        if at is None:
            at = self._resolve(stamp, fields, lineno)
        if self.last is None or at > self.last:
            self.last = at
        return at

    def _resolve(self, stamp: str, fields: Sequence[str], lineno: int) -> dt.datetime:
        year, month, day, hour, minute, second = (int(f) for f in fields[:6])
        reading = wall_reading(year, month, day, hour, minute, second, tz=self.tz)
        if reading.kind == "plain":
            self._plain[stamp] = reading.at
            return reading.at
        offsets = (reading.before, reading.after)
        if reading.kind == "skipped":  # the offset before the jump
            return self._note("skipped", 0, reading.at, lineno, offsets, assumed=False)
        if self.last is not None and reading.at < self.last - SLACK and reading.second:
            return self._note("repeated", 1, reading.second, lineno, offsets, assumed=False)
        assumed = self.last is None
        return self._note("repeated", 0, reading.at, lineno, offsets, assumed=assumed)

    def _note(
        self,
        how: str,
        fold: int,
        at: dt.datetime,
        lineno: int,
        offsets: tuple[dt.timedelta, dt.timedelta],
        *,
        assumed: bool,
    ) -> dt.datetime:
        before, after = offsets
        window = self.windows[-1] if self.windows else None
        if window is None or (window.how, window.fold) != (how, fold) or at < window.start - SLACK:
            window = Window(
                how=how,
                fold=fold,
                first_line=lineno,
                last_line=lineno,
                start=at,
                end=at,
                shift=abs(after - before),
                offsets=(_offset(before), _offset(after)),
                assumed=assumed,
            )
            self.windows.append(window)
        window.last_line = lineno
        window.lines += 1
        window.start, window.end = min(window.start, at), max(window.end, at)
        return at

    def warnings(self) -> list[str]:
        """What was resolved, one warning per window of lines."""
        zone = zone_name(self.tz)
        out: list[str] = []
        for w in self.windows:
            where = f"{self.file}:{w.first_line}"
            span = f"{w.lines} line(s), lines {w.first_line}-{w.last_line}"
            if w.how == "skipped":
                out.append(
                    f"{where}: {span} carry local times that do not exist in {zone} (clocks "
                    f"jump from {w.offsets[0]} to {w.offsets[1]} over them); read with the "
                    f"offset before the jump ({w.offsets[0]}): the log's clock may not be in "
                    f"{zone}"
                )
            elif w.assumed:
                out.append(
                    f"{where}: {span} fall in the hour {zone} repeats (clocks go back from "
                    f"{w.offsets[0]} to {w.offsets[1]}) and nothing earlier in the log tells "
                    f"which pass: read as the first ({w.offsets[0]})"
                )
            else:
                which = "second" if w.fold else "first"
                offset = w.offsets[w.fold]
                out.append(
                    f"{where}: {span} fall in the hour {zone} repeats (clocks go back from "
                    f"{w.offsets[0]} to {w.offsets[1]}); read from the order of the lines as "
                    f"its {which} pass ({offset})"
                )
        return out


def _offset(delta: dt.timedelta) -> str:
    minutes = int(delta.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"

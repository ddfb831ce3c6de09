"""Times, read one way by every parser.

Pure (no Django, no I/O). Every function returns aware UTC datetimes (or integer milliseconds
since the Unix epoch) and raises :class:`TimeError` for what it cannot read; a parser turns that
into a ``ParseError`` at the file and line it was reading (:func:`default_time`, which reads the
parser's context, raises the ``ParseError`` itself).

The rules, the same for every format:

* a time with a zone (``Z``, ``UTC``, ``+08:00``, ``-0800``) means that zone;
* a time without one is a wall-clock reading in the zone the parser was given (the bundle's
  ``timezone``, UTC by default). Around a daylight-saving change a wall-clock reading can name
  two moments (clocks went back: it happened twice) or none (clocks jumped over it). Both raise
  :class:`LocalTimeError`, naming the offsets: the file has to say which it means, because a
  guess would silently move evidence by an hour;
* the default time a caller gives for records that carry none follows the same rule;
* epoch numbers are read in the unit the format defines (seconds, milliseconds or
  microseconds), never guessed from their size, and must fall in the years 1 to 9999.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .types import ParseContext, ParseError

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
ONE_MS = dt.timedelta(milliseconds=1)

# The moments a datetime can hold; a number outside them is no time at all.
MIN_MS = (dt.datetime.min.replace(tzinfo=UTC) - EPOCH) // ONE_MS
MAX_MS = (dt.datetime.max.replace(tzinfo=UTC) - EPOCH) // ONE_MS

EpochUnit = Literal["s", "ms", "us"]
_PER_SECOND: dict[str, int] = {"s": 1, "ms": 1000, "us": 1_000_000}
_UNIT_WORDS: dict[str, str] = {"s": "seconds", "ms": "milliseconds", "us": "microseconds"}


class TimeError(ValueError):
    """Text or a number that is not a time; the message says what was expected."""


class LocalTimeError(TimeError):
    """A wall-clock time that names no single moment in its zone (a daylight-saving change)."""


def zone_name(tz: dt.tzinfo) -> str:
    """``America/Los_Angeles`` for a zoneinfo zone, ``UTC-08:00`` for a fixed offset."""
    key = getattr(tz, "key", None)
    return key if isinstance(key, str) else str(tz)


def in_zone(when: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """``when`` as aware UTC; a naive ``when`` is a wall-clock time in ``tz``.

    Raises :class:`LocalTimeError` when that wall-clock time happens twice in ``tz`` or not at
    all (see the module docstring).
    """
    if when.tzinfo is not None and when.utcoffset() is not None:
        try:
            return when.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+05:00 is before the year 1 in UTC
            raise TimeError(
                f"{when.isoformat()} is outside the years 1 to 9999 in UTC; expected a time "
                "in those years"
            ) from None
    naive = when.replace(tzinfo=None, fold=0)
    earlier = naive.replace(tzinfo=tz)
    later = naive.replace(tzinfo=tz, fold=1)
    before, after = earlier.utcoffset(), later.utcoffset()
    if before != after:
        shown = naive.isoformat(sep=" ")
        zone = zone_name(tz)
        if earlier.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == naive:
            raise LocalTimeError(
                f"{shown} happens twice in {zone} (clocks go back from UTC{_offset(before)} to "
                f"UTC{_offset(after)}); expected a time with a UTC offset"
            )
        raise LocalTimeError(
            f"{shown} does not exist in {zone} (clocks jump from UTC{_offset(before)} to "
            f"UTC{_offset(after)} over it); expected a time that exists there, or a UTC offset"
        )
    try:
        return earlier.astimezone(UTC)
    except OverflowError:
        raise TimeError(
            f"{naive.isoformat(sep=' ')} in {zone_name(tz)} is outside the years 1 to 9999 in "
            "UTC; expected a time in those years"
        ) from None


def default_time(ctx: ParseContext) -> dt.datetime | None:
    """The time given for records that carry none (``ctx.default_time``; naive means
    ``ctx.tz``) as aware UTC, or None when the caller gave none.

    A ParseError for the file when it names no single moment (see :func:`in_zone`).
    """
    if ctx.default_time is None:
        return None
    try:
        return in_zone(ctx.default_time, ctx.tz)
    except LocalTimeError as exc:
        raise ParseError(ctx.name, 0, f"the default time: {exc}") from None


def _offset(delta: dt.timedelta | None) -> str:
    minutes = int((delta or dt.timedelta()).total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def wall_clock(
    year: int,
    month: int,
    day: int,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    microsecond: int = 0,
    *,
    tz: dt.tzinfo,
) -> dt.datetime:
    """A reading of the clock in ``tz`` (fields as a log prints them) as aware UTC.

    Raises :class:`TimeError` for fields that make no date (``2026-11-31``) and
    :class:`LocalTimeError` as :func:`in_zone` does.
    """
    try:
        naive = dt.datetime(year, month, day, hour, minute, second, microsecond)  # noqa: DTZ001
    except ValueError as exc:
        raise TimeError(f"{exc}; expected a real date and time") from None
    return in_zone(naive, tz)


@dataclass(frozen=True)
class Reading:
    """What a wall-clock reading names in a zone, without refusing: ``kind`` is "plain" (one
    moment: ``at``), "repeated" (clocks went back: ``at`` is the first pass, ``second`` the
    second) or "skipped" (clocks jumped over it: ``at`` is read with the offset in force before
    the jump). ``before``/``after`` are the offsets around the change."""

    kind: Literal["plain", "repeated", "skipped"]
    at: dt.datetime
    second: dt.datetime | None = None
    before: dt.timedelta = dt.timedelta()
    after: dt.timedelta = dt.timedelta()


def wall_reading(
    year: int, month: int, day: int, hour: int, minute: int, second: int, *, tz: dt.tzinfo
) -> Reading:
    """A reading of the clock in ``tz`` with every moment it can name (see :class:`Reading`):
    for a caller that resolves a DST change itself (a server log, from the order of its lines).
    Raises :class:`TimeError` for fields that make no date."""
    try:
        naive = dt.datetime(year, month, day, hour, minute, second)  # noqa: DTZ001
    except ValueError as exc:
        raise TimeError(f"{exc}; expected a real date and time") from None
    earlier = naive.replace(tzinfo=tz, fold=0)
    later = naive.replace(tzinfo=tz, fold=1)
    before, after = earlier.utcoffset(), later.utcoffset()
    try:
        first = earlier.astimezone(UTC)
        if before == after or before is None or after is None:
            return Reading("plain", first)
        if first.astimezone(tz).replace(tzinfo=None) == naive:
            return Reading("repeated", first, later.astimezone(UTC), before, after)
    except OverflowError:  # as in in_zone: 9999-12-31 23:00 in UTC-5 is past the year 9999 in UTC
        raise TimeError(
            f"{naive.isoformat(sep=' ')} in {zone_name(tz)} is outside the years 1 to 9999 in "
            "UTC; expected a time in those years"
        ) from None
    return Reading("skipped", first, None, before, after)


def reading_offset(
    fields: Sequence[int], seen: dt.datetime, *, slack: dt.timedelta, step: dt.timedelta
) -> dt.timedelta | None:
    """The UTC offset of a clock whose naive reading (year, month, day, hour, minute, second)
    was seen at the aware moment ``seen``, up to ``slack`` later: their difference rounded to
    a multiple of ``step``, or None when it is not within ``slack`` of one (or makes no date)."""
    try:
        year, month, day, hour, minute, second = fields[:6]
        naive = dt.datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except (TypeError, ValueError):
        return None
    diff = naive - seen
    offset = round(diff / step) * step
    if abs(diff - offset) > slack or abs(offset) > dt.timedelta(hours=14):
        return None
    return offset


def parse_offset(text: str) -> dt.tzinfo:
    """A zone written after a time: ``Z``, ``UTC``, ``+08:00``, ``-0800`` or ``+08``."""
    text = text.strip()
    if text in ("Z", "z", "UTC"):
        return UTC
    digits = text[1:].replace(":", "")
    if text[:1] not in ("+", "-") or len(digits) not in (2, 4) or not digits.isdigit():
        raise TimeError(f"expected a UTC offset such as +08:00 or Z, got {text!r}")
    offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
    if offset >= dt.timedelta(hours=24):
        raise TimeError(f"expected a UTC offset under 24 hours, got {text!r}")
    return dt.timezone(-offset if text[0] == "-" else offset)


def parse_iso(text: str, tz: dt.tzinfo) -> dt.datetime:
    """An ISO 8601 date or date-time (``T`` or a space, ``Z`` or an offset) as aware UTC.

    A time without a zone is a wall-clock time in ``tz`` (see :func:`in_zone`).
    """
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise TimeError(
            f"expected an ISO 8601 time such as 2026-11-20T08:00:00-08:00, got {text!r}"
        ) from None
    return in_zone(when, tz)


def parse_rfc1123(text: str) -> dt.datetime:
    """An RFC 1123 / RFC 2822 date (``Fri, 04 Dec 2026 15:26:45 GMT``, what JavaScript's
    ``Date.toUTCString()`` writes) as aware UTC; one without a zone is UTC, as the RFC's
    ``-0000`` says. Raises :class:`TimeError` for any other text."""
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        raise TimeError(
            f"expected an RFC 1123 date such as {_RFC1123_EXAMPLE}, got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC)


_RFC1123_EXAMPLE = "Fri, 04 Dec 2026 15:26:45 GMT"


# A zone offset recorded malformed (git keeps ``+051800`` as it was written) is printed with
# more hour digits than a zone has: ``+518:00`` (iso-strict), ``+51800`` (iso, default layout).
_OVERLONG_OFFSET = re.compile(
    r"^(?P<clock>.*\d)\s?(?P<sign>[+-])(?P<hours>\d{3,}):?(?P<minutes>\d{2})$"
)
_CLOCK_LAYOUTS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%a %b %d %H:%M:%S %Y")


def parse_overlong_offset(text: str) -> dt.datetime:
    """A time whose offset has three or more hour digits, as aware UTC.

    The wall time was computed with the offset's last two digits as minutes and the rest as
    hours (that is what git does), so undoing the same arithmetic gives the true moment. Raises
    :class:`TimeError` for any other text.
    """
    m = _OVERLONG_OFFSET.match(text.strip())
    if m is not None:
        for layout in _CLOCK_LAYOUTS:
            try:
                clock = dt.datetime.strptime(m.group("clock").strip(), layout).replace(tzinfo=UTC)
            except ValueError:
                continue
            sign = -1 if m.group("sign") == "-" else 1
            try:
                offset = dt.timedelta(hours=int(m.group("hours")), minutes=int(m.group("minutes")))
                return clock - sign * offset
            except OverflowError:
                break
    raise TimeError(f"expected a time followed by an over-long zone offset, got {text!r}")


def from_epoch(value: int | float, unit: EpochUnit) -> dt.datetime:
    """A number of seconds, milliseconds or microseconds since 1970-01-01 UTC, as aware UTC."""
    _check_epoch(value, unit)
    per_second = _PER_SECOND[unit]
    try:
        if isinstance(value, int):  # exact: no trip through a float
            return EPOCH + dt.timedelta(microseconds=value * (1_000_000 // per_second))
        return dt.datetime.fromtimestamp(value / per_second, tz=UTC)
    except (OverflowError, OSError, ValueError):
        raise _out_of_range(value, unit) from None


def epoch_ms(value: int | float, unit: EpochUnit) -> int:
    """A number since 1970-01-01 UTC in ``unit``, as whole milliseconds (floats round to the
    nearest millisecond, integers are cut to theirs)."""
    _check_epoch(value, unit)
    if isinstance(value, float):
        scaled = value * 1000 / _PER_SECOND[unit]
        if not math.isfinite(scaled):  # 1e308 s: no time, and round() would overflow
            raise _out_of_range(value, unit)
        ms = round(scaled)
    else:
        ms = value * 1000 // _PER_SECOND[unit]
    if not MIN_MS <= ms <= MAX_MS:
        raise _out_of_range(value, unit)
    return ms


def _check_epoch(value: int | float, unit: EpochUnit) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise TimeError(f"expected a number of {_UNIT_WORDS[unit]} since 1970, got {value!r}")


def _out_of_range(value: int | float, unit: EpochUnit) -> TimeError:
    return TimeError(
        f"{value!r} {_UNIT_WORDS[unit]} since 1970 is outside the years 1 to 9999; "
        f"expected a time in {_UNIT_WORDS[unit]} since 1970"
    )


def to_epoch_ms(when: dt.datetime) -> int:
    """An aware datetime as whole milliseconds since the epoch (earlier sub-milliseconds cut)."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError("to_epoch_ms needs an aware datetime")
    return (when - EPOCH) // ONE_MS


def ms_iso(ts_ms: int) -> str:
    """Milliseconds since the epoch as ISO 8601 UTC (``...Z``), for messages."""
    try:
        return (EPOCH + ts_ms * ONE_MS).isoformat().replace("+00:00", "Z")
    except OverflowError:
        return f"{ts_ms} ms"

"""Several servers' logs in one incident: which logs are one server, which server's line the
analysis follows, and what the others show as controls.

A fleet incident brings one log per server (``node-a.log``, ``node-b.log``). Each server starts
on its own with its own configuration. Read as one line, node-b's routine restart with the old
configuration looked like a change back, node-a's symptoms landed in node-b's interval, and the
guilty change read as "no effective difference" (an end-to-end review, stop 29). So:

* logs that ran at the same time are different servers; a log that begins after another ended
  may be the same server's next file (``server.log`` then ``server.log.1``) and joins it,
  preferring a log of the same name;
* each symptom read from a log (its errors, its requests) belongs to that log's server; a
  symptom of a metric or a harness belongs to none;
* the analysis follows the server whose log shows the first symptom, on its own line of starts;
  every other server is a control: did it run the suspect's value, and did its own log show a
  symptom?

Pure: no Django, no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from timeline.correlation.types import (
    LogSpan,
    LogSymptom,
    Requests,
    Series,
    ServerStart,
    Symptom,
    strings_at,
    to_us,
)

# Two logs that overlap by less than this are one server's files, cut at a rotation.
ROTATION_OVERLAP = dt.timedelta(minutes=1)
_ROTATED = re.compile(r"(?:[.-](?:\d+|\d{4}-?\d{2}-?\d{2}(?:[T_-]?\d{2,6})?))*(?:\.gz)?$")


@dataclass(frozen=True)
class Server:
    """One server: the logs (artifact ids) read as its, and its starts in time order."""

    name: str
    sources: frozenset[int]
    starts: tuple[ServerStart, ...]


def _stem(name: str) -> str:
    """``node-a/server.log.1`` -> ``node-a/server.log``: a log's name without a rotation's
    number or date."""
    return _ROTATED.sub("", name) or name


def group(starts: Sequence[ServerStart], spans: Sequence[LogSpan]) -> list[Server]:
    """The servers of the incident's logs, in order of their first time. Every log (a source
    with starts or a span) belongs to one; starts of an unknown log (source 0) are one server.
    A start that ends only because its file ends, with a later file of the same server after
    it (a rotation), runs on until that server's next start."""
    by_source: dict[int, list[ServerStart]] = {}
    for s in starts:
        by_source.setdefault(s.source, []).append(s)
    spans_of: dict[int, list[LogSpan]] = {}
    for sp in spans:
        if sp.source:
            spans_of.setdefault(sp.source, []).append(sp)
    sources = set(by_source) | set(spans_of)
    if len(sources) <= 1:
        ordered = tuple(sorted(starts, key=lambda s: (s.at, s.line)))
        name = ordered[0].where if ordered else ""
        return [Server(name or "server log", frozenset(sources), ordered)]
    ranges: dict[int, tuple[dt.datetime, dt.datetime]] = {}
    names: dict[int, str] = {}
    for source in sources:
        logged = by_source.get(source, [])
        times = [s.at for s in logged] + [s.ends_at for s in logged if s.ends_at is not None]
        times += [t for sp in spans_of.get(source, []) for t in (sp.start, sp.end)]
        ranges[source] = (min(times), max(times))
        names[source] = logged[0].where if logged else ""
    # (sources, name stem, end of its latest log) per server
    lines: list[tuple[list[int], str, dt.datetime]] = []
    for source in sorted(sources, key=lambda src: (ranges[src][0], src)):
        begin, end = ranges[source]
        stem = _stem(names[source])
        free = [k for k, line in enumerate(lines) if line[2] - ROTATION_OVERLAP <= begin]
        same = [k for k in free if lines[k][1] == stem or not stem or not lines[k][1]]
        pick = same[0] if same else (free[0] if free else None)
        if pick is None:
            lines.append(([source], stem, end))
        else:
            members, name, last = lines[pick]
            lines[pick] = ([*members, source], name or stem, max(last, end))
    out = []
    for members, _, _ in lines:
        own: list[ServerStart] = []
        for n, src in enumerate(members):
            file_starts = sorted(by_source.get(src, []), key=lambda s: (s.at, s.line))
            if file_starts and n + 1 < len(members) and not file_starts[-1].shut_down:
                # its file ended, not the server: the next file goes on where it stopped
                file_starts[-1] = replace(file_starts[-1], ends_at=None)
            own += file_starts
        own.sort(key=lambda s: (s.at, s.line))
        shown = list(dict.fromkeys(names[src] for src in members if names[src]))
        name = (shown[0] if shown else "server log") + (
            f" (+{len(members) - 1} more file(s))" if len(members) > 1 else ""
        )
        out.append(Server(name, frozenset(members), tuple(own)))
    return out


def series_by_server(
    servers: Sequence[Server], series: Sequence[Series]
) -> tuple[list[list[Series]], list[Series]]:
    """Each server's own series (read from its logs' batch lines: their origin is one of its
    files), and the rest (Prometheus, exports: no server of their own)."""
    index = {s.where: k for k, srv in enumerate(servers) for s in srv.starts if s.where}
    own: list[list[Series]] = [[] for _ in servers]
    rest: list[Series] = []
    for s in series:
        k = index.get(s.origin) if s.origin else None
        if k is None:
            rest.append(s)
        else:
            own[k].append(s)
    return own, rest


def server_of_source(servers: Sequence[Server]) -> dict[int, int]:
    """Each known log (artifact id) -> the index of its server."""
    return {src: k for k, srv in enumerate(servers) for src in srv.sources if src}


def pair_finishes(
    requests: Requests,
    finishes: Sequence[tuple[int, str, dt.datetime]],
    server_of: dict[int, int],
) -> tuple[Requests, int]:
    """The requests with each unfinished one finished where another file of the same server
    logged its Finish (a log rotated while it ran: Receive in ``server.log.1``, Finish in
    ``server.log``); and how many were paired."""
    if not finishes or not len(requests):
        return requests, 0
    ends: dict[tuple[int, str], int] = {}
    for source, rid, at in finishes:
        k = server_of.get(source)
        if k is not None:
            us = to_us(at)
            ends[(k, rid)] = min(us, ends.get((k, rid), us))
    if not ends:
        return requests, 0
    finished_us = requests.finished_us.copy()
    open_rows = np.flatnonzero(finished_us == Requests.NOT_FINISHED)
    paired = 0
    rids = strings_at(requests.rid, open_rows)
    for row, rid in zip(open_rows.tolist(), rids, strict=True):
        k = server_of.get(int(requests.source[row]))
        end = ends.get((k, rid)) if k is not None else None
        if end is not None and end >= int(requests.received_us[row]):
            finished_us[row] = end
            paired += 1
    if not paired:
        return requests, 0
    return (
        Requests(requests.ref, requests.received_us, finished_us, requests.rid, requests.source),
        paired,
    )


def owners(
    symptoms: Sequence[Symptom],
    requests: Requests,
    errors: Sequence[LogSymptom],
    servers: Sequence[Server],
) -> list[int | None]:
    """The server (its index) each symptom was read from, by its first ref: a server error's
    log, or a dropped or stalled request's; None for a symptom of no log (a metric, a harness).
    """
    index = {src: k for k, srv in enumerate(servers) for src in srv.sources if src}
    by_name = {s.where: k for k, srv in enumerate(servers) for s in srv.starts if s.where}
    of_error = {e.ref: index.get(e.source) for e in errors}
    order = np.argsort(requests.ref, kind="stable")
    refs = requests.ref[order]
    sources = requests.source[order]
    out: list[int | None] = []
    for s in symptoms:
        if s.origin:  # a wedge in one log's batch lines
            out.append(by_name.get(s.origin))
            continue
        if not s.refs:
            out.append(None)
            continue
        ref = s.refs[0]
        if ref in of_error:
            out.append(of_error[ref])
            continue
        k = int(np.searchsorted(refs, ref))
        if k < refs.size and int(refs[k]) == ref:
            out.append(index.get(int(sources[k])))
        else:
            out.append(None)
    return out


def requests_of(requests: Requests, server: Server) -> Requests:
    """The requests read from the server's logs."""
    mask = np.isin(requests.source, np.fromiter(server.sources, dtype=np.int64))
    return requests.take(np.flatnonzero(mask))


def focus(
    symptoms: Sequence[Symptom], owner: Sequence[int | None], first_bad: dt.datetime | None
) -> int | None:
    """The server whose log shows the first symptom (at or after the operator's first bad mark,
    if any), or None when no symptom names a server."""
    for s, k in zip(symptoms, owner, strict=True):
        if first_bad is not None and s.at < first_bad:
            continue
        if k is not None:
            return k
    return None

"""One artifact parsed and loaded in one transaction: a bad file writes nothing and records
``file:line: what was expected`` on its row; a loaded one is done with its counts.
"""

from __future__ import annotations

import datetime as dt
import logging
import mmap
import time
import zoneinfo
from pathlib import Path
from typing import Any

from django.db import OperationalError, connection, transaction

from evidence.vocabulary import EventKind, Scope, Source
from ingest import checks, loaders, sniff, streaming
from ingest.clients import git as git_client
from ingest.parsers import gitcommits, lifecycle
from ingest.parsers.configfiles import diff_settings
from ingest.parsers.series import mark_origins
from ingest.parsers.types import ParseContext, ParseError, ParseResult, Setting
from ingest.services import clockcheck, storage
from ingest.services.artifacts import (
    artifact_claim,
    artifact_done,
    artifact_fail,
    artifact_progress,
    unexpected_message,
)
from timeline import runs
from timeline.choices import RunStatus
from timeline.models import Artifact, Event, Incident

log = logging.getLogger(__name__)


def _context(artifact: Artifact) -> ParseContext:
    opts = artifact.options or {}
    tz_name = opts.get("timezone") or artifact.incident.timezone or "UTC"
    default_time = opts.get("default_time")
    return ParseContext(
        name=artifact.name,
        tz=zoneinfo.ZoneInfo(tz_name),
        default_time=dt.datetime.fromisoformat(default_time) if default_time else None,
    )


def parse_artifact(artifact: Artifact) -> ParseResult:
    """Run the artifact's pure parser (or the git reader for a repository)."""
    ctx = _context(artifact)
    if artifact.kind == sniff.GIT_REPO:
        history = git_client.read_history(Path(artifact.path))
        result = gitcommits.commits_to_result(history.commits, repo=artifact.name, ctx=ctx)
        result.warnings[:0] = history.warnings
        checks.result_check(result, artifact.name)
        return result
    data = storage.stored_path(artifact).read_bytes()
    fmt = sniff.BY_KIND.get(artifact.kind)
    if fmt is None:
        # ParseError puts the file name in front itself.
        message = storage.unrecognised(artifact.name)[len(artifact.name) + 2 :]
        raise ParseError(artifact.name, 0, message)
    result = fmt.parse(data, ctx)
    mark_origins(result, ctx)
    checks.result_check(result, artifact.name, data)  # a value the database refuses: its line
    return result


def result_load(*, artifact: Artifact, result: ParseResult) -> dict[str, Any]:
    """Write a parse result's events, config changes and samples, in the caller's transaction;
    returns the counts the artifact records. Every parsed record is stored or counted in the
    warnings (loaders.load_warnings): nothing is dropped silently."""
    incident = artifact.incident
    events = loaders.load_events_counted(incident, artifact, result.events)
    loops = _crash_loops_across_files(incident, artifact, result)
    changes = loaders.load_config_changes(incident, artifact, result.config_changes)
    samples = loaders.load_samples_counted(incident, artifact, result.samples)
    # What the load left out first: the parser's own warnings can be many, and are cut.
    warnings = loaders.load_warnings(
        events=events,
        changes_given=len(result.config_changes),
        changes_added=changes,
        samples=samples,
    )
    warnings += result.warnings
    # server-log times a DST change made ambiguous, against epoch-stamped metrics
    warnings += clockcheck.check(incident, result)
    for path in sorted({e.attrs["path"] for e in result.events if e.attrs.get("state")}):
        added, notes = doc_states_chain(incident=incident, path=path)
        changes += added
        warnings += notes
    return {
        "events": len(events.ids) + loops,
        "config_changes": changes,
        "samples": samples.written,
        "series": len(result.samples),
        **({"config_unread": result.config_unread} if result.config_unread else {}),
        **loaders.warning_counts(warnings),
    }


def _crash_loops_across_files(incident: Incident, artifact: Artifact, result: ParseResult) -> int:
    """Crash loops over every start the incident has seen: a server restarted by its
    orchestrator often writes each start to a log of its own, so no one file shows the loop.
    A loop is keyed by its first start: one stored already (from one file, or from fewer of its
    starts) is the same event, updated. Returns the events added."""
    if not any(e.kind == EventKind.SERVER_START for e in result.events):
        return 0
    starts = Event.objects.filter(incident=incident, kind=EventKind.SERVER_START).values_list(
        "at", "attrs", "artifact__name"
    )
    seen = [
        lifecycle.SeenStart(
            at=at,
            where=f"{name or '?'}:{(attrs or {}).get('line', 0)}",
            down=f"{attrs['shutdown_at']}" if (attrs or {}).get("shutdown_at") else "",
            line=int((attrs or {}).get("line", 0)),
        )
        for at, attrs, name in starts
    ]
    added = []
    for loop in lifecycle.crash_loops(seen):
        # a loop already stored (from fewer of its starts) is brought up to date, not repeated
        updated = Event.objects.filter(
            incident=incident, fingerprint=loaders.fingerprint(loop.kind, loop.key)
        ).update(title=loop.title, body=loop.body, ends_at=loop.ends_at, attrs=loop.attrs)
        if not updated:
            added.append(loop)
    loaders.load_events(incident, artifact, added)
    return len(added)


def doc_states_chain(*, incident: Incident, path: str) -> tuple[int, list[str]]:
    """Revisions of a lone doc given times (``attrs.state``) are one history: each revision
    after the first asserts only what changed since the one before it in time, whatever order
    they were ingested in. The first asserts its whole configuration (the parser's changes).

    Run in the loading transaction after a revision of ``path`` is stored. Changes a revision
    no longer makes are deleted, unless an operator cited one as evidence (then it stays, and
    a warning says so). Returns the changes added and the warnings.
    """
    revisions = list(
        Event.objects.filter(
            incident=incident, kind=EventKind.DOC_REVISION, attrs__path=path, attrs__state=True
        ).order_by("at", "id")
    )
    added = 0
    notes: list[str] = []
    for previous, current in zip(revisions, revisions[1:], strict=False):
        wanted = diff_settings(
            _revision_settings(previous),
            _revision_settings(current),
            at=current.at,
            source=Source.DOC,
            ref=current.key,
        )
        keep = {
            loaders.fingerprint(EventKind.CONFIG_CHANGE, loaders.config_change_event(c).key)
            for c in wanted
        }
        stale = Event.objects.filter(
            incident=incident,
            kind=EventKind.CONFIG_CHANGE,
            config_change__source=Source.DOC,
            config_change__ref=current.key[:300],
        ).exclude(fingerprint__in=keep)
        cited = stale.filter(evidence__isnull=False).distinct()
        for event in cited:
            notes.append(
                f"{path}: the change '{event.title}' is cited as evidence, so it stays although "
                f"the revision of {event.at.isoformat()} is now read against an earlier one"
            )
        stale.exclude(pk__in=cited.values("pk")).delete()
        added += loaders.load_config_changes(incident, current.artifact, wanted)
    return added, notes


def _revision_settings(event: Event) -> list[Setting]:
    return [
        Setting(
            key=s["key"],
            value=s.get("value"),
            scope=Scope(s["scope"]),
            where=s.get("where", ""),
            condition=s.get("condition", ""),
            profile=s.get("profile", ""),
        )
        for s in event.attrs.get("settings", [])
    ]


def artifact_ingest(*, artifact_id: int) -> Artifact:
    """Parse and load one artifact in one transaction; idempotent (done rows are left alone).

    Whatever stops the load, its row ends done or failed, never running: a bad file names its
    line, any other error its kind (with the traceback in the log). Only a lost database
    connection leaves the row claimed, for the task's retry (or the reaper) to run again."""
    worker = runs.worker_id()
    if not artifact_claim(artifact_id=artifact_id, worker=worker):
        return Artifact.objects.get(pk=artifact_id)
    artifact = Artifact.objects.select_related("incident").get(pk=artifact_id)
    with runs.Heartbeat("timeline_artifact", artifact.pk, worker):
        try:
            return _ingest(artifact)
        except OperationalError:
            raise  # the database went away: nothing was written, the retry loads it again
        except Exception as exc:  # the load's transaction rolled back: say why on the row
            log.exception("loading %s (artifact %s) failed", artifact.name, artifact.pk)
            return artifact_fail(artifact=artifact, message=unexpected_message(artifact.name, exc))


def _ingest(artifact: Artifact) -> Artifact:
    started = time.monotonic()
    if artifact.kind == sniff.KIND_PROMETHEUS_TEXT and artifact.size >= streaming.STREAM_MIN_BYTES:
        streamed = _ingest_streaming(artifact, started)
        if streamed is not None:
            return streamed
    try:
        result = parse_artifact(artifact)
    except (ParseError, ValueError, RuntimeError, OSError) as exc:
        message = str(exc) if isinstance(exc, ParseError) else f"{artifact.name}: {exc}"
        return artifact_fail(artifact=artifact, message=message)
    artifact_progress(artifact_id=artifact.pk, progress=0.5)
    parse_s = time.monotonic() - started
    with transaction.atomic():
        locked = _lock_for_load(artifact)
        if locked.status == RunStatus.DONE:
            return locked
        counts = result_load(artifact=locked, result=result)
        counts["parse_seconds"] = round(parse_s, 3)
        counts["seconds"] = round(time.monotonic() - started, 3)
        artifact_done(artifact=locked, counts=counts, kind=result.kind)
    return locked


def _lock_for_load(artifact: Artifact) -> Artifact:
    """Serialise loads into one incident (series creation and the sample COPY must not race;
    a redelivered task waits here for the first delivery), then read the row as it is now.

    An advisory lock rather than a row lock, so the progress reporter's own connection can
    still write the artifact's progress while the load runs."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [7411, artifact.incident_id])
    return Artifact.objects.select_related("incident").get(pk=artifact.pk)


class _NotStreamed(Exception):
    """The file needs the whole-file path; leave the transaction without writing."""


def _ingest_streaming(artifact: Artifact, started: float) -> Artifact | None:
    """A big Prometheus text file, parsed and COPYed part by part in one transaction.
    Returns None when the file must take the whole-file path (which names any bad line)."""
    # Mapped, not read: the parser takes ~4 MiB pieces of it, and no copy of the whole file is
    # made (~1 s and 500 MiB of memory saved on a 500 MiB file).
    try:
        with open(storage.stored_path(artifact), "rb") as src:
            data = mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        return artifact_fail(artifact=artifact, message=f"{artifact.name}: {exc}")
    try:
        with data, transaction.atomic():
            locked = _lock_for_load(artifact)
            if locked.status == RunStatus.DONE:
                return locked
            loaded = streaming.stream_exposition(locked.incident, locked, data, _context(locked))
            if loaded is None:
                raise _NotStreamed
            samples, series = loaded
            warnings = loaders.load_warnings(
                events=loaders.LoadedEvents(), changes_given=0, changes_added=0, samples=samples
            )
            warnings += clockcheck.check(locked.incident, None)
            counts = {
                "events": 0,
                "config_changes": 0,
                "samples": samples.written,
                "series": series,
                **loaders.warning_counts(warnings),
                "streamed": True,
                "seconds": round(time.monotonic() - started, 3),
            }
            artifact_done(artifact=locked, counts=counts)
    except _NotStreamed:
        return None
    return locked

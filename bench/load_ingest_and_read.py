"""Issue 8: ingest and timeline reads at once, on loopback, bounded in count and time.

Concurrent uploads of different bundles (each a .zip through the real upload form, with CSRF)
while N clients read timelines (the page and its timeline.json). Prints throughput, p50/p99
latency and errors per kind of request, then checks that nothing was lost: the rows in the
database equal the sum of what the pure parsers find in each bundle.

    .venv/bin/python bench/load_ingest_and_read.py [--bundles 8] [--readers 20] [--reads 40]

It starts its own gunicorn and Celery worker on 127.0.0.1 against DATABASE_URL (a migrated
database) and REDIS_URL (a private queue), creates a throwaway team, user and incidents, and
deletes them at the end.
tests/reliability/test_load.py runs a small version of the same load (`run_load`).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script, sys.path[0] is bench/, where a module could shadow the ingest package.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

T0 = 1795218000000  # 2026-11-20T23:40:00Z


# --- the bundles ----------------------------------------------------------------------------------


def bundle_files(index: int, series: int, steps: int, runs: int) -> dict[str, bytes]:
    """One bundle: metrics with series of its own, and harness runs with cases of its own."""
    lines = []
    for s in range(series):
        lines.append(f"# TYPE load_b{index}_m{s} gauge")
    for i in range(steps):
        ts = T0 + i * 15_000
        for s in range(series):
            lines.append(f'load_b{index}_m{s}{{gpu="{s % 8}"}} {(i * 7 + s) % 97} {ts}')
    metrics = ("\n".join(lines) + "\n").encode()
    harness = "".join(
        f'{{"ts": "2026-11-20T{8 + r // 60:02d}:{r % 60:02d}:00Z", "suite": "load{index}", '
        f'"case": "case{r}", "status": "pass", "score": 0.9, "threshold": 0.8, '
        f'"run_id": "b{index}-{r}"}}\n'
        for r in range(runs)
    ).encode()
    return {f"metrics/load-{index}.prom": metrics, f"harness/load-{index}.jsonl": harness}


def zipped(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def expected_rows(bundles: list[dict[str, bytes]]) -> dict[str, int]:
    """What the pure parsers find in the bundles, summed: the rows that must arrive."""
    from ingest import sniff
    from ingest.parsers.types import ParseContext

    total = {"events": 0, "samples": 0, "series": 0}
    for files in bundles:
        for name, data in files.items():
            fmt = sniff.sniff(name, data[: sniff.HEAD_BYTES])
            assert fmt is not None, name
            result = fmt.parse(data, ParseContext(name=name))
            total["events"] += len(result.events) + len(result.config_changes)
            total["samples"] += result.sample_count
            total["series"] += len(result.samples)
    return total


# --- HTTP on loopback -----------------------------------------------------------------------------


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, seconds: float, error: str = "") -> None:
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds)
            if error:
                self.errors.setdefault(kind, []).append(error)

    def error_count(self) -> int:
        return sum(len(v) for v in self.errors.values())

    def report(self, wall: float) -> str:
        rows = [
            f"{'request':14} {'count':>6} {'per s':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}"
        ]
        for kind, values in sorted(self.latencies.items()):
            ordered = sorted(values)
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            rows.append(
                f"{kind:14} {len(values):>6} {len(values) / wall:>7.1f} "
                f"{statistics.median(ordered) * 1000:>8.1f} {p99 * 1000:>8.1f} "
                f"{len(self.errors.get(kind, [])):>6}"
            )
        return "\n".join(rows)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # _Browser follows redirects itself, with the cookies they set


class _Browser:
    """Cookies by hand (a cookie jar refuses a bare 'localhost' domain): the session, the CSRF
    token and the messages cookie a redirect sets for the page it leads to."""

    def __init__(self, session: str) -> None:
        self.cookies = {"sessionid": session}
        self.opener = urllib.request.build_opener(_NoRedirect)

    def open(self, url: str | urllib.request.Request, timeout: float) -> Any:
        request = url if isinstance(url, urllib.request.Request) else urllib.request.Request(url)
        request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        try:
            response = self.opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            if exc.code not in (301, 302, 303):
                raise
            response = exc
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        if response.status in (301, 302, 303):
            response.read()
            base = request.full_url.split("/", 3)
            location = response.headers["Location"]
            if location.startswith("/"):
                location = f"{base[0]}//{base[2]}{location}"
            return self.open(location, timeout)
        return response


class UploadRefused(Exception):
    """The upload form answered without saying the files were queued."""


def _timed(stats: Stats, kind: str, call: Callable[[], int]) -> None:
    started = time.perf_counter()
    error = ""
    try:
        status = call()
        if status >= 400:
            error = f"HTTP {status}"
    except (urllib.error.URLError, OSError, UploadRefused) as exc:
        error = f"{type(exc).__name__}: {exc}"
    stats.record(kind, time.perf_counter() - started, error)


def _get(opener: _Browser, url: str) -> int:
    try:
        with opener.open(url, timeout=120) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _upload(opener: _Browser, url: str, name: str, data: bytes) -> int:
    with opener.open(url, timeout=120) as page:
        html = page.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token, "no CSRF token on the upload page"
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
            f"{token.group(1)}\r\n--{boundary}\r\n"
            f'Content-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        url,
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "Referer": url},
    )
    try:
        with opener.open(request, timeout=300) as response:
            html = response.read().decode()
            if "queued for ingest" not in html:  # the form answered, but not with success
                found = re.findall(r"<li class=\"msg-[^\"]*\">(.*?)</li>", html, re.S)
                raise UploadRefused(f"no 'queued for ingest' message; page says {found[:3]}")
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def run_load(
    *,
    base: str,
    session: str,
    uploads: list[tuple[str, str, bytes]],
    read_slugs: list[str],
    readers: int,
    reads_per_reader: int,
    deadline_s: float,
) -> tuple[Stats, float]:
    """Uploads (slug, file name, zip bytes), one thread each, while readers read timelines.

    Bounded: each reader makes at most reads_per_reader rounds and stops at the deadline."""
    stats = Stats()
    stop_at = time.monotonic() + deadline_s

    def uploader(slug: str, name: str, data: bytes) -> None:
        opener = _Browser(session)
        url = f"{base}/incidents/{slug}/upload/"
        _timed(stats, "upload", lambda: _upload(opener, url, name, data))

    def reader(i: int) -> None:
        opener = _Browser(session)
        for r in range(reads_per_reader):
            if time.monotonic() > stop_at:
                return
            slug = read_slugs[(i + r) % len(read_slugs)]
            page = f"{base}/incidents/{slug}/"
            _timed(stats, "timeline page", lambda url=page: _get(opener, url))
            _timed(stats, "timeline.json", lambda url=page: _get(opener, url + "timeline.json"))

    threads = [threading.Thread(target=uploader, args=u) for u in uploads]
    threads += [threading.Thread(target=reader, args=(i,)) for i in range(readers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(1.0, stop_at - time.monotonic() + 60))
    return stats, time.perf_counter() - started


def wait_ingested(incident_ids: list[int], expected_artifacts: int, timeout: float) -> float:
    """Seconds until every artifact of these incidents is done or failed (or raise)."""
    from timeline.choices import RunStatus
    from timeline.models import Artifact

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        qs = Artifact.objects.filter(incident_id__in=incident_ids)
        finished = qs.filter(status__in=[RunStatus.DONE, RunStatus.FAILED]).count()
        if qs.count() >= expected_artifacts and finished == qs.count():
            return time.monotonic() - started
        time.sleep(0.2)
    raise TimeoutError(f"artifacts not ingested within {timeout:.0f}s")


def actual_rows(incident_ids: list[int]) -> dict[str, Any]:
    from timeline.choices import RunStatus
    from timeline.metrics import reader
    from timeline.models import Artifact, Event, Series

    return {
        "events": Event.objects.filter(incident_id__in=incident_ids).count(),
        "samples": reader.samples_count(
            list(Series.objects.filter(incident_id__in=incident_ids).values_list("pk", flat=True))
        ),
        "series": Series.objects.filter(incident_id__in=incident_ids).count(),
        "failed": list(
            Artifact.objects.filter(
                incident_id__in=incident_ids, status=RunStatus.FAILED
            ).values_list("name", "error")
        ),
    }


# --- the script -----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundles", type=int, default=8)
    parser.add_argument("--incidents", type=int, default=2)
    parser.add_argument("--series", type=int, default=20)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--readers", type=int, default=20)
    parser.add_argument("--reads", type=int, default=40, help="rounds per reader")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        print("set DATABASE_URL and REDIS_URL (the real services)", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "timeline.settings")
    queue = f"load-{uuid.uuid4().hex[:8]}"
    os.environ["CELERY_QUEUE"] = queue
    import django

    django.setup()
    import subprocess
    import tempfile

    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from tests.reliability.own_services import free_port, port_answers
    from timeline.models import Incident, Team
    from timeline.services import incident_create

    root = Path(__file__).resolve().parent.parent
    tag = uuid.uuid4().hex[:8]
    team = Team.objects.create(name=f"load-{tag}", slug=f"load-{tag}")
    user = get_user_model().objects.create_user(f"load-{tag}")
    team.members.add(user)
    incidents = [incident_create(team=team, title=f"load {tag} {i}") for i in range(args.incidents)]
    session = SessionStore()
    session.update(
        {
            "_auth_user_id": str(user.pk),
            "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
            "_auth_user_hash": user.get_session_auth_hash(),
        }
    )
    session.create()
    uploads_dir = tempfile.mkdtemp(prefix="load-uploads-")
    env = {**os.environ, "UPLOAD_ROOT": uploads_dir, "CELERY_QUEUE": queue}
    port = free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "timeline.wsgi", "-b", f"127.0.0.1:{port}"]
            + ["-w", "2", "--threads", "8", "--timeout", "300"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "timeline", "worker", "--pool=solo"]
            + ["-Q", f"{queue},{queue}.analysis"]  # ingest and analysis (timeline/celery.py)
            + ["--without-heartbeat", "--without-gossip", "--without-mingle"]
            + ["-n", f"load-{tag}@%h", "--loglevel=WARNING"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    try:
        deadline = time.monotonic() + 60
        while not port_answers(port):
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not start")
            time.sleep(0.1)
        bundles = [bundle_files(i, args.series, args.steps, args.runs) for i in range(args.bundles)]
        uploads = [
            (incidents[i % len(incidents)].slug, f"bundle-{i}.zip", zipped(files))
            for i, files in enumerate(bundles)
        ]
        stats, wall = run_load(
            base=f"http://127.0.0.1:{port}",
            session=session.session_key,
            uploads=uploads,
            read_slugs=[i.slug for i in incidents],
            readers=args.readers,
            reads_per_reader=args.reads,
            deadline_s=args.deadline,
        )
        drain = wait_ingested(
            [i.pk for i in incidents], sum(len(b) for b in bundles), args.deadline
        )
        expected = expected_rows(bundles)
        actual = actual_rows([i.pk for i in incidents])
        print(
            f"{args.bundles} bundles ({expected['samples']} samples, {expected['events']} "
            f"events) into {args.incidents} incidents; {args.readers} readers"
        )
        print(stats.report(wall))
        total = sum(len(v) for v in stats.latencies.values())
        print(
            f"requests: {total} in {wall:.1f}s ({total / wall:.1f}/s); queue drained "
            f"{drain:.1f}s after the last upload; "
            f"ingest {expected['samples'] / (wall + drain):,.0f} samples/s end to end"
        )
        for kind, errors in stats.errors.items():
            print(f"errors in {kind}: {errors[:5]}")
        lost = {k: (expected[k], actual[k]) for k in expected if expected[k] != actual[k]}
        print("rows: " + ("all arrived" if not lost else f"MISMATCH {lost}"))
        if actual["failed"]:
            print(f"failed artifacts: {actual['failed'][:5]}")
        return 0 if not lost and not stats.error_count() and not actual["failed"] else 1
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        from django.db import transaction

        from timeline.services import incident_delete

        for incident in Incident.objects.filter(pk__in=[i.pk for i in incidents]):
            with transaction.atomic():  # the audit trigger lets the purge through only so
                incident_delete(incident=incident)
        user.delete()
        team.delete()
        import shutil

        shutil.rmtree(uploads_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

"""A real Prometheus for tests: a TSDB backfilled from an OpenMetrics file with promtool
(``promtool tsdb create-blocks-from openmetrics FILE DIR``, as in Prometheus 2.42), served on
a free 127.0.0.1 port from a tmp folder, stopped by the fixture that started it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def openmetrics(series: Iterable[tuple[str, dict[str, str], list[tuple[float, float]]]]) -> str:
    """(name, labels, [(unix seconds, value)]) as an OpenMetrics text with one TYPE per name
    (gauge; ``_bucket``/``_count``/``_sum`` names as unknown), ending in ``# EOF``."""
    by_name: dict[str, list[str]] = {}
    for name, labels, points in series:
        body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        sel = f"{name}{{{body}}}" if body else name
        by_name.setdefault(name, []).extend(f"{sel} {v!r} {t:.3f}" for t, v in points)
    lines = []
    for name, rows in by_name.items():
        lines.append(f"# TYPE {name} gauge")
        lines.extend(rows)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfill(text: str, folder: Path) -> Path:
    """The TSDB blocks of an OpenMetrics text, under ``folder/data``."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "input.om"
    source.write_text(text)
    data = folder / "data"
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
    )
    return data


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusServer:
    """``prometheus`` over a data dir, on 127.0.0.1 only; ``stop`` ends it."""

    def __init__(self, data: Path, *, max_samples: int = 50_000_000, basic_auth: str = "") -> None:
        """``basic_auth``: ``user:bcrypt-hash`` to require (Prometheus's web config)."""
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = data.parent / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1h\n")
        self.log = data.parent / "prometheus.log"
        web = []
        if basic_auth:
            user, hashed = basic_auth.split(":", 1)
            web_config = data.parent / "web.yml"
            web_config.write_text(f"basic_auth_users:\n  {user}: '{hashed}'\n")
            web = [f"--web.config.file={web_config}"]
        self.proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=100y",  # backfilled data is old: keep it
                f"--web.listen-address=127.0.0.1:{self.port}",
                f"--query.max-samples={max_samples}",
                *web,
            ],
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited; see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:  # noqa: S310
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # up, and asking for the password
                    return
                time.sleep(0.2)
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"prometheus not ready after 60 s; see {self.log}")

    def query(self, promql: str, at: float) -> dict[str, object]:
        body = urllib.parse.urlencode({"query": promql, "time": str(at)}).encode()
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query", data=body) as r:  # noqa: S310
                return dict(json.loads(r.read()))
        except urllib.error.HTTPError as exc:  # errors come with a JSON body too
            return dict(json.loads(exc.read()))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

"""A lone deployment doc ingested with a time is a configuration state (issue 14 A): later
revisions of the same doc, and the live configuration, are diffed against it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ingest.services import bundles, loading
from timeline.analysis import load_changes
from timeline.choices import RunStatus
from timeline.correlation.config_state import diff_states, state_at
from timeline.models import ConfigChange, Evidence, Hypothesis

T1 = dt.datetime(2026, 11, 20, 15, 30, tzinfo=dt.UTC)
T2 = dt.datetime(2026, 11, 20, 21, 10, tzinfo=dt.UTC)
T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)

LAUNCH = "python3 -m sglang.launch_server --tp 8 --mem-fraction-static {mem}\n"


def _doc(folder: Path, *, ctas: str | None, mem: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exports = "export MODEL_PATH=/models/dsv4\n" + (
        f"export SGLANG_SM120_MMA_TARGET_CTAS={ctas}\n" if ctas else ""
    )
    doc = folder / "DSV4_DEPLOY.md"
    doc.write_text(f"# DSV4\n\n```bash\n{exports}{extra}{LAUNCH.format(mem=mem)}```\n")
    return doc


def _ingest(incident, path: Path, at: dt.datetime) -> None:
    outcome = bundles.path_register(incident=incident, path=path, default_time=at)
    for artifact in outcome.created:
        loaded = loading.artifact_ingest(artifact_id=artifact.pk)
        assert loaded.status == RunStatus.DONE, loaded.error


def _changes(incident) -> list[tuple[str, str | None, str | None, dt.datetime]]:
    return [
        (c.key, c.old_value, c.new_value, c.event.at)
        for c in ConfigChange.objects.filter(incident=incident, source="doc").order_by(
            "event__at", "key"
        )
    ]


EXPECTED = [
    ("--mem-fraction-static", None, "0.85", T1),
    ("--tp", None, "8", T1),
    ("MODEL_PATH", None, "/models/dsv4", T1),
    ("--mem-fraction-static", "0.85", "0.88", T2),
    ("SGLANG_SM120_MMA_TARGET_CTAS", None, "512", T2),
]


def test_a_later_revision_is_diffed_against_the_earlier_state(db, incident, tmp_path):
    _ingest(incident, _doc(tmp_path / "v1", ctas=None, mem="0.85"), T1)
    _ingest(incident, _doc(tmp_path / "v2", ctas="512", mem="0.88"), T2)
    assert _changes(incident) == EXPECTED
    changes = load_changes(incident)
    assert state_at(changes, T1)["--mem-fraction-static"] == "0.85"
    assert diff_states(changes, T1, T2) == [
        ("--mem-fraction-static", "0.85", "0.88"),
        ("SGLANG_SM120_MMA_TARGET_CTAS", None, "512"),
    ]


def test_revisions_ingested_out_of_order_give_the_same_history(db, incident, tmp_path):
    _ingest(incident, _doc(tmp_path / "v2", ctas="512", mem="0.88"), T2)
    _ingest(incident, _doc(tmp_path / "v1", ctas=None, mem="0.85"), T1)
    assert _changes(incident) == EXPECTED
    # Re-ingesting either adds nothing.
    _ingest(incident, _doc(tmp_path / "v1", ctas=None, mem="0.85"), T1)
    assert _changes(incident) == EXPECTED


def test_an_earlier_revision_arriving_late_keeps_a_cited_change_and_says_so(
    db, incident, user, tmp_path
):
    _ingest(incident, _doc(tmp_path / "v2", ctas="512", mem="0.88"), T2)
    cited = ConfigChange.objects.get(incident=incident, key="MODEL_PATH")
    hypothesis = Hypothesis.objects.create(incident=incident, title="model path", author=user)
    Evidence.objects.create(
        hypothesis=hypothesis, event=cited.event, stance="supports", author=user
    )
    outcome = bundles.path_register(
        incident=incident, path=_doc(tmp_path / "v0", ctas=None, mem="0.88"), default_time=T0
    )
    loaded = loading.artifact_ingest(artifact_id=outcome.created[0].pk)
    assert ConfigChange.objects.filter(pk=cited.pk).exists()
    assert any("cited as evidence" in w for w in loaded.counts["warnings"])


def test_a_revision_changing_one_launch_of_several_changes_that_launch_only(db, incident, tmp_path):
    def doc(folder: Path, decode_tp: int) -> Path:
        folder.mkdir(parents=True)
        path = folder / "PD.md"
        path.write_text(
            "# PD\n\n```bash\n"
            "python3 -m sglang.launch_server --disaggregation-mode prefill --tp 8\n"
            f"python3 -m sglang.launch_server --disaggregation-mode decode --tp {decode_tp}\n"
            "```\n"
        )
        return path

    _ingest(incident, doc(tmp_path / "a", 8), T1)
    _ingest(incident, doc(tmp_path / "b", 16), T2)
    later = ConfigChange.objects.get(incident=incident, event__at=T2)
    assert (later.key, later.old_value, later.new_value, later.condition) == (
        "--tp",
        "8",
        "16",
        "launch decode",
    )

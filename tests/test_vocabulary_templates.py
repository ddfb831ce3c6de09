"""Templates and scripts take kinds, lanes and statuses from the vocabulary (a context
processor), not from strings spelled again; the pages that compare against them still do."""

from __future__ import annotations

import re

from django.urls import reverse

from tests.conftest import ROOT
from timeline.choices import RunStatus
from timeline.context_processors import VOCABULARY
from timeline.models import Artifact

VALUES = {value for members in VOCABULARY.values() for value in members.values()}
# A quoted word on either side of a comparison: {% if x == "suspect" %}, s === "notes", case "f":
_COMPARED = re.compile(
    r"""(?:(?:==|!=|===|!==)\s*["']([a-z_]+)["'])|(?:["']([a-z_]+)["']\s*(?:==|!=|===|!==))"""
    r"""|(?:\bcase\s+["']([a-z_]+)["'])"""
)


def test_no_template_or_script_compares_against_a_spelled_vocabulary_value():
    files = sorted((ROOT / "templates").rglob("*.html")) + sorted(
        (ROOT / "static" / "app").glob("*.js")
    )
    assert len(files) > 10
    spelled = [
        f"{path.relative_to(ROOT)}:{n}: {word!r}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for match in _COMPARED.finditer(line)
        for word in match.groups()
        if word in VALUES
    ]
    assert spelled == []


def test_the_board_numbers_the_suspect_it_offers(client, user, loaded):
    client.force_login(user)
    html = client.get(reverse("hypothesis_board", args=[loaded.slug])).content.decode()
    assert "Suspect #1</span>" in html
    assert "Ruled out #" not in html


def test_a_running_file_shows_its_progress_and_a_finished_one_does_not(client, user, incident):
    client.force_login(user)
    Artifact.objects.create(
        incident=incident, name="a.prom", sha256="a" * 64, status=RunStatus.RUNNING, progress=0.4
    )
    Artifact.objects.create(incident=incident, name="b.prom", sha256="b" * 64, status="done")
    html = client.get(reverse("artifact_status", args=[incident.slug])).content.decode()
    assert html.count('<progress max="1" value="0.4">') == 1
    assert html.count("<progress") == 1

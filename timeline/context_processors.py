"""The vocabulary in every template rendered with a request, so a template compares against
``EventKind.STACK_DUMP`` or ``FindingKind.SUSPECT`` instead of spelling "stack_dump".

Each enum goes in as a plain ``{MEMBER: value}`` dict: Django's template engine calls callables
it meets on the way, and an enum class is one.
"""

from __future__ import annotations

from enum import Enum

from django.http import HttpRequest

from evidence.vocabulary import EventKind, HarnessStatus, Lane, SymptomKind
from timeline.choices import FindingKind, HypothesisStatus, IncidentStatus, RunStatus, Stance


def _members(enum: type[Enum]) -> dict[str, str]:
    return {member.name: str(member.value) for member in enum}


VOCABULARY: dict[str, dict[str, str]] = {
    enum.__name__: _members(enum)
    for enum in (
        EventKind,
        Lane,
        HarnessStatus,
        SymptomKind,
        FindingKind,
        RunStatus,
        HypothesisStatus,
        IncidentStatus,
        Stance,
    )
}


def vocabulary(request: HttpRequest) -> dict[str, dict[str, str]]:
    """``EventKind``, ``Lane``, ``FindingKind``, ``RunStatus``... by member name."""
    return VOCABULARY

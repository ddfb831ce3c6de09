"""Writes of the core app, one module per seam: incidents (with their marks, analysis requests
and teams), hypotheses and their evidence, notes, and the audit log every write adds to.

Callers import from here (``from timeline.services import note_add``, ``services.note_add``);
the modules behind it are free to move.
"""

from timeline.services.audit import audit, team_audit
from timeline.services.common import MAX_TEXT, MAX_TITLE, ServiceError
from timeline.services.hypotheses import (
    evidence_add,
    evidence_remove,
    finding_hypothesis_title,
    hypothesis_create,
    hypothesis_delete,
    hypothesis_from_finding,
    hypothesis_set_status,
    hypothesis_update,
)
from timeline.services.incidents import (
    INCIDENT_FIELDS,
    MARKS,
    analysis_request,
    incident_create,
    incident_delete,
    incident_get_or_create,
    incident_set_mark,
    incident_update,
    team_get_or_create,
)
from timeline.services.notes import note_add, note_delete, note_update

__all__ = [
    "INCIDENT_FIELDS",
    "MARKS",
    "MAX_TEXT",
    "MAX_TITLE",
    "ServiceError",
    "analysis_request",
    "audit",
    "team_audit",
    "evidence_add",
    "evidence_remove",
    "finding_hypothesis_title",
    "hypothesis_create",
    "hypothesis_delete",
    "hypothesis_from_finding",
    "hypothesis_set_status",
    "hypothesis_update",
    "incident_create",
    "incident_delete",
    "incident_get_or_create",
    "incident_set_mark",
    "incident_update",
    "note_add",
    "note_delete",
    "note_update",
    "team_get_or_create",
]

"""URLs of hypotheses, evidence, notes, marks, audit log and postmortem export (per incident)."""

from django.urls import path

from timeline.views import collab

urlpatterns = [
    path("hypotheses/", collab.hypothesis_board, name="hypothesis_board"),
    path("hypotheses/panel/", collab.hypothesis_panel, name="hypothesis_panel"),
    path("hypotheses/<int:hypothesis_id>/", collab.hypothesis_edit, name="hypothesis_edit"),
    path(
        "hypotheses/<int:hypothesis_id>/status/",
        collab.hypothesis_status,
        name="hypothesis_status",
    ),
    path(
        "hypotheses/<int:hypothesis_id>/delete/",
        collab.hypothesis_delete,
        name="hypothesis_delete",
    ),
    path(
        "hypotheses/<int:hypothesis_id>/evidence/",
        collab.evidence_add,
        name="hypothesis_evidence_add",
    ),
    path("evidence/", collab.evidence_add, name="evidence_add"),
    path("evidence/<int:evidence_id>/delete/", collab.evidence_remove, name="evidence_remove"),
    path("findings/<int:finding_id>/accept/", collab.finding_accept, name="finding_accept"),
    path("notes/", collab.note_add, name="note_add"),
    path("notes/<int:note_id>/", collab.note_detail, name="note_detail"),
    path("notes/<int:note_id>/delete/", collab.note_delete, name="note_delete"),
    path("marks/", collab.marks, name="incident_marks"),
    path("edit/", collab.incident_edit, name="incident_edit"),
    path("audit/", collab.audit_log, name="audit_log"),
    path("postmortem.<str:fmt>", collab.postmortem_export, name="postmortem_export"),
]

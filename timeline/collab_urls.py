"""URLs of hypotheses, evidence, notes, marks, audit log and postmortem export (per incident)."""

from django.urls import path

from timeline.views import audit, hypotheses, incident_fields, notes, postmortem

urlpatterns = [
    path("hypotheses/", hypotheses.hypothesis_board, name="hypothesis_board"),
    path("hypotheses/panel/", hypotheses.hypothesis_panel, name="hypothesis_panel"),
    path("hypotheses/<int:hypothesis_id>/", hypotheses.hypothesis_edit, name="hypothesis_edit"),
    path(
        "hypotheses/<int:hypothesis_id>/status/",
        hypotheses.hypothesis_status,
        name="hypothesis_status",
    ),
    path(
        "hypotheses/<int:hypothesis_id>/delete/",
        hypotheses.hypothesis_delete,
        name="hypothesis_delete",
    ),
    path(
        "hypotheses/<int:hypothesis_id>/evidence/",
        hypotheses.evidence_add,
        name="hypothesis_evidence_add",
    ),
    path("evidence/", hypotheses.evidence_add, name="evidence_add"),
    path("evidence/<int:evidence_id>/delete/", hypotheses.evidence_remove, name="evidence_remove"),
    path("findings/<int:finding_id>/accept/", hypotheses.finding_accept, name="finding_accept"),
    path("notes/", notes.note_add, name="note_add"),
    path("notes/<int:note_id>/", notes.note_detail, name="note_detail"),
    path("notes/<int:note_id>/delete/", notes.note_delete, name="note_delete"),
    path("marks/", incident_fields.marks, name="incident_marks"),
    path("edit/", incident_fields.incident_edit, name="incident_edit"),
    path("audit/", audit.audit_log, name="audit_log"),
    path("postmortem/", postmortem.postmortem_page, name="postmortem_page"),
    path("postmortem.<str:fmt>", postmortem.postmortem_export, name="postmortem_export"),
]

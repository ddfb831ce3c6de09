"""URLs of hypotheses, evidence, notes, marks, audit log and postmortem export (per incident)."""

urlpatterns: list = []  # type: ignore[type-arg]

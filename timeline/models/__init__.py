"""The data model: incidents and everything ingested into them, analyses, and the team's notes.

Every datetime is aware UTC. Natural keys are unique constraints (artifact sha256, event
fingerprint, series identity), so re-ingesting the same bytes adds nothing.
"""

from timeline.models.analysis import Analysis, Finding
from timeline.models.collab import AuditEntry, Evidence, Hypothesis, HypothesisStatusChange, Note
from timeline.models.core import ApiToken, Artifact, Incident, IncidentChange, Team, TeamInvite
from timeline.models.evidence import ConfigChange, Event
from timeline.models.metrics import (
    DataSource,
    MetricsPull,
    RemoteSeries,
    SampleChunk,
    SampleRollup,
    Series,
)

__all__ = [
    "Analysis",
    "ApiToken",
    "Artifact",
    "AuditEntry",
    "ConfigChange",
    "DataSource",
    "Event",
    "Evidence",
    "Finding",
    "Hypothesis",
    "HypothesisStatusChange",
    "Incident",
    "IncidentChange",
    "MetricsPull",
    "Note",
    "RemoteSeries",
    "SampleChunk",
    "SampleRollup",
    "Series",
    "Team",
    "TeamInvite",
]

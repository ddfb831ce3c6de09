"""The app's forms: incidents, hypotheses, evidence, notes and marks.

Times typed by people are UTC unless they say otherwise (the pages say so next to the field).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms

from timeline import access
from timeline.choices import HypothesisStatus, IncidentStatus, Stance
from timeline.models import Team
from timeline.services import MAX_TEXT, MAX_TITLE


def parse_utc(raw: str) -> dt.datetime:
    """ISO 8601 or a datetime-local value ("Z", a space and a trailing " UTC" allowed, as the
    page shows "2026-11-20 21:10:00 UTC"); no zone means UTC. Raises ValueError for anything
    else."""
    text = raw.strip()
    if text.upper().endswith("UTC"):
        text = text[:-3].strip()
    parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


class UTCDateTimeField(forms.CharField):
    """ISO 8601 or a datetime-local value; a time without a zone is read as UTC."""

    def to_python(self, value: Any) -> dt.datetime | None:  # type: ignore[override]
        raw = (super().to_python(value) or "").strip()
        if not raw:
            return None
        try:
            return parse_utc(raw)
        except ValueError:
            raise forms.ValidationError(
                f"{raw[:40]!r} is not a time; use e.g. 2026-11-20T23:39:58 (UTC)."
            ) from None


class IncidentForm(forms.Form):
    title = forms.CharField(max_length=200)
    team = forms.ModelChoiceField(queryset=Team.objects.none())
    timezone = forms.CharField(max_length=64, initial="UTC", required=False)

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        team_field = self.fields["team"]
        assert isinstance(team_field, forms.ModelChoiceField)
        team_field.queryset = access.teams_for(user)


class HypothesisForm(forms.Form):
    title = forms.CharField(max_length=MAX_TITLE)
    body = forms.CharField(required=False, max_length=MAX_TEXT, widget=forms.Textarea)


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=HypothesisStatus.choices)
    note = forms.CharField(required=False, max_length=MAX_TEXT)


class EvidenceForm(forms.Form):
    stance = forms.ChoiceField(choices=Stance.choices)
    note = forms.CharField(required=False, max_length=MAX_TEXT)
    event = forms.IntegerField(required=False, min_value=1)
    finding = forms.IntegerField(required=False, min_value=1)
    hypothesis = forms.IntegerField(required=False, min_value=1)


class NoteForm(forms.Form):
    at = UTCDateTimeField()
    body = forms.CharField(max_length=MAX_TEXT, widget=forms.Textarea)


class MarkForm(forms.Form):
    action = forms.ChoiceField(
        choices=[
            ("set_last_good", "mark as last known good"),
            ("set_first_bad", "mark as first bad"),
            ("clear_last_good", "clear the last known good mark"),
            ("clear_first_bad", "clear the first bad mark"),
        ]
    )
    at = UTCDateTimeField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if str(data.get("action", "")).startswith("set_") and not data.get("at"):
            raise forms.ValidationError("Give the time of the mark.")
        return data


class IncidentEditForm(forms.Form):
    title = forms.CharField(max_length=200)
    status = forms.ChoiceField(choices=IncidentStatus.choices)
    summary = forms.CharField(required=False, widget=forms.Textarea, max_length=MAX_TEXT)
    resolved_at = UTCDateTimeField(required=False)
    action_items = forms.CharField(required=False, widget=forms.Textarea, max_length=MAX_TEXT)

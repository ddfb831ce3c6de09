"""Forms of the ingest pages."""

from __future__ import annotations

from typing import Any

from django import forms

from timeline.models import DataSource, Incident


class _TeamSourceForm(forms.Form):
    """A form whose first field is one of the incident's team's data sources."""

    source = forms.ModelChoiceField(queryset=DataSource.objects.none(), empty_label=None)

    def __init__(self, *args: Any, incident: Incident, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["source"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = DataSource.objects.filter(team_id=incident.team_id)


class PullForm(_TeamSourceForm):
    """Pull metrics for the incident from one of its team's data sources."""

    queries = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "one selector per line"}),
        help_text="Empty: the SGLang and DCGM series.",
    )
    start = forms.DateTimeField(required=False, help_text="Empty: the incident's window.")
    end = forms.DateTimeField(required=False)

    def query_list(self) -> list[str]:
        return [q.strip() for q in self.cleaned_data["queries"].splitlines() if q.strip()]


class RemoteSeriesForm(_TeamSourceForm):
    """Draw a series straight from one of the team's data sources (not copied)."""

    query = forms.CharField(
        max_length=2000,  # the service also bounds its UTF-8 bytes (ingest/services/remote.py)
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "a selector or PromQL"}),
        help_text='e.g. max by (instance) (DCGM_FI_DEV_GPU_UTIL{cluster="prod"})',
    )
    name = forms.CharField(
        required=False,
        max_length=300,
        help_text="The metric it stands for (default: the selector's): puts it on that "
        "metric's panel, and the analysis reads it when it is one it uses.",
    )
    title = forms.CharField(
        required=False, max_length=200, help_text="A panel of its own (empty: its metric's panel)."
    )

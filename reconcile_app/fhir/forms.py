"""Forms of the clinical-stream pages (GET parameters too)."""
from django import forms


class PatientFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=100, label="Name contains")


class LiveForm(forms.Form):
    """The live poller's one parameter: whether the polling page shows the record itself."""

    record = forms.BooleanField(required=False)

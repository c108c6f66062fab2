"""Forms for core pages."""
from django import forms


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False, max_length=80)
    outcome = forms.ChoiceField(required=False, choices=[("", "Any"), ("ok", "ok"), ("denied", "denied"), ("error", "error")])
    patient = forms.IntegerField(required=False, min_value=1)

"""Forms for core pages."""
from django import forms

from .timezones import zone_get, zone_names


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False, max_length=80)
    outcome = forms.ChoiceField(required=False, choices=[("", "Any"), ("ok", "ok"), ("denied", "denied"), ("error", "error")])
    patient = forms.IntegerField(required=False, min_value=1)


class TimezoneDetectForm(forms.Form):
    """What the browser reports (Intl.DateTimeFormat().resolvedOptions().timeZone)."""

    tz = forms.CharField(max_length=64)

    def clean_tz(self) -> str:
        name = self.cleaned_data["tz"].strip()
        if zone_get(name) is None:
            raise forms.ValidationError("Not a known time zone.")
        return name


class TimezonePreferenceForm(forms.Form):
    time_zone = forms.ChoiceField(required=False, label="Time zone",
                                  help_text="Times and SLA due times show in this zone, with the zone named.")

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["time_zone"].choices = [("", "Automatic (this browser's zone)"), *((z, z.replace("_", " ")) for z in zone_names())]

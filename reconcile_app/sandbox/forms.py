"""Forms for the sandbox EHR: FHIR search parameters, OAuth requests, the EHR launch options."""
from __future__ import annotations

from django import forms

from .fhirdata import reference_patient_id
from .models import SimulatedError

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


class FhirSearchForm(forms.Form):
    """The search parameters the sandbox understands; others are ignored (FHIR lenient handling)."""

    patient = forms.CharField(required=False, max_length=200)
    subject = forms.CharField(required=False, max_length=200)
    _id = forms.CharField(required=False, max_length=64)
    _count = forms.IntegerField(required=False, min_value=0, max_value=MAX_PAGE_SIZE)
    _offset = forms.IntegerField(required=False, min_value=0)

    def clean(self) -> dict:
        data = super().clean()
        patient = data.get("patient") or ""
        subject = data.get("subject") or ""
        if subject and not reference_patient_id(subject):
            self.add_error("subject", "only subject=Patient/<id> is supported")
        data["patient_id"] = (reference_patient_id(patient) or patient) if patient else (reference_patient_id(subject) or None)
        data["count"] = DEFAULT_PAGE_SIZE if data.get("_count") is None else data["_count"]
        data["offset"] = data.get("_offset") or 0
        return data


class AuthorizeForm(forms.Form):
    response_type = forms.CharField(required=False, max_length=40)
    client_id = forms.CharField(required=False, max_length=200)
    redirect_uri = forms.CharField(required=False, max_length=500)
    scope = forms.CharField(required=False, max_length=800)
    state = forms.CharField(required=False, max_length=500)
    aud = forms.CharField(required=False, max_length=500)
    launch = forms.CharField(required=False, max_length=200)
    code_challenge = forms.CharField(required=False, max_length=128)
    code_challenge_method = forms.CharField(required=False, max_length=10)
    nonce = forms.CharField(required=False, max_length=200)
    # Set by the standalone patient picker.
    patient = forms.CharField(required=False, max_length=64)
    practitioner = forms.CharField(required=False, max_length=64)


class TokenForm(forms.Form):
    grant_type = forms.CharField(max_length=60)
    code = forms.CharField(required=False, max_length=200)
    redirect_uri = forms.CharField(required=False, max_length=500)
    client_id = forms.CharField(required=False, max_length=200)
    code_verifier = forms.CharField(required=False, max_length=200)
    refresh_token = forms.CharField(required=False, max_length=200)
    scope = forms.CharField(required=False, max_length=800)
    client_assertion_type = forms.CharField(required=False, max_length=200)
    client_assertion = forms.CharField(required=False, max_length=8000)


class EhrLaunchForm(forms.Form):
    practitioner = forms.CharField(required=False, max_length=64)
    simulate_error = forms.ChoiceField(required=False, choices=SimulatedError.choices)
    # The EHR already shows the patient, so it may tell the app not to (need_patient_banner=false).
    hide_banner = forms.BooleanField(required=False)

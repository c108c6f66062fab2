"""Forms of the ledger: a correction of a memory, a review decision, a platform's correction."""
from __future__ import annotations

from django import forms

from reconcile_app.narrative.types import Assertion, Subject

SUBJECTS = [(Subject.PATIENT.value, "The patient"), (Subject.OTHER.value, "Someone else")]
ASSERTIONS = [(a.value, a.value.capitalize()) for a in Assertion]


class CorrectionForm(forms.Form):
    content = forms.CharField(max_length=1000, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text="What is right, in plain words (it is read like a statement of the patient).")
    subject = forms.ChoiceField(choices=SUBJECTS)
    assertion = forms.ChoiceField(choices=ASSERTIONS)
    note = forms.CharField(max_length=200, required=False, help_text="Why (for the reviewer).")


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(choices=[("accept", "Accept"), ("reject", "Reject")])
    note = forms.CharField(max_length=200, required=False)


class PlatformCorrectionForm(forms.Form):
    """A patient's correction sent by a coaching platform: which statement (the request id of our
    clarification request, or the session and turn), and what is right."""

    patient_ref = forms.CharField(max_length=200)
    request_id = forms.RegexField(regex=r"^finding-\d{1,12}$", required=False)
    session_id = forms.CharField(max_length=100, required=False)
    turn_id = forms.CharField(max_length=100, required=False)
    content = forms.CharField(max_length=1000)
    subject = forms.ChoiceField(choices=SUBJECTS, required=False)
    assertion = forms.ChoiceField(choices=ASSERTIONS, required=False)

    def clean(self) -> dict:
        data = super().clean()
        if not data.get("request_id") and not (data.get("session_id") and data.get("turn_id")):
            raise forms.ValidationError("name the statement: request_id, or session_id and turn_id")
        return data

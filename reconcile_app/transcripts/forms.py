"""Forms of the transcript pages: upload, filters, mapping a held upload, withdrawal."""
from __future__ import annotations

from django import forms

from reconcile_app.fhir.models import Patient

from .models import Upload


class PatientChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Patient) -> str:
        return f"{obj.display_name or 'Unnamed patient'} ({obj.reference})"


class UploadForm(forms.Form):
    file = forms.FileField(help_text="coaching-transcript/v1 JSON, CSV or plain text; UTF-8.")

    def __init__(self, *args: object, choose_patient: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if choose_patient:  # admins; left empty, the patient named by the file is matched (or held)
            self.fields["patient"] = PatientChoiceField(
                queryset=Patient.objects.order_by("display_name", "id"), required=False, empty_label="Match from the file"
            )


class UploadFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Upload.Status.choices])


class MapForm(forms.Form):
    patient = PatientChoiceField(queryset=Patient.objects.order_by("display_name", "id"))


class WithdrawForm(forms.Form):
    confirm = forms.BooleanField(label="The patient withdrew consent for this transcript")
    reason = forms.CharField(required=False, max_length=100, help_text="Optional, short; no clinical details.")

"""Template helpers for patient pages: age from a birth date, and the safety context on every patient page."""
from __future__ import annotations

from datetime import date
from typing import Any

from django import template

from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.selectors import patient_clinical_state

register = template.Library()


@register.filter
def age_years(birth: date | None) -> int | str:
    if not birth:
        return ""
    today = date.today()
    return today.year - birth.year - ((today.month, today.day) < (birth.month, birth.day))


@register.inclusion_tag("fhir/_safety_context.html", takes_context=True)
def patient_safety_context(context: template.Context) -> dict[str, Any]:
    """The mandatory safety context of the page's `patient` (base.html renders it on every page that has
    one), from the latest snapshot, polling for the record while a pull is on its way."""
    patient = context.get("patient")
    if not isinstance(patient, Patient) or patient.pk is None:
        return {"patient": None}
    state = context.get("clinical_state")
    if state is None or context.get("patient") is not patient:
        state = patient_clinical_state(patient=patient)
    return {"patient": patient, "state": state, "safety": state.safety, "live_record": bool(context.get("live_record"))}

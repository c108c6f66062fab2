"""Clinical-stream pages: the patient list (nurses, admins) and the status-aware patient record."""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import deny, role_required
from reconcile_app.core.exceptions import ReconcileError
from reconcile_app.core.roles import Role
from reconcile_app.smart.exceptions import LaunchExpired
from reconcile_app.smart.models import SmartLaunch
from reconcile_app.smart.selectors import launch_for_session

from .clinical import State
from .forms import LiveForm, PatientFilterForm
from .models import Patient
from .selectors import patient_clinical_state, patient_get_for_user, patient_list as patient_list_query
from .services import launch_patient_open, record_pull_request

# Where a clinician lands after a launch.
LANDING_URL_NAME = "triage:patient_findings"


def _session_launch(request: HttpRequest, patient: Patient) -> SmartLaunch | None:
    """The browser session's SMART launch, only when it is for this very patient."""
    launch = launch_for_session(launch_id=request.session.get("smart_launch_id"), user=request.user)
    if launch is None or launch.registration_id != patient.registration_id or launch.patient_fhir_id != patient.fhir_id:
        return None
    return launch


def _observation_rows(record: Any) -> list[dict[str, Any]]:
    rows = []
    for code, entries in record.observation_history().items():
        latest = entries[0]
        rows.append({"code": code, "latest": latest, "history": entries, "tag": latest.primary_coding.tag if latest.primary_coding else ""})
    return sorted(rows, key=lambda r: r["latest"].display.lower())


def patient_page_context(request: HttpRequest, patient: Patient) -> dict[str, Any]:
    """Everything the record page shows (the banner and safety context come with base.html)."""
    launch = _session_launch(request, patient)
    state = patient_clinical_state(patient=patient)
    record = state.record
    context: dict[str, Any] = {
        "patient": patient,
        "launch": launch,
        "launch_expired": launch is not None and launch.status == SmartLaunch.Status.EXPIRED,
        "snapshot": state.snapshot,
        "pull": state.pull,
        "pull_stalled": state.stalled,
        "pull_pending": state.pending,
        "last_ok": state.last_ok,
        "record": record,
        "clinical_state": state,
        # The safety context's live poller also brings back this page's record when the pull lands.
        "live_record": True,
    }
    if record is not None:
        meds = ("MedicationRequest", "MedicationStatement")
        context.update({
            "medications_active": sorted(record.active_medications, key=lambda e: e.display.lower()),
            "medications_historical": record.of_type(*meds, states=[State.HISTORICAL]),
            "conditions_active": record.of_type("Condition", states=[State.ACTIVE]),
            "conditions_historical": record.of_type("Condition", states=[State.HISTORICAL]),
            "allergies_inactive": record.of_type("AllergyIntolerance", states=[State.INACTIVE]),
            "procedures": record.of_type("Procedure", states=[State.ACTIVE]),
            "immunizations": record.of_type("Immunization", states=[State.ACTIVE]),
            "care_plans": record.of_type("CarePlan", states=[State.ACTIVE, State.HISTORICAL]),
            "observations": _observation_rows(record),
            "excluded_count": sum(1 for e in record.entries if e.state == State.ERROR),
        })
    return context


@require_GET
@role_required(Role.NURSE, Role.ADMIN)
def patient_list(request: HttpRequest) -> HttpResponse:
    form = PatientFilterForm(request.GET or None)
    patients = patient_list_query()
    if form.is_valid() and form.cleaned_data.get("q"):
        patients = patients.filter(display_name__icontains=form.cleaned_data["q"])
    audit_record(request=request, action="patient.list", details={"filtered": bool(form.is_bound)})
    return render(request, "fhir/patient_list.html", {"form": form, "patients": patients[:500]})


@require_GET
def patient_detail(request: HttpRequest, pk: int) -> HttpResponse:
    patient = patient_get_for_user(request=request, patient_pk=pk)
    context = patient_page_context(request, patient)
    snapshot = context["snapshot"]
    audit_record(request=request, action="record.view", patient_pk=patient.pk, object_type="RecordSnapshot",
                 object_id=snapshot.pk if snapshot else "", details={"version": snapshot.version if snapshot else 0})
    return render(request, "fhir/patient_detail.html", context)


@require_GET
def patient_live(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled by any patient page while a pull is on its way: 204 until it finishes, then the banner, the
    safety context (and, from the record page, the record) together, as out-of-band swaps."""
    patient = patient_get_for_user(request=request, patient_pk=pk)
    form = LiveForm(request.GET)
    with_record = form.is_valid() and form.cleaned_data["record"]
    state = patient_clinical_state(patient=patient)
    if state.pending:
        return HttpResponse(status=204)
    context: dict[str, Any] = patient_page_context(request, patient) if with_record else {"patient": patient}
    context.update({"state": state, "safety": state.safety, "live_record": with_record, "oob": True})
    audit_record(request=request, action="record.view", patient_pk=patient.pk, object_type="RecordSnapshot",
                 object_id=state.snapshot.pk if state.snapshot else "",
                 details={"version": state.snapshot.version if state.snapshot else 0, "live": True})
    return render(request, "fhir/_patient_live.html", context)


def _clinician_landing(patient: Patient) -> str:
    """The patient's open findings, where the clinician's work is (the record is one tab away). The
    findings page belongs to triage, downstream of fhir, so it is found by URL name, not imported."""
    try:
        return reverse(LANDING_URL_NAME)
    except NoReverseMatch:
        return reverse("fhir:patient_detail", args=[patient.pk])


@require_GET
def launch_open(request: HttpRequest) -> HttpResponse:
    """Landing after a SMART launch: read the launch's Patient, keep it, queue the pull, show the record."""
    from reconcile_app.smart.views import launch_error_page

    launch = launch_for_session(launch_id=request.session.get("smart_launch_id"), user=request.user)
    if launch is None or launch.status != SmartLaunch.Status.ACTIVE:
        raise deny(request, reason="no_active_launch")
    try:
        patient = launch_patient_open(launch=launch)
    except ReconcileError as exc:
        code = "expired" if isinstance(exc, LaunchExpired) else ("ehr_unavailable" if exc.retryable else "ehr_protocol")
        audit_record(request=request, action="record.open", outcome="error", object_type="SmartLaunch",
                     object_id=launch.pk, details={"code": code})
        return launch_error_page(request, code=code, status=503 if exc.retryable else 400)
    request.session["smart_patient_pk"] = patient.pk
    audit_record(request=request, action="record.open", patient_pk=patient.pk, object_type="SmartLaunch", object_id=launch.pk)
    return redirect(_clinician_landing(patient))


@require_POST
def patient_refresh(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue a fresh pull: with the clinician's launch when there is one, else Backend Services."""
    from reconcile_app.smart.views import launch_error_page

    patient = patient_get_for_user(request=request, patient_pk=pk)
    launch = _session_launch(request, patient)
    if launch is not None and launch.status != SmartLaunch.Status.ACTIVE:
        audit_record(request=request, action="record.pull.request", outcome="denied", patient_pk=patient.pk,
                     details={"reason": "launch_expired"})
        return launch_error_page(request, code="expired", status=401)
    record_pull_request(patient=patient, launch=launch)
    audit_record(request=request, action="record.pull.request", patient_pk=patient.pk,
                 details={"via": "launch" if launch is not None else "backend"})
    messages.info(request, "A fresh copy of the record was requested.")
    return redirect("fhir:patient_detail", pk=patient.pk)

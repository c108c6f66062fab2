"""Clinical-stream pages: the patient list (nurses, admins) and the status-aware patient record."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import deny, role_required
from reconcile_app.core.exceptions import ReconcileError
from reconcile_app.core.roles import Role
from reconcile_app.smart.exceptions import LaunchExpired
from reconcile_app.smart.models import SmartLaunch
from reconcile_app.smart.selectors import launch_for_session

from .clinical import State, safety_context
from .forms import PatientFilterForm
from .models import Patient, RecordPull
from .selectors import clinical_record_for, patient_get_for_user, patient_list as patient_list_query
from .selectors import pull_last_ok, pull_latest, snapshot_latest
from .services import launch_patient_open
from .tasks import record_pull_task


def _session_launch(request: HttpRequest, patient: Patient) -> SmartLaunch | None:
    """The browser session's SMART launch, only when it is for this very patient."""
    launch = launch_for_session(launch_id=request.session.get("smart_launch_id"), user=request.user)
    if launch is None or launch.registration_id != patient.registration_id or launch.patient_fhir_id != patient.fhir_id:
        return None
    return launch


def _pull_stalled(pull: RecordPull | None) -> bool:
    """A pull still RUNNING past the task time limit died with its worker: stop waiting for it."""
    if pull is None or pull.status != RecordPull.Status.RUNNING:
        return False
    limit = timedelta(seconds=int(getattr(settings, "CELERY_TASK_TIME_LIMIT", 900)))
    return pull.started_at < timezone.now() - limit


def _observation_rows(record: Any) -> list[dict[str, Any]]:
    rows = []
    for code, entries in record.observation_history().items():
        latest = entries[0]
        rows.append({"code": code, "latest": latest, "history": entries, "tag": latest.primary_coding.tag if latest.primary_coding else ""})
    return sorted(rows, key=lambda r: r["latest"].display.lower())


def patient_page_context(request: HttpRequest, patient: Patient) -> dict[str, Any]:
    """Everything a patient page shows; other apps may reuse it for their patient pages."""
    launch = _session_launch(request, patient)
    snapshot = snapshot_latest(patient=patient)
    record = clinical_record_for(snapshot=snapshot) if snapshot else None
    pull = pull_latest(patient=patient)
    context: dict[str, Any] = {
        "patient": patient,
        "launch": launch,
        "launch_expired": launch is not None and launch.status == SmartLaunch.Status.EXPIRED,
        "show_banner": launch.need_patient_banner if launch is not None else True,
        "snapshot": snapshot,
        "pull": pull,
        "pull_stalled": _pull_stalled(pull),
        "last_ok": pull_last_ok(patient=patient),
        "safety": safety_context(record) if record else None,
        "record": record,
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
    template = "fhir/patient_detail.html#pull-status" if request.htmx else "fhir/patient_detail.html"
    return render(request, template, context)


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
    return redirect("fhir:patient_detail", pk=patient.pk)


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
    record_pull_task.delay_on_commit(patient.pk, launch.pk if launch is not None else None)
    audit_record(request=request, action="record.pull.request", patient_pk=patient.pk,
                 details={"via": "launch" if launch is not None else "backend"})
    messages.info(request, "A fresh copy of the record was requested.")
    return redirect("fhir:patient_detail", pk=patient.pk)

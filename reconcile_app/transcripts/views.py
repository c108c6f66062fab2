"""Transcript pages: upload, uploads and their progress, the holding list, sessions, withdrawal, retry."""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import deny, role_required
from reconcile_app.core.exceptions import PermanentError
from reconcile_app.core.roles import Role, user_has_role
from reconcile_app.fhir.models import Patient

from . import services
from .access import launched_patient_pk, session_get_for_user, upload_get_for_user
from .forms import MapForm, UploadFilterForm, UploadForm, WithdrawForm
from .models import Upload
from .selectors import (
    patient_blocking_session,
    patient_progress,
    patient_progress_list,
    session_list_for_upload,
    upload_list as upload_list_query,
    upload_progress,
)

POLL_TEMPLATE = "transcripts/upload_detail.html#progress"


def _launched_patient(request: HttpRequest) -> Patient | None:
    pk = launched_patient_pk(request)
    return Patient.objects.filter(pk=pk).first() if pk else None


@require_GET
@role_required(Role.ADMIN, Role.CLINICIAN)
def upload_list(request: HttpRequest) -> HttpResponse:
    form = UploadFilterForm(request.GET or None)
    status = form.cleaned_data.get("status", "") if form.is_valid() else ""
    is_admin = user_has_role(request.user, Role.ADMIN)
    patient = None if is_admin else _launched_patient(request)
    if not is_admin and patient is None:
        # The menu links here: explain how to get a patient instead of answering 403.
        return render(request, "transcripts/upload_list.html", {"form": form, "no_launch": True})
    uploads = upload_list_query(patient=patient, status=status)[:200]
    held = upload_list_query(status=Upload.Status.HELD)[:50] if is_admin else []
    progress = patient_progress_list() if is_admin else [(patient, patient_progress(patient=patient))]
    audit_record(request=request, action="transcript.list", patient_pk=patient.pk if patient else None, details={"status": status})
    return render(request, "transcripts/upload_list.html", {
        "form": form, "uploads": uploads, "held": held, "progress": progress, "is_admin": is_admin, "patient": patient,
    })


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN, Role.CLINICIAN)
def upload_create(request: HttpRequest) -> HttpResponse:
    is_admin = user_has_role(request.user, Role.ADMIN)
    patient = None if is_admin else _launched_patient(request)
    if not is_admin and patient is None:
        raise deny(request, reason="no_launched_patient")
    form = UploadForm(request.POST or None, request.FILES or None, choose_patient=is_admin)
    if request.method == "POST" and form.is_valid():
        incoming = form.cleaned_data["file"]
        limit = services.max_upload_bytes()
        # Read one byte past the limit at most: an oversized file is recorded, never loaded whole.
        raw = incoming.read(limit + 1) if incoming.size <= limit else b""
        upload = services.upload_receive(
            raw=raw, filename=incoming.name, source=Upload.Source.UI, user=request.user,
            patient=patient or form.cleaned_data.get("patient"), total_size=incoming.size,
        )
        upload = services.upload_import(upload_id=upload.pk, actor=request.user)
        _flash_outcome(request, upload)
        return redirect("transcripts:upload_detail", pk=upload.pk)
    return render(request, "transcripts/upload_form.html", {"form": form, "patient": patient, "limit": services.max_upload_bytes()})


def _flash_outcome(request: HttpRequest, upload: Upload) -> None:
    if upload.status == Upload.Status.IMPORTED:
        summary = upload.summary
        messages.success(request, f"Imported: {len(summary['added'])} new session(s), {len(summary['unchanged'])} already known, "
                                  f"{len(summary['conflicts'])} conflict(s).")
    elif upload.status == Upload.Status.HELD:
        messages.warning(request, "Stored and held: the patient named by the file is not known yet. An admin can map it.")
    elif upload.status == Upload.Status.FAILED:
        messages.error(request, f"Stored, but the import failed: {upload.rejection}")
    else:
        messages.error(request, "Stored but not imported: the file has errors (listed below).")


def _detail_context(upload: Upload) -> dict[str, Any]:
    progress = upload_progress(upload=upload)
    return {
        "upload": upload,
        "sessions": session_list_for_upload(upload=upload),
        "progress": progress,
        "polling": not progress.finished,
        "blocking": patient_blocking_session(patient=upload.patient) if upload.patient_id else None,
    }


@require_GET
def upload_detail(request: HttpRequest, pk: int) -> HttpResponse:
    upload = upload_get_for_user(request=request, pk=pk)
    audit_record(request=request, action="transcript.view", patient_pk=upload.patient_id, object_type="upload", object_id=upload.pk)
    context = _detail_context(upload)
    context.update({"map_form": MapForm() if upload.status == Upload.Status.HELD else None, "withdraw_form": WithdrawForm(),
                    "is_admin": user_has_role(request.user, Role.ADMIN)})
    return render(request, "transcripts/upload_detail.html", context)


@require_GET
def upload_progress_partial(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled by htmx every few seconds; answers 286 (stop polling) once nothing is pending.
    Statuses only, no transcript text, so polls are not audited one by one."""
    upload = upload_get_for_user(request=request, pk=pk)
    context = _detail_context(upload)
    if context["polling"]:
        return render(request, POLL_TEMPLATE, context)
    return HttpResponseStopPolling(render_to_string(POLL_TEMPLATE, context, request=request))


@require_POST
@role_required(Role.ADMIN)
def upload_map(request: HttpRequest, pk: int) -> HttpResponse:
    upload = upload_get_for_user(request=request, pk=pk)
    form = MapForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a patient to map the upload to.")
        return redirect("transcripts:upload_detail", pk=upload.pk)
    try:
        upload = services.upload_map(upload_id=upload.pk, patient=form.cleaned_data["patient"], user=request.user)
    except PermanentError as exc:
        messages.error(request, exc.message)
    else:
        _flash_outcome(request, upload)
    return redirect("transcripts:upload_detail", pk=upload.pk)


@require_POST
@role_required(Role.ADMIN, Role.CLINICIAN)
def upload_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    upload = upload_get_for_user(request=request, pk=pk)
    form = WithdrawForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Tick the confirmation to withdraw the transcript.")
        return redirect("transcripts:upload_detail", pk=upload.pk)
    services.upload_withdraw(upload_id=upload.pk, user=request.user, reason=form.cleaned_data["reason"])
    messages.success(request, "Consent withdrawn: the transcript's memories and findings were removed; the file is sealed.")
    return redirect("transcripts:upload_detail", pk=upload.pk)


@require_GET
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_get_for_user(request=request, pk=pk)
    audit_record(request=request, action="transcript.view", patient_pk=session.patient_id, object_type="session", object_id=session.pk)
    return render(request, "transcripts/session_detail.html", {
        "session": session, "turns": session.turns.order_by("seq"), "withdraw_form": WithdrawForm(),
        "can_act": user_has_role(request.user, Role.ADMIN, Role.CLINICIAN),
    })


@require_POST
@role_required(Role.ADMIN, Role.CLINICIAN)
def session_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_get_for_user(request=request, pk=pk)
    form = WithdrawForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Tick the confirmation to withdraw the session.")
    else:
        services.session_withdraw(session_id=session.pk, user=request.user, reason=form.cleaned_data["reason"])
        messages.success(request, "Consent withdrawn for the session: its memories and findings were removed.")
    return redirect("transcripts:session_detail", pk=session.pk)


@require_POST
@role_required(Role.ADMIN, Role.CLINICIAN)
def session_retry(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_get_for_user(request=request, pk=pk)
    try:
        services.session_retry(session_id=session.pk, user=request.user)
    except PermanentError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "The session is queued again.")
    return redirect("transcripts:upload_detail", pk=session.upload_id)


@require_GET
def patient_progress_partial(request: HttpRequest, pk: int) -> HttpResponse:
    """Per-patient progress for any page showing the patient (polls until nothing is pending)."""
    from reconcile_app.fhir.selectors import patient_get_for_user

    patient = patient_get_for_user(request=request, patient_pk=pk)
    progress = patient_progress(patient=patient)
    context = {"patient": patient, "progress": progress, "blocking": patient_blocking_session(patient=patient)}
    html = render_to_string("transcripts/_patient_progress.html", context, request=request)
    return HttpResponseStopPolling(html) if progress.finished else HttpResponse(html)

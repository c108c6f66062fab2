"""Ledger pages: a finding's provenance (and its FHIR export), corrections of memories and their review,
another try at a failed retraction. Each view: authorize, validate, one service call, render."""
from __future__ import annotations

import json

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import role_required
from reconcile_app.core.exceptions import ValidationFailed
from reconcile_app.core.roles import Role, user_has_role
from reconcile_app.fhir.selectors import patient_get_for_user
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.selectors import memory_corrections_pending
from reconcile_app.narrative.services import memory_correction_propose
from reconcile_app.triage.models import Retraction
from reconcile_app.triage.services import retraction_retry as retraction_retry_service

from . import services
from .forms import CorrectionForm, ReviewForm
from .provenance import provenance_bundle, provenance_validate
from .selectors import finding_get_for_user, finding_provenance_facts, memory_get_for_user

ALL = (Role.NURSE, Role.ADMIN, Role.CLINICIAN)
CORRECTORS = (Role.NURSE, Role.CLINICIAN)  # the care team says what the patient meant; admins run the system


@require_GET
@role_required(*ALL)
def finding_provenance(request: HttpRequest, pk: int) -> HttpResponse:
    finding = finding_get_for_user(request=request, pk=pk)
    facts = finding_provenance_facts(finding=finding)
    audit_record(request=request, action="ledger.provenance_view", patient_pk=finding.patient_id, object_type="finding", object_id=pk)
    return render(request, "ledger/finding_provenance.html", {
        "finding": finding, "facts": facts, "patient": finding.patient, "memory": finding.memory,
        "can_correct": user_has_role(request.user, *CORRECTORS) and finding.memory.status in ("current", "outdated")
        and finding.memory.origin == Memory.Origin.EXTRACTED,
        "retraction": Retraction.objects.filter(writeback__item_id=facts.extra["item_id"]).first() if facts.extra["item_id"] else None,
    })


@require_GET
@role_required(*ALL)
def finding_provenance_export(request: HttpRequest, pk: int) -> HttpResponse:
    """FHIR Provenance and AuditEvent resources in a collection Bundle, validated before it is served."""
    finding = finding_get_for_user(request=request, pk=pk)
    bundle = provenance_bundle(finding_provenance_facts(finding=finding), generated=timezone.now())
    provenance_validate(bundle)
    audit_record(request=request, action="ledger.provenance_export", patient_pk=finding.patient_id, object_type="finding",
                 object_id=pk, details={"resources": len(bundle["entry"])})
    response = HttpResponse(json.dumps(bundle, indent=2), content_type="application/fhir+json")
    response["Content-Disposition"] = f'attachment; filename="finding-{pk}-provenance.json"'
    return response


@require_http_methods(["GET", "POST"])
@role_required(*CORRECTORS)
def memory_correct(request: HttpRequest, pk: int) -> HttpResponse:
    memory = memory_get_for_user(request=request, pk=pk)
    form = CorrectionForm(request.POST or None, initial={"content": memory.content, "subject": memory.subject,
                                                         "assertion": memory.assertion})
    if request.method == "POST" and form.is_valid():
        try:
            correction = memory_correction_propose(memory=memory, content=form.cleaned_data["content"], subject=form.cleaned_data["subject"],
                                                   assertion=form.cleaned_data["assertion"], actor=request.user, note=form.cleaned_data["note"])
        except ValidationFailed as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Correction #{correction.pk} recorded: it waits for someone else to review it.")
            return redirect(reverse("ledger:correction_list") + f"?patient={memory.patient_id}")
    audit_record(request=request, action="ledger.memory_view", patient_pk=memory.patient_id, object_type="memory", object_id=pk)
    return render(request, "ledger/memory_correct.html", {"memory": memory, "form": form, "patient": memory.patient},
                  status=400 if request.method == "POST" else 200)


@require_GET
@role_required(*ALL)
def correction_list(request: HttpRequest) -> HttpResponse:
    """Corrections waiting for review: every patient's for nurses and admins, the launched patient's for a clinician."""
    patient = None
    wanted = request.GET.get("patient", "")
    if wanted.isdigit() or not user_has_role(request.user, Role.NURSE, Role.ADMIN):
        patient = patient_get_for_user(request=request, patient_pk=int(wanted) if wanted.isdigit() else
                                       int(request.session.get("smart_patient_pk") or 0))
    pending = list(memory_corrections_pending(patient=patient)[:200])
    audit_record(request=request, action="ledger.corrections_view", patient_pk=patient.pk if patient else None,
                 details={"pending": len(pending)})
    return render(request, "ledger/correction_list.html", {"pending": pending, "patient": patient, "form": ReviewForm()})


@require_POST
@role_required(*CORRECTORS)
def correction_review(request: HttpRequest, pk: int) -> HttpResponse:
    correction = memory_get_for_user(request=request, pk=pk)
    if correction.corrects_id is None:
        raise Http404("Not a correction")
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose accept or reject.")
    else:
        try:
            if form.cleaned_data["decision"] == "accept":
                services.correction_accept(correction=correction, user=request.user, note=form.cleaned_data["note"])
                messages.success(request, f"Correction #{correction.pk} accepted: its finding replaces the original's.")
            else:
                services.correction_reject(correction=correction, user=request.user, note=form.cleaned_data["note"])
                messages.success(request, f"Correction #{correction.pk} rejected: the original stands.")
        except ValidationFailed as exc:
            messages.error(request, exc.message)
    return redirect(reverse("ledger:correction_list") + f"?patient={correction.patient_id}")


@require_POST
@role_required(Role.NURSE, Role.ADMIN)
def retraction_retry(request: HttpRequest, pk: int) -> HttpResponse:
    retraction = Retraction.objects.select_related("writeback__item").filter(pk=pk).first()
    if retraction is None:
        raise Http404("No such retraction")
    patient_get_for_user(request=request, patient_pk=retraction.writeback.item.patient_id)
    retraction = retraction_retry_service(retraction=retraction, user=request.user)
    messages.info(request, f"Retraction: {retraction.get_status_display().lower()}.")
    return redirect("ledger:finding_provenance", pk=retraction.writeback.item.finding_id)

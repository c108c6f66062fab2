"""Triage pages: the nurses' queue, the side-by-side finding, the clinician's view, rules and the dashboard."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.cache import cache_available
from reconcile_app.core.decorators import deny, role_required
from reconcile_app.core.exceptions import ValidationFailed
from reconcile_app.core.http import AppHttpRequest
from reconcile_app.core.roles import Role, user_has_role
from reconcile_app.core.views import bad_request

from . import selectors, services
from reconcile_app.fhir.selectors import patient_get_for_user

from .access import launched_patient_pk, triage_item_get_for_user, writeback_get_for_user
from .summaries import complete_sentences
from .charts import ratio_bars, stacked_bars
from .forms import (
    STATUS_CHOICES,
    AssignForm,
    BulkForm,
    DecisionForm,
    DismissForm,
    NoteForm,
    PatientSearchForm,
    QueueFilterForm,
    RoutingRuleForm,
)
from .models import OPEN_STATUSES, RoutingRule, TriageAlert, TriageItem
from .presenters import action_view, alert_email_text, filter_selects, queue_rows, select_html, writeback_view

STAFF = (Role.NURSE, Role.ADMIN)
ALL = (Role.NURSE, Role.ADMIN, Role.CLINICIAN)


def _template_or(name: str, fallback: str) -> str:
    """Prefer the fhir app's shared partials when they exist."""
    try:
        get_template(name)
        return name
    except TemplateDoesNotExist:
        return fallback


# --- queue ----------------------------------------------------------------------------------


@require_GET
@role_required(*STAFF)
def queue(request: AppHttpRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid() and "after" in form.errors:
        # A cursor is never typed: a malformed one is a bad link, not a filter to ignore.
        return bad_request(request)
    filters = form.cleaned_data if form.is_valid() else {"status": "open", "sort": "urgency"}
    page = selectors.triage_queue_page(filters=filters, user=request.user)
    # The counts come from the shared cache; while it is down they are hidden rather than computed
    # for every request (the rows are always live).
    counts = selectors.triage_queue_counts(filters=filters, user=request.user) if cache_available() else None
    audit_record(request=request, action="triage.queue_view", details={"rows": len(page.items), "filtered": bool(request.GET)})
    alerts = [(a, alert_email_text(status=a.email_status, recipients=a.email_recipients, note=a.email_note)) for a in selectors.alerts_open()]
    # One delivery note for the list when every alert shares it (e.g. no address to email to).
    notes = {email for _, email in alerts}
    alerts_note = notes.pop() if len(notes) == 1 and alerts and alerts[0][0].email_status != "sent" else ""
    alerts_note = (alerts_note[:1].upper() + alerts_note[1:] + ".") if alerts_note else ""
    context = {
        "form": form, "filters": filters, "page": page, "counts": counts, "rows": queue_rows(page.items, now=timezone.now()),
        "next_query": _query_with(request, after=page.next_cursor) if page.next_cursor else "",
        "first_query": _query_with(request, after=None) if filters.get("after") else "",
        "alerts": alerts, "alerts_note": alerts_note,
        "selects": filter_selects(form, filters),
        "patient_form": PatientSearchForm(), "chosen_patients": selectors.patients_by_ids(ids=filters.get("patient") or []),
        "bulk_selects": {
            "assignee": select_html(name="assignee", selected="", choices=[("", "---------"), *selectors.nurse_choices()]),
            "reason": select_html(name="reason", selected="", choices=BulkForm.base_fields["reason"].choices),
        },
        "status_counts": [(value, label, counts["status"].get(value) if counts else None) for value, label in STATUS_CHOICES],
    }
    template = "triage/queue.html#queue-rows" if request.htmx and not request.htmx.boosted else "triage/queue.html"
    return render(request, template, context)


@require_POST
@role_required(*STAFF)
def queue_patient(request: AppHttpRequest) -> HttpResponse:
    """Filter the queue by a patient's name, MRN or birth date. Posted, so the words stay out of
    URLs and logs; the queue URL carries the matching patients' ids."""
    back = _back_to_queue(request)
    form = PatientSearchForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Type at least two characters of a name, an MRN or a birth date.")
        return redirect(back)
    patients = selectors.patient_search(q=form.cleaned_data["q"])
    audit_record(request=request, action="triage.patient_search", details={"matches": len(patients)})
    if not patients:
        messages.warning(request, "No patient matches that name, MRN or birth date.")
        return redirect(back)
    params = QueryDict(back.partition("?")[2], mutable=True)
    for key in ("patient", "after"):
        params.pop(key, None)
    params.setlist("patient", [str(p.pk) for p in patients])
    return redirect(f"{reverse('triage:queue')}?{params.urlencode()}")


def _query_with(request: AppHttpRequest, **changes: Any) -> str:
    params = request.GET.copy()
    for key, value in changes.items():
        params.pop(key, None)
        if value:
            params[key] = value
    return params.urlencode()


@require_POST
@role_required(*STAFF)
def bulk(request: AppHttpRequest) -> HttpResponse:
    form = BulkForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Bulk action refused: " + "; ".join(e for errs in form.errors.values() for e in errs))
        return redirect(_back_to_queue(request))
    items = list(selectors.triage_items_for_ids(ids=form.cleaned_data["ids"]))
    data = form.cleaned_data
    if data["op"] == "assign":
        done, refused = services.triage_items_bulk_assign(items=items, user=request.user, assignee=data["assignee"])
    else:
        done, refused = services.triage_items_bulk_dismiss(items=items, user=request.user, reason=data["reason"], text=data.get("text", ""))
    messages.success(request, f"{done} finding(s) updated" + (f"; {refused} had changed meanwhile and were left alone." if refused else "."))
    return redirect(_back_to_queue(request))


def _back_to_queue(request: AppHttpRequest) -> str:
    back = request.POST.get("back", "")
    # Only our own queue URL with a query string: never an open redirect.
    return back if back.startswith(reverse("triage:queue")) and "//" not in back else reverse("triage:queue")


# --- finding detail and workflow ------------------------------------------------------------


@require_GET
@role_required(*ALL)
def finding_detail(request: AppHttpRequest, pk: int) -> HttpResponse:
    item = triage_item_get_for_user(request=request, finding_pk=pk)
    detail = selectors.finding_detail(item=item, finding_pk=pk)
    audit_record(request=request, action="triage.finding_view", patient_pk=item.patient_id, object_type="finding", object_id=pk)
    staff = user_has_role(request.user, *STAFF)
    context = {
        "d": detail, "item": item, "staff": staff,
        "action": action_view(action=item.action, status=item.action_status, error=item.action_error) if item.action else None,
        "writeback": writeback_view(item=item, writeback=detail.writeback, registration=item.patient.registration),
        "explanation": complete_sentences(detail.finding.explanation),
        "dismiss_form": DismissForm(), "note_form": NoteForm(), "decision_form": DecisionForm(),
        "assign_form": AssignForm() if staff else None,
        "safety": detail.safety, "patient": item.patient,
        "banner_template": _template_or("fhir/_patient_banner.html", ""),
        "safety_template": _template_or("fhir/_safety_context.html", "triage/_safety_context.html"),
        "back_url": reverse("triage:queue") if staff else reverse("triage:patient_findings"),
    }
    return render(request, "triage/finding_detail.html", context)


def _do_claim(request: AppHttpRequest, item: TriageItem) -> str:
    services.triage_item_claim(item=item, user=request.user)
    return "Claimed: the finding is yours to review."


def _do_confirm(request: AppHttpRequest, item: TriageItem) -> str:
    form = DecisionForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    item = services.triage_item_confirm(item=item, user=request.user, note=note)
    state = writeback_view(item=item, writeback=selectors.writeback_for(item=item), registration=item.patient.registration)
    if state is None:
        return "Confirmed."
    if state["label"] == "Not configured":
        return f"Confirmed. Not written to the EHR: write-back is not configured ({state['detail']})."
    return "Confirmed. Writing it to the EHR."


def _do_dismiss(request: AppHttpRequest, item: TriageItem) -> str:
    form = DismissForm(request.POST)
    if not form.is_valid():
        raise ValidationFailed("Dismissing needs a reason" + (": say why when the reason is 'other'." if form.errors.get("text") else "."))
    services.triage_item_dismiss(item=item, user=request.user, reason=form.cleaned_data["reason"], text=form.cleaned_data["text"])
    return "Dismissed."


def _do_resolve(request: AppHttpRequest, item: TriageItem) -> str:
    form = DecisionForm(request.POST)
    services.triage_item_resolve(item=item, user=request.user, note=form.cleaned_data["note"] if form.is_valid() else "")
    return "Resolved."


def _do_escalate(request: AppHttpRequest, item: TriageItem) -> str:
    form = DecisionForm(request.POST)
    services.triage_item_escalate(item=item, user=request.user, note=form.cleaned_data["note"] if form.is_valid() else "")
    return "Escalated to the care team."


def _do_assign(request: AppHttpRequest, item: TriageItem) -> str:
    form = AssignForm(request.POST)
    if not form.is_valid():
        raise ValidationFailed("Choose who to assign to.")
    services.triage_item_assign(item=item, user=request.user, assignee=form.cleaned_data["assignee"])
    return f"Assigned to {form.cleaned_data['assignee'].username}."


def _do_note(request: AppHttpRequest, item: TriageItem) -> str:
    form = NoteForm(request.POST)
    if not form.is_valid():
        raise ValidationFailed("The note is empty or too long.")
    services.triage_note_add(item=item, user=request.user, text=form.cleaned_data["text"])
    return "Note added."


def _do_writeback_retry(request: AppHttpRequest, item: TriageItem) -> str:
    wb = writeback_get_for_user(request=request, finding_pk=item.finding_id)
    services.writeback_retry(writeback=wb, user=request.user)
    return "Write-back queued again."


# step -> (handler, roles allowed). Clinicians confirm, resolve and annotate their launched patient.
STEPS: dict[str, tuple[Callable[[AppHttpRequest, TriageItem], str], tuple[Role, ...]]] = {
    "claim": (_do_claim, STAFF),
    "confirm": (_do_confirm, ALL),
    "dismiss": (_do_dismiss, STAFF),
    "resolve": (_do_resolve, ALL),
    "escalate": (_do_escalate, STAFF),
    "assign": (_do_assign, STAFF),
    "note": (_do_note, ALL),
    "writeback-retry": (_do_writeback_retry, STAFF),
}


@require_POST
@role_required(*ALL)
def finding_step(request: AppHttpRequest, pk: int, step: str) -> HttpResponse:
    if step not in STEPS:
        raise Http404("no such step")
    handler, roles = STEPS[step]
    if not user_has_role(request.user, *roles):
        raise deny(request, reason=f"step:{step}")
    item = triage_item_get_for_user(request=request, finding_pk=pk)
    try:
        messages.success(request, handler(request, item))
    except ValidationFailed as exc:
        messages.error(request, exc.message)
    return redirect("triage:finding_detail", pk=pk)


@require_POST
@role_required(*STAFF)
def alert_ack(request: AppHttpRequest, pk: int) -> HttpResponse:
    alert = get_object_or_404(TriageAlert.objects.select_related("item", "acknowledged_by"), pk=pk)
    if services.alert_acknowledge(alert=alert, user=request.user):
        messages.success(request, f"Alert acknowledged: finding #{alert.item.finding_id} is off the alert list (it stays in the queue).")
    elif alert.acknowledged_by is not None:
        who = alert.acknowledged_by.get_full_name() or alert.acknowledged_by.username
        messages.info(request, f"Already acknowledged by {who}.")
    else:
        messages.info(request, "This alert had already closed with its finding's decision.")
    return redirect(_back_to_queue(request))


# --- clinician ------------------------------------------------------------------------------


@require_GET
@role_required(*ALL)
def patient_findings(request: AppHttpRequest) -> HttpResponse:
    """The launched patient's findings (no pk in the URL: the SMART launch decides)."""
    patient_pk = launched_patient_pk(request)
    if patient_pk is None:
        raise deny(request, reason="no_launched_patient")
    patient = patient_get_for_user(request=request, patient_pk=patient_pk)
    items = list(selectors.triage_patient_items(patient_pk=patient.pk))
    audit_record(request=request, action="triage.patient_findings_view", patient_pk=patient.pk, details={"rows": len(items)})
    # open findings are what a clinician acts on; decided ones stay one section below for the history
    open_items = [i for i in items if i.status in OPEN_STATUSES]
    return render(request, "triage/patient_findings.html", {
        "items": items, "open_items": open_items, "decided_items": [i for i in items if i.status not in OPEN_STATUSES],
        "patient": patient, "banner_template": _template_or("fhir/_patient_banner.html", ""),
    })


# --- routing rules --------------------------------------------------------------------------


@require_GET
@role_required(Role.ADMIN)
def rule_list(request: AppHttpRequest) -> HttpResponse:
    audit_record(request=request, action="triage.rules_view")
    return render(request, "triage/rule_list.html", {"rules": selectors.routing_rule_list()})


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def rule_edit(request: AppHttpRequest, pk: int | None = None) -> HttpResponse:
    rule = get_object_or_404(RoutingRule, pk=pk) if pk else None
    form = RoutingRuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        services.routing_rule_save(rule=form.save(commit=False), user=request.user)
        messages.success(request, "Rule saved.")
        return redirect("triage:rule_list")
    count, preview = _preview_for(form)
    return render(request, "triage/rule_form.html", {"form": form, "rule": rule, "preview": preview, "preview_count": count})


def _preview_for(form: RoutingRuleForm) -> tuple[int, list[TriageItem]]:
    data = form.data if form.is_bound else None
    if data is None and form.instance.pk:
        return selectors.rule_preview(spec=services.rule_spec(form.instance))
    if data is None:
        return 0, []
    probe = RoutingRuleForm(data, instance=RoutingRule())
    probe.is_valid()  # the preview works from whatever criteria validated
    cleaned = probe.cleaned_data
    spec = services.rule_spec(RoutingRule(
        name="preview", queue="preview", match_kind=cleaned.get("match_kind") or "", match_severity=cleaned.get("match_severity") or "",
        match_safety=cleaned.get("match_safety") or "", match_category=cleaned.get("match_category") or "",
        match_resource_type=cleaned.get("match_resource_type") or "",
    ))
    return selectors.rule_preview(spec=spec)


@require_GET
@role_required(Role.ADMIN)
def rule_preview(request: AppHttpRequest) -> HttpResponse:
    """htmx: the live preview while the admin edits the criteria."""
    count, preview = _preview_for(RoutingRuleForm(request.GET))
    return render(request, "triage/rule_form.html#rule-preview", {"preview": preview, "preview_count": count})


@require_POST
@role_required(Role.ADMIN)
def rule_delete(request: AppHttpRequest, pk: int) -> HttpResponse:
    services.routing_rule_delete(rule=get_object_or_404(RoutingRule, pk=pk), user=request.user)
    messages.success(request, "Rule deleted.")
    return redirect("triage:rule_list")


# --- dashboard ------------------------------------------------------------------------------


SEVERITY_ORDER = ("high", "medium", "low")


@require_GET
@role_required(*STAFF)
def dashboard(request: AppHttpRequest) -> HttpResponse:
    stats = selectors.dashboard_stats()
    audit_record(request=request, action="triage.dashboard_view")
    ages = stats["age_labels"]
    open_chart = stacked_bars(title="Open findings by age and severity", groups=ages,
                              series={sev: [stats["open_by"][sev][a] for a in ages] for sev in SEVERITY_ORDER})
    weeks = [w.strftime("%d %b") for w, _ in stats["weekly"]]
    disposition_chart = stacked_bars(title="Decisions per week", groups=weeks, series={
        action: [counts[action] for _, counts in stats["weekly"]] for action in ("confirm", "dismiss", "resolve")
    })
    precision_chart = ratio_bars(title="Precision per category", rows=[(p["category"], p["precision"]) for p in stats["precision"]])
    return render(request, "triage/dashboard.html", {
        "stats": stats, "open_chart": open_chart, "disposition_chart": disposition_chart, "precision_chart": precision_chart,
        "overdue": queue_rows(selectors.triage_overdue(limit=10), now=timezone.now()),
    })

"""Queue rows as plain dicts: the queue renders 50 rows per request, and Django templates resolve
dict keys several times faster than model attributes, related lookups and date filters."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from .models import TriageItem

STATUS_LABELS = dict(TriageItem.Status.choices)


def span_text(delta: timedelta) -> str:
    """Compact, unambiguous age: "45 min", "5 h", "3 d"."""
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def queue_rows(items: list[TriageItem], *, now: datetime) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        patient = item.patient
        sla = ""
        breached = False
        if item.sla_due_at is not None:
            breached = item.sla_due_at < now
            sla = "breached" if breached else "in " + span_text(item.sla_due_at - now)
        rows.append({
            "finding_id": item.finding_id,
            "url": reverse("triage:finding_detail", args=[item.finding_id]),
            "summary": item.summary or f"{item.kind} · {item.category}",
            "quotes": item.quote_count,
            "safety": item.safety_critical,
            "severity": item.severity,
            "kind": item.kind,
            "category": item.category,
            "types": ", ".join(item.resource_type_list),
            "patient_pk": item.patient_id,
            "patient": patient.display_name or patient.fhir_id,
            "queue": item.queue,
            "status": STATUS_LABELS.get(item.status, item.status),
            "assignee": item.assignee.username if item.assignee_id else "",
            "age": span_text(now - item.created_at),
            "created": item.created_at,
            "sla": sla,
            "sla_due": item.sla_due_at,
            "breached": breached,
        })
    return rows


def select_html(*, name: str, choices: Iterable[tuple[Any, str]], selected: Any) -> SafeString:
    """A <select> for the queue's filter bar, escaped by format_html. The queue re-renders its
    eleven filters on every request, and Django's per-option widget templates cost more than the
    queue's SQL; this renders the same markup the widget would (id_<name>, selected option)."""
    chosen = "" if selected in (None, False) else str(selected)
    options = format_html_join(
        "", '<option value="{}"{}>{}</option>',
        ((value, mark_safe(" selected") if str(value) == chosen else "", label) for value, label in choices),
    )
    return format_html('<select name="{}" id="id_{}">{}</select>', name, name, options)


def filter_selects(form: Any, filters: dict[str, Any]) -> dict[str, SafeString]:
    return {
        name: select_html(name=name, choices=field.choices, selected=filters.get(name, form.data.get(name) if form.is_bound else ""))
        for name, field in form.fields.items()
        if hasattr(field, "choices") and not isinstance(field.widget, forms.HiddenInput)
    }


# --- statuses that tell the truth -----------------------------------------------------------

ACTION_DONE = {
    "alert_care_team": "Sent by email",
    "ask_coach_clarify": "Sent to the coaching platform",
    "log_next_visit": "Logged for the next visit",
}


def action_view(*, action: str, status: str, error: str) -> dict[str, str]:
    """The routing action's delivery as a reviewer reads it: label, tone (ok, muted, pending, error), why."""
    if status == TriageItem.ActionStatus.DONE:
        return {"label": ACTION_DONE.get(action, "Done"), "tone": "ok", "detail": ""}
    if status == TriageItem.ActionStatus.NOT_CONFIGURED:
        label = "In-app alert only: email not sent" if action == "alert_care_team" else "Not configured"
        return {"label": label, "tone": "muted", "detail": error}
    if status == TriageItem.ActionStatus.FAILED:
        return {"label": "Failed", "tone": "error", "detail": error}
    if status == TriageItem.ActionStatus.RETRYING:
        return {"label": "Retrying", "tone": "pending", "detail": error}
    if status == TriageItem.ActionStatus.PENDING:
        return {"label": "Pending", "tone": "pending", "detail": ""}
    return {"label": "—", "tone": "muted", "detail": ""}


def alert_email_text(*, status: str, recipients: int, note: str) -> str:
    if status == "sent":
        return f"email sent to {recipients} address{'es' if recipients != 1 else ''}"
    if status == "failed":
        return f"email failed: {note}"
    if status == "not_sent":
        return f"email not sent: {note}"
    return ""


def writeback_view(*, item: TriageItem, writeback: Any, registration: Any) -> dict[str, str] | None:
    """What happened (or will not happen) to the EHR copy of a confirmed finding."""
    if writeback is not None:
        tone = {"done": "ok", "failed": "error"}.get(writeback.status, "pending")
        label = writeback.get_status_display()
        if writeback.resource_id:
            label += f" ({writeback.resource_type}/{writeback.resource_id})"
        return {"label": label, "tone": tone, "detail": writeback.last_error}
    if item.status not in (TriageItem.Status.CONFIRMED, TriageItem.Status.RESOLVED) or item.decided_at is None:
        return None
    if registration is None:
        return {"label": "Not configured", "tone": "muted",
                "detail": "the record was loaded from a file, so there is no EHR to write to"}
    if not registration.write_enabled:
        return {"label": "Not configured", "tone": "muted", "detail": "the EHR registration does not allow writes"}
    return None

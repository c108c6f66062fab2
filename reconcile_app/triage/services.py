"""Write side of triage: routing new discrepancies, the review workflow, alerts, clarifications and write-back."""
from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from reconcile_app.audit.services import audit_record
from reconcile_app.core.exceptions import PermanentError, RetryableError, ValidationFailed
from reconcile_app.core.roles import Role
from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.fhir.selectors import clinical_record_for_id
from reconcile_app.reconciliation.models import Finding

from . import client
from .display import record_facts, said_facts
from .models import OPEN_STATUSES, Retraction, RoutingRule, TriageAlert, TriageEvent, TriageItem, TriageNote, TriageQuote, WriteBack
from .routing import SEVERITY_RANK, RoutingFacts, RuleSpec, resource_types_text, route, severity_rank, urgency_band
from .selectors import counts_invalidate
from .summaries import concept_key, finding_summary
from .writeback import BUILDERS, WriteBackFacts, retracted_version

logger = logging.getLogger(__name__)

S = TriageItem.Status
DISCREPANCY_KINDS = (Finding.Kind.CONTRADICTION, Finding.Kind.GAP)
DEFAULT_SLA_MINUTES = 7 * 24 * 60
DECIDED = (S.CONFIRMED, S.DISMISSED, S.RESOLVED)
Q_ = TriageQuote.Closed


class TransitionRefused(ValidationFailed):
    """The item is no longer in a state that allows the step (someone else acted first)."""


# --- routing --------------------------------------------------------------------------------


def rule_spec(rule: RoutingRule) -> RuleSpec:
    return RuleSpec(
        id=rule.pk or 0, order=rule.order, name=rule.name, enabled=rule.enabled, match_kind=rule.match_kind,
        match_severity=rule.match_severity, match_safety=rule.match_safety, match_category=rule.match_category,
        match_resource_type=rule.match_resource_type, queue=rule.queue, priority=rule.priority,
        sla_minutes=rule.sla_minutes, action=rule.action,
    )


def routing_facts(finding: Finding) -> RoutingFacts:
    return RoutingFacts(
        kind=finding.kind, severity=finding.severity, safety_critical=finding.safety_critical, category=finding.category,
        resource_types=tuple(c.get("resourceType", "") for c in finding.citations or [] if isinstance(c, dict)),
    )


def finding_summary_for(finding: Finding, records: dict[int, ClinicalRecord] | None = None) -> str:
    """The finding's one line, from its memory and the cited entries of the snapshot it was made against.
    `records`: snapshot id -> record, kept by a caller summarising several findings (a session's are all
    made against one snapshot), so the snapshot's hash is read once rather than once per finding."""
    records = {} if records is None else records
    record = records.get(finding.snapshot_id)
    if record is None:
        record = records[finding.snapshot_id] = clinical_record_for_id(snapshot_id=finding.snapshot_id)
    cited = [
        record_facts(citation=c, entry=record.get(str(c.get("resourceType", "")), str(c.get("id", ""))))
        for c in finding.citations or [] if isinstance(c, dict)
    ]
    return finding_summary(kind=finding.kind, category=finding.category, facts=said_facts(finding.memory), record=cited)


def triage_items_route(*, findings: Iterable[Finding]) -> list[TriageItem]:
    """One item per open discrepancy of a patient, concept and kind (idempotent: a finding already
    routed keeps its item). A finding whose concept has an open item joins it as a quote; otherwise
    a new item is created, the first matching enabled rule sets its queue and SLA, and its action runs.
    Closed items are never reopened: a new quote after a decision starts a new item."""
    findings = [f for f in findings if f.kind in DISCREPANCY_KINDS]
    if not findings:
        return []  # most sessions raise none: no rule to read
    enabled = list(RoutingRule.objects.filter(enabled=True))
    rules = [rule_spec(r) for r in enabled]
    by_id = {r.id: r for r in enabled}
    records: dict[int, ClinicalRecord] = {}  # snapshots never change: each one's record read once for the batch
    routed: list[TriageItem] = []
    for finding in findings:
        with transaction.atomic():
            quote = TriageQuote.objects.select_related("item").filter(finding=finding).first()
            if quote is not None:
                routed.append(quote.item)
                continue
            memory = finding.memory
            key = concept_key(category=memory.category, attributes=memory.attributes or {})
            summary = finding_summary_for(finding, records)
            # Sessions of one patient are routed one at a time (the pipeline's per-patient lease);
            # the row lock covers a manual re-route running beside it.
            target = (
                TriageItem.objects.select_for_update().filter(patient_id=finding.patient_id, kind=finding.kind, concept_key=key,
                                                              status__in=OPEN_STATUSES).order_by("created_at", "id").first()
                if key else None
            )
            if target is not None:
                routed.append(_quote_join(item=target, finding=finding, summary=summary, rules=rules, by_id=by_id))
            else:
                routed.append(_item_create(finding=finding, key=key, summary=summary, rules=rules, by_id=by_id))
            counts_invalidate()
    return routed


def _item_create(*, finding: Finding, key: str, summary: str, rules: list[RuleSpec], by_id: dict[int, RoutingRule]) -> TriageItem:
    facts = routing_facts(finding)
    rule = route(facts, rules)
    now = timezone.now()
    item = TriageItem.objects.create(
        finding=finding,
        patient_id=finding.patient_id,
        kind=finding.kind,
        severity=finding.severity,
        severity_rank=severity_rank(finding.severity),
        safety_critical=finding.safety_critical,
        band=urgency_band(safety_critical=finding.safety_critical, severity=finding.severity),
        category=finding.category,
        resource_types=resource_types_text(facts.resource_types),
        created_at=finding.created_at or now,
        concept_key=key,
        summary=summary,
        last_quoted_at=finding.created_at or now,
        queue=rule.queue if rule else "Unrouted",
        priority=rule.priority if rule else 3,
        sla_due_at=now + timedelta(minutes=rule.sla_minutes if rule else DEFAULT_SLA_MINUTES),
        rule=by_id.get(rule.id) if rule else None,
        action=rule.action if rule else "",
    )
    TriageQuote.objects.create(item=item, finding=finding, summary=summary)
    TriageEvent.objects.create(item=item, action="routed", to_status=S.NEW, note=(rule.name if rule else "no rule matched")[:300])
    audit_record(action="triage.route", patient_pk=item.patient_id, object_type="finding", object_id=finding.pk,
                 details={"rule": rule.id if rule else None, "queue": item.queue[:80]})
    if rule is not None:
        _action_perform(item=item, action=rule.action)
    return item


def _quote_join(*, item: TriageItem, finding: Finding, summary: str, rules: list[RuleSpec], by_id: dict[int, RoutingRule]) -> TriageItem:
    """The new finding becomes a quote of the open item; the item's severity and safety flag are the
    highest of its quotes. When that makes it more urgent, its rule is chosen again (queue, priority,
    the earlier SLA) and the new rule's action runs, e.g. the care team is alerted."""
    rank = max(item.severity_rank, severity_rank(finding.severity))
    severity = {v: k for k, v in SEVERITY_RANK.items()}[rank]
    safety = item.safety_critical or finding.safety_critical
    band = urgency_band(safety_critical=safety, severity=severity)
    types = tuple(set(item.resource_type_list) | set(routing_facts(finding).resource_types))
    now = timezone.now()
    changes: dict[str, Any] = {
        "severity": severity, "severity_rank": rank, "safety_critical": safety, "band": band,
        "resource_types": resource_types_text(types), "summary": summary, "quote_count": F("quote_count") + 1,
        "last_quoted_at": finding.created_at or now, "updated_at": now,
    }
    rule = None
    if band < item.band:
        rule = route(RoutingFacts(kind=item.kind, severity=severity, safety_critical=safety, category=item.category,
                                  resource_types=types), rules)
        if rule is not None:
            due = now + timedelta(minutes=rule.sla_minutes)
            changes.update(queue=rule.queue, priority=rule.priority, rule=by_id.get(rule.id), action=rule.action,
                           sla_due_at=min(due, item.sla_due_at) if item.sla_due_at else due)
    TriageItem.objects.filter(pk=item.pk).update(**changes)
    TriageQuote.objects.create(item=item, finding=finding, summary=summary)
    TriageEvent.objects.create(item=item, action="quote_joined", from_status=item.status, to_status=item.status,
                               note=f"finding #{finding.pk} from session {finding.session.external_id}"[:300])
    audit_record(action="triage.quote_join", patient_pk=item.patient_id, object_type="finding", object_id=finding.pk,
                 details={"item_finding": item.finding_id, "band_from": item.band, "band_to": band})
    item.refresh_from_db()
    if rule is not None:
        _action_perform(item=item, action=rule.action)
    return item


def triage_item_quotes_changed(*, item_id: int) -> None:
    """After a quote stopped counting (its finding withdrawn, resolved or replaced) or its row went: the
    item's severity, flag, types and summary are those of its live quotes; the item itself is never
    deleted (the ledger closes it when no live quote is left). `finding` moves only when its row went."""
    item = TriageItem.objects.filter(pk=item_id).first()
    if item is None:
        return
    rows = TriageQuote.objects.filter(item_id=item_id).select_related("finding").order_by("finding__created_at", "finding_id")
    quotes = [q for q in rows if q.closed_at is None]
    if not quotes:
        if not rows and not WriteBack.objects.filter(item_id=item_id).exists():
            item.delete()  # only when its findings' rows are gone (the patient was deleted)
        counts_invalidate()
        return
    findings = [q.finding for q in quotes]
    rank = max(severity_rank(f.severity) for f in findings)
    safety = any(f.safety_critical for f in findings)
    severity = {v: k for k, v in SEVERITY_RANK.items()}[rank]
    types = tuple({t for f in findings for t in routing_facts(f).resource_types})
    TriageItem.objects.filter(pk=item_id).update(
        finding=item.finding if item.finding_id in {f.pk for f in findings} else findings[0], quote_count=len(quotes),
        severity=severity, severity_rank=rank, safety_critical=safety, band=urgency_band(safety_critical=safety, severity=severity),
        resource_types=resource_types_text(types), summary=quotes[-1].summary, last_quoted_at=findings[-1].created_at,
    )
    counts_invalidate()


def _action_perform(*, item: TriageItem, action: str) -> None:
    if action == RoutingRule.Action.ALERT_CARE_TEAM:
        alert = care_team_alert(item=item, reason="routed")
        # Done only when the email reached someone; the in-app alert alone is "not configured".
        status, error = {
            TriageAlert.Email.SENT: (TriageItem.ActionStatus.DONE, ""),
            TriageAlert.Email.FAILED: (TriageItem.ActionStatus.FAILED, alert.email_note),
        }.get(alert.email_status, (TriageItem.ActionStatus.NOT_CONFIGURED, alert.email_note))
        TriageItem.objects.filter(pk=item.pk).update(action_status=status, action_error=error[:300])
    elif action == RoutingRule.Action.ASK_COACH_CLARIFY:
        from .tasks import clarification_send_task

        TriageItem.objects.filter(pk=item.pk).update(action_status=TriageItem.ActionStatus.PENDING, action_error="")
        clarification_send_task.delay_on_commit(item.pk)
    elif action == RoutingRule.Action.LOG_NEXT_VISIT:
        TriageEvent.objects.create(item=item, action="logged_next_visit", from_status=item.status, to_status=item.status)
        TriageItem.objects.filter(pk=item.pk).update(action_status=TriageItem.ActionStatus.DONE, action_error="")


def finding_url(finding_id: int) -> str:
    return settings.PUBLIC_BASE_URL.rstrip("/") + reverse("triage:finding_detail", args=[finding_id])


NO_RECIPIENT = "no email address to send to: set TRIAGE_ALERT_EMAILS or give the nurses an email address"


def alert_recipients() -> list[str]:
    recipients = [r for r in getattr(settings, "TRIAGE_ALERT_EMAILS", []) or [] if r]
    if not recipients:
        recipients = list(
            User.objects.filter(groups__name=Role.NURSE.value, is_active=True).exclude(email="").values_list("email", flat=True)
        )
    return recipients


def care_team_alert(*, item: TriageItem, reason: str) -> TriageAlert:
    """In-app alert plus an email. The email carries a link and ids only: mail is not a place for PHI.
    The alert records whether the email went out, to how many addresses, and why not."""
    recipients = alert_recipients()
    status, note = TriageAlert.Email.NOT_SENT, NO_RECIPIENT
    if recipients:
        subject = "Safety-critical finding to review" if item.safety_critical else "Finding to review"
        if reason == "sla_breach":
            subject = "Review overdue: finding escalated"
        body = f"Finding #{item.finding_id} ({item.queue}, {item.severity}) needs review:\n{finding_url(item.finding_id)}\n"
        try:
            sent = send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients, fail_silently=False)
        except OSError as exc:
            # The in-app alert stands; the failed mail is visible on the alert and the item.
            status, note = TriageAlert.Email.FAILED, f"the mail server refused or was unreachable ({exc.__class__.__name__})"
            logger.warning("alert email failed for triage item %s", item.pk)
        else:
            status, note = (TriageAlert.Email.SENT, "") if sent else (TriageAlert.Email.NOT_SENT, "the email backend sent nothing")
    alert = TriageAlert.objects.create(item=item, reason=reason, email_status=status, email_note=note[:200],
                                       email_recipients=len(recipients) if status == TriageAlert.Email.SENT else 0)
    counts_invalidate()
    return alert


def clarification_send(*, item_id: int) -> TriageItem:
    """Deliver the clarification request for the item to its session's coaching platform."""
    item = TriageItem.objects.select_related("finding__memory", "finding__session__upload__platform").get(pk=item_id)
    if item.action_status == TriageItem.ActionStatus.DONE:
        return item
    finding = item.finding
    platform = finding.session.upload.platform
    TriageItem.objects.filter(pk=item.pk).update(action_attempts=item.action_attempts + 1)
    if platform is None or not platform.webhook_url or not platform.active:
        # Nothing to deliver to is a setting, not a failure: say so and stop (no retry can help).
        reason = ("the session came from a file, not a coaching platform" if platform is None
                  else "the coaching platform has no active webhook")
        TriageItem.objects.filter(pk=item.pk).update(action_status=TriageItem.ActionStatus.NOT_CONFIGURED,
                                                     action_error=f"no active coaching platform webhook: {reason}"[:300])
        item.refresh_from_db()
        return item
    memory = finding.memory
    payload: dict[str, Any] = {
        "type": "clarification_request",
        "request_id": f"finding-{finding.pk}",
        "patient_ref": finding.session.upload.patient_ref,
        "session_id": finding.session.external_id,
        "turn_ids": list(memory.turn_ids),
        "category": finding.category,
        "question": (
            f"What the patient said about this {finding.category or 'topic'} differs from the clinical record. "
            "Please check with the patient in your next conversation."
        ),
        "quote": memory.quote,
    }
    try:
        client.clarification_post(url=platform.webhook_url, payload=payload)
    except RetryableError as exc:
        _action_failed(item, exc.message, final=False)
        raise
    except PermanentError as exc:
        _action_failed(item, exc.message, final=True)
        raise
    TriageItem.objects.filter(pk=item.pk).update(action_status=TriageItem.ActionStatus.DONE, action_error="")
    TriageEvent.objects.create(item=item, action="clarification_sent", from_status=item.status, to_status=item.status)
    audit_record(action="triage.clarification_sent", patient_pk=item.patient_id, object_type="finding", object_id=finding.pk)
    item.refresh_from_db()
    return item


def _action_failed(item: TriageItem, message: str, *, final: bool) -> None:
    status = TriageItem.ActionStatus.FAILED if final else TriageItem.ActionStatus.RETRYING
    TriageItem.objects.filter(pk=item.pk).update(action_status=status, action_error=message[:300])


def clarification_give_up(*, item_id: int, message: str) -> None:
    TriageItem.objects.filter(pk=item_id).update(action_status=TriageItem.ActionStatus.FAILED, action_error=message[:300])


# --- the workflow ---------------------------------------------------------------------------


def _transition(
    *, item: TriageItem, user: User | None, action: str, allowed_from: Iterable[str], to: str,
    extra: dict[str, Any] | None = None, note: str = "", extra_filter: Q | None = None,
) -> TriageItem:
    """One conditional UPDATE per step: whoever acts second finds the row changed and is refused."""
    allowed = tuple(allowed_from)
    qs = TriageItem.objects.filter(pk=item.pk, status__in=allowed)
    if extra_filter is not None:
        qs = qs.filter(extra_filter)
    from_status = item.status
    with transaction.atomic():
        changed = qs.update(status=to, updated_at=timezone.now(), **(extra or {}))
        if changed:
            TriageEvent.objects.create(item=item, actor=user, action=action, from_status=from_status, to_status=to, note=note[:300])
            if to in (*DECIDED, S.WITHDRAWN):
                # A decided (or withdrawn) finding needs no more attention: its alerts close with it.
                TriageAlert.objects.filter(item=item, acknowledged_at__isnull=True, closed_at__isnull=True).update(
                    closed_at=timezone.now(), closed_reason=to)
            audit_record(action=f"triage.{action}", actor=user, patient_pk=item.patient_id, object_type="finding",
                         object_id=item.finding_id, details={"from": from_status, "to": to})
    counts_invalidate()
    if not changed:
        # Audited outside the (rolled-back) transaction of a caller that lets the refusal propagate.
        current = TriageItem.objects.filter(pk=item.pk).values_list("status", flat=True).first()
        audit_record(action=f"triage.{action}", actor=user, outcome="denied", patient_pk=item.patient_id,
                     object_type="finding", object_id=item.finding_id, details={"status": current or ""})
        raise TransitionRefused(f"Refused: this finding is now {current or 'gone'} (someone may have acted on it first).")
    item.refresh_from_db()
    return item


def _not_held_by_other(user: User) -> Q:
    # A claimed item is the claimer's to decide; admins may always act.
    from reconcile_app.core.roles import user_has_role

    if user_has_role(user, Role.ADMIN):
        return Q()
    return Q(assignee__isnull=True) | Q(assignee=user)


def triage_item_claim(*, item: TriageItem, user: User) -> TriageItem:
    now = timezone.now()
    return _transition(
        item=item, user=user, action="claim", allowed_from=(S.NEW, S.ESCALATED), to=S.IN_REVIEW,
        extra={"assignee": user, "claimed_at": now},
        extra_filter=Q(assignee__isnull=True) | Q(assignee=user),
    )


def triage_item_confirm(*, item: TriageItem, user: User, note: str = "") -> TriageItem:
    item = _transition(
        item=item, user=user, action="confirm", allowed_from=OPEN_STATUSES, to=S.CONFIRMED,
        extra={"decided_at": timezone.now()}, note=note, extra_filter=_not_held_by_other(user),
    )
    writeback_enqueue(item=item, reviewer=user)
    return item


def triage_item_dismiss(*, item: TriageItem, user: User, reason: str, text: str = "") -> TriageItem:
    if reason not in TriageItem.DismissReason.values:
        raise ValidationFailed("A dismiss reason is required.", errors=["reason"])
    if reason == TriageItem.DismissReason.OTHER and not text.strip():
        raise ValidationFailed("Say why when the reason is 'other'.", errors=["text"])
    return _transition(
        item=item, user=user, action="dismiss", allowed_from=OPEN_STATUSES, to=S.DISMISSED,
        extra={"decided_at": timezone.now(), "dismiss_reason": reason, "dismiss_text": text.strip()[:300]},
        note=reason, extra_filter=_not_held_by_other(user),
    )


def triage_item_resolve(*, item: TriageItem, user: User, note: str = "") -> TriageItem:
    return _transition(
        item=item, user=user, action="resolve", allowed_from=(*OPEN_STATUSES, S.CONFIRMED), to=S.RESOLVED,
        extra={"resolved_at": timezone.now()}, note=note, extra_filter=_not_held_by_other(user),
    )


def triage_item_escalate(*, item: TriageItem, user: User | None, note: str = "", reason: str = "manual") -> TriageItem:
    item = _transition(
        item=item, user=user, action="escalate", allowed_from=(S.NEW, S.IN_REVIEW), to=S.ESCALATED,
        extra={"escalated_at": timezone.now()}, note=note or reason,
    )
    care_team_alert(item=item, reason="sla_breach" if reason == "sla" else "escalated")
    return item


def triage_item_assign(*, item: TriageItem, user: User, assignee: User) -> TriageItem:
    now = timezone.now()
    return _transition(
        item=item, user=user, action="assign", allowed_from=OPEN_STATUSES, to=S.IN_REVIEW,
        extra={"assignee": assignee, "claimed_at": now}, note=f"to {assignee.username}",
    )


def triage_note_add(*, item: TriageItem, user: User, text: str) -> TriageNote:
    text = text.strip()
    if not text:
        raise ValidationFailed("The note is empty.", errors=["text"])
    with transaction.atomic():
        note = TriageNote.objects.create(item=item, author=user, text=text[:5000])
        TriageEvent.objects.create(item=item, actor=user, action="note", from_status=item.status, to_status=item.status)
        audit_record(action="triage.note", actor=user, patient_pk=item.patient_id, object_type="finding", object_id=item.finding_id)
    return note


def triage_items_bulk_assign(*, items: Iterable[TriageItem], user: User, assignee: User) -> tuple[int, int]:
    """(done, refused): items that changed state meanwhile are skipped, not forced."""
    done = refused = 0
    for item in items:
        try:
            triage_item_assign(item=item, user=user, assignee=assignee)
            done += 1
        except TransitionRefused:
            refused += 1
    return done, refused


def triage_items_bulk_dismiss(*, items: Iterable[TriageItem], user: User, reason: str, text: str = "") -> tuple[int, int]:
    done = refused = 0
    for item in items:
        try:
            triage_item_dismiss(item=item, user=user, reason=reason, text=text)
            done += 1
        except TransitionRefused:
            refused += 1
    return done, refused


def sla_breaches_escalate(*, now: datetime | None = None, limit: int = 500) -> int:
    """Escalate new / in-review items past their SLA (the periodic task's body)."""
    now = now or timezone.now()
    ids = list(
        TriageItem.objects.filter(status__in=(S.NEW, S.IN_REVIEW), sla_due_at__lt=now).order_by("sla_due_at").values_list("pk", flat=True)[:limit]
    )
    escalated = 0
    for item in TriageItem.objects.filter(pk__in=ids):
        try:
            triage_item_escalate(item=item, user=None, reason="sla", note="SLA breached")
            escalated += 1
        except TransitionRefused:
            continue  # decided meanwhile
    return escalated


def alert_acknowledge(*, alert: TriageAlert, user: User) -> bool:
    """True when this call acknowledged it; False when someone had already (or it closed meanwhile)."""
    changed = TriageAlert.objects.filter(pk=alert.pk, acknowledged_at__isnull=True, closed_at__isnull=True).update(
        acknowledged_at=timezone.now(), acknowledged_by=user)
    counts_invalidate()
    audit_record(action="triage.alert_ack", actor=user, patient_pk=alert.item.patient_id, object_type="finding",
                 object_id=alert.item.finding_id, outcome="ok" if changed else "denied")
    alert.refresh_from_db()
    return bool(changed)


# --- the ledger: quotes and items that stop standing -------------------------------------------

CLOSING_NOTES = {
    Q_.WITHDRAWN: "consent for the source was withdrawn",
    Q_.RESOLVED_BY_EHR: "resolved by EHR update: the record now agrees with what the patient said",
    Q_.REEVALUATED: "re-evaluated against the updated record",
    Q_.LATER_STATEMENT: "a later statement of the patient replaced this one",
    Q_.CORRECTED: "the memory was corrected",
    Q_.OUTDATED: "the patient's statement is outdated (its time to live passed)",
}


def triage_quotes_close(*, findings: Iterable[Finding], reason: str, user: User | None = None, close_items: bool = True) -> dict[str, list[int]]:
    """The quotes of these findings stop counting for their items (they stay listed; a withdrawn one
    loses its words). An open item left without a live quote closes: withdrawn when every quote was
    withdrawn, otherwise resolved with `reason`. With `close_items` False (the flapping guard) such an
    item keeps those quotes live and stays open, saying why. A decided item keeps its decision; a
    withdrawn source marks it. Returns item ids by what happened: closed, recomputed, held, marked."""
    outcome: dict[str, list[int]] = {"closed": [], "recomputed": [], "held": [], "marked": []}
    now = timezone.now()
    by_item: dict[int, list[TriageQuote]] = {}
    for quote in TriageQuote.objects.filter(finding_id__in=[f.pk for f in findings], closed_at__isnull=True).order_by("id"):
        by_item.setdefault(quote.item_id, []).append(quote)
    changes: dict[str, Any] = {"closed_at": now, "closed_reason": reason, **({"summary": ""} if reason == Q_.WITHDRAWN else {})}
    for item_id, closing in sorted(by_item.items()):
        item = TriageItem.objects.select_for_update().get(pk=item_id)
        others_live = TriageQuote.objects.filter(item_id=item_id, closed_at__isnull=True).exclude(pk__in=[q.pk for q in closing]).exists()
        if item.is_open and not others_live and not close_items and reason != Q_.WITHDRAWN:
            TriageEvent.objects.create(item=item, actor=user, action="held_open", from_status=item.status, to_status=item.status,
                                       note=("the record changed back and forth: left open for review ("
                                             + CLOSING_NOTES.get(reason, reason) + ")")[:300])
            audit_record(action="triage.held_open", actor=user, patient_pk=item.patient_id, object_type="finding",
                         object_id=item.finding_id, details={"reason": reason})
            outcome["held"].append(item_id)
            continue
        TriageQuote.objects.filter(pk__in=[q.pk for q in closing]).update(**changes)
        if not item.is_open:
            if reason == Q_.WITHDRAWN:
                TriageItem.objects.filter(pk=item_id).update(source_revoked_at=item.source_revoked_at or now,
                                                             summary="" if not others_live else item.summary)
                TriageEvent.objects.create(item=item, actor=user, action="source_withdrawn", from_status=item.status,
                                           to_status=item.status, note="kept as decided; consent for a source was withdrawn")
                outcome["marked"].append(item_id)
            else:
                TriageEvent.objects.create(item=item, actor=user, action="changed_after_decision", from_status=item.status,
                                           to_status=item.status, note=CLOSING_NOTES.get(reason, reason)[:300])
            continue
        if others_live:
            triage_item_quotes_changed(item_id=item_id)
            TriageEvent.objects.create(item=item, actor=user, action="quote_closed", from_status=item.status, to_status=item.status,
                                       note=CLOSING_NOTES.get(reason, reason)[:300])
            outcome["recomputed"].append(item_id)
        elif not TriageQuote.objects.filter(item_id=item_id).exclude(closed_reason=Q_.WITHDRAWN).exists():
            _transition(item=item, user=user, action="withdrawn", allowed_from=OPEN_STATUSES, to=S.WITHDRAWN,
                        extra={"decided_at": now, "summary": ""}, note=CLOSING_NOTES[Q_.WITHDRAWN])
            outcome["closed"].append(item_id)
        else:
            _transition(item=item, user=user, action=reason, allowed_from=OPEN_STATUSES, to=S.RESOLVED,
                        extra={"resolved_at": now}, note=CLOSING_NOTES.get(reason, reason))
            outcome["closed"].append(item_id)
    counts_invalidate()
    return outcome


def triage_open_item_for(*, finding: Finding) -> TriageItem | None:
    quote = TriageQuote.objects.select_related("item").filter(finding=finding, closed_at__isnull=True).first()
    return quote.item if quote is not None and quote.item.is_open else None


def triage_reviewed_finding_ids(*, finding_ids: Iterable[int]) -> set[int]:
    """Findings a person decided on: quoted by an item someone confirmed, dismissed or resolved (an item
    the ledger resolved on its own, e.g. after an EHR update, was not reviewed)."""
    quotes = list(TriageQuote.objects.filter(finding_id__in=list(finding_ids), item__status__in=DECIDED)
                  .values_list("finding_id", "item_id", "item__status"))
    resolved = [item for _, item, status in quotes if status == S.RESOLVED]
    by_person = set(TriageEvent.objects.filter(item_id__in=resolved, action="resolve", actor__isnull=False).values_list("item_id", flat=True))
    return {finding for finding, item, status in quotes if status != S.RESOLVED or item in by_person}


def writebacks_withdraw(*, findings: Iterable[Finding], user: User | None = None, reason: str = "consent withdrawn") -> dict[str, int]:
    """Write-backs that carry the words of these findings: one already in the EHR is retracted (a
    Retraction, retried like the write); one not yet written is cancelled and never goes out."""
    ids = [f.pk for f in findings]
    counts = {"retractions": 0, "cancelled": 0}
    candidates = WriteBack.objects.filter(Q(finding_id__in=ids) | Q(finding__isnull=True, item__finding_id__in=ids))
    for wb in candidates.select_for_update(of=("self",)).select_related("item"):
        if wb.status == WriteBack.Status.DONE:
            retraction_request(writeback=wb, user=user, reason=reason)
            counts["retractions"] += 1
        elif wb.status in (WriteBack.Status.PENDING, WriteBack.Status.RETRYING, WriteBack.Status.FAILED):
            WriteBack.objects.filter(pk=wb.pk).update(status=WriteBack.Status.CANCELLED, last_error="")
            TriageEvent.objects.create(item=wb.item, actor=user, action="writeback_cancelled", from_status=wb.item.status,
                                       to_status=wb.item.status, note="the source was withdrawn before the write went out")
            audit_record(action="triage.writeback_cancel", actor=user, patient_pk=wb.item.patient_id, object_type="finding",
                         object_id=wb.item.finding_id, details={"reason": reason[:100]})
            counts["cancelled"] += 1
    return counts


def retraction_request(*, writeback: WriteBack, user: User | None = None, reason: str = "consent withdrawn") -> Retraction:
    """Queue the retraction of a written resource (idempotent: one retraction per write-back)."""
    from .tasks import retraction_send_task

    retraction, created = Retraction.objects.get_or_create(writeback=writeback, defaults={"requested_by": user, "reason": reason[:120]})
    if created:
        audit_record(action="triage.retraction_request", actor=user, patient_pk=writeback.item.patient_id, object_type="finding",
                     object_id=writeback.item.finding_id, details={"resource_type": writeback.resource_type,
                                                                   "resource_id": writeback.resource_id})
        retraction_send_task.delay_on_commit(retraction.pk)
    return retraction


def _retract_by_update(*, base_url: str, bearer: str | None, current: dict[str, Any]) -> str:
    version = str((current.get("meta") or {}).get("versionId") or "") if isinstance(current.get("meta"), dict) else ""
    client.fhir_resource_update(base_url=base_url, bearer=bearer, resource=retracted_version(current), if_match=version)
    return Retraction.Method.ENTERED_IN_ERROR


def _retract_by_delete(*, base_url: str, bearer: str | None, current: dict[str, Any]) -> str:
    client.fhir_resource_delete(base_url=base_url, bearer=bearer, resource_type=str(current["resourceType"]), resource_id=str(current["id"]))
    return Retraction.Method.DELETED


def retraction_send(*, retraction_id: int) -> Retraction:
    """Take the written resource out of the EHR: read it, then mark it entered-in-error with the words
    replaced (or delete it, when RETRACTION_PREFER_DELETE is set), falling back to the other way when the
    EHR does not allow the first. Gone already counts as done. A RetryableError is recorded and re-raised."""
    retraction = Retraction.objects.select_related("writeback__item__patient__registration").get(pk=retraction_id)
    if retraction.status == Retraction.Status.DONE:
        return retraction
    wb = retraction.writeback
    item = wb.item
    base_url = wb.base_url or (item.patient.registration.iss if item.patient.registration else "")
    Retraction.objects.filter(pk=retraction.pk).update(attempts=retraction.attempts + 1)
    bearer = bearer_for_patient(item.patient)
    ways = [_retract_by_update, _retract_by_delete]
    if getattr(settings, "RETRACTION_PREFER_DELETE", False):
        ways.reverse()
    try:
        try:
            current = client.fhir_resource_read(base_url=base_url, bearer=bearer, resource_type=wb.resource_type, resource_id=wb.resource_id)
        except client.ResourceGone:
            method = Retraction.Method.ABSENT
        else:
            method = ""
            last: PermanentError | None = None
            for way in ways:
                try:
                    method = way(base_url=base_url, bearer=bearer, current=current)
                    break
                except client.ResourceGone:
                    method = Retraction.Method.ABSENT
                    break
                except client.ResourceNotSupported as exc:
                    last = exc
            if not method:
                raise last or PermanentError("the EHR allows neither an update nor a delete")
    except RetryableError as exc:
        Retraction.objects.filter(pk=retraction.pk).update(status=Retraction.Status.RETRYING, last_error=exc.message[:300])
        raise
    except PermanentError as exc:
        retraction_give_up(retraction_id=retraction.pk, message=exc.message)
        raise
    Retraction.objects.filter(pk=retraction.pk).update(status=Retraction.Status.DONE, method=method, last_error="", retracted_at=timezone.now())
    TriageEvent.objects.create(item=item, action="retracted", from_status=item.status, to_status=item.status,
                               note=f"{wb.resource_type}/{wb.resource_id}: {Retraction.Method(method).label.lower()}"[:300])
    audit_record(action="triage.retraction", patient_pk=item.patient_id, object_type="finding", object_id=item.finding_id,
                 details={"resource_type": wb.resource_type, "resource_id": wb.resource_id[:64], "method": method})
    retraction.refresh_from_db()
    return retraction


def retraction_give_up(*, retraction_id: int, message: str) -> None:
    Retraction.objects.filter(pk=retraction_id).update(status=Retraction.Status.FAILED, last_error=message[:300])
    retraction = Retraction.objects.select_related("writeback__item").get(pk=retraction_id)
    audit_record(action="triage.retraction", outcome="error", patient_pk=retraction.writeback.item.patient_id, object_type="finding",
                 object_id=retraction.writeback.item.finding_id, details={"error": message[:120]})


def retraction_retry(*, retraction: Retraction, user: User) -> Retraction:
    """Someone asks for another try after a visible failure (e.g. once the EHR granted the scope)."""
    from .tasks import retraction_send_task

    updated = Retraction.objects.filter(pk=retraction.pk, status=Retraction.Status.FAILED).update(status=Retraction.Status.PENDING)
    if updated:
        audit_record(action="triage.retraction_retry", actor=user, patient_pk=retraction.writeback.item.patient_id,
                     object_type="finding", object_id=retraction.writeback.item.finding_id)
        retraction_send_task.delay_on_commit(retraction.pk)
    retraction.refresh_from_db()
    return retraction


# --- routing rules --------------------------------------------------------------------------


def routing_rule_save(*, rule: RoutingRule, user: User) -> RoutingRule:
    created = rule.pk is None
    rule.save()
    audit_record(action="triage.rule_create" if created else "triage.rule_update", actor=user, object_type="routing_rule", object_id=rule.pk)
    return rule


def routing_rule_delete(*, rule: RoutingRule, user: User) -> None:
    rule_id = rule.pk
    rule.delete()
    audit_record(action="triage.rule_delete", actor=user, object_type="routing_rule", object_id=rule_id)


# --- write-back -----------------------------------------------------------------------------


def writeback_enqueue(*, item: TriageItem, reviewer: User) -> WriteBack | None:
    """On confirm, when the patient's EHR granted writes: queue a DetectedIssue write."""
    patient = item.patient
    registration = patient.registration
    if registration is None or not registration.write_enabled:
        return None
    wb, created = WriteBack.objects.get_or_create(item=item, defaults={"reviewer": reviewer, "base_url": registration.iss})
    if created or wb.status == WriteBack.Status.FAILED:
        if not created:
            WriteBack.objects.filter(pk=wb.pk).update(status=WriteBack.Status.PENDING, last_error="")
        from .tasks import writeback_send_task

        writeback_send_task.delay_on_commit(wb.pk)
    return wb


def _fhir_user_for(user: User | None) -> str:
    if user is None:
        return ""
    from reconcile_app.smart.models import SmartLaunch

    value = (
        SmartLaunch.objects.filter(user=user).exclude(fhir_user="").order_by("-created_at").values_list("fhir_user", flat=True).first()
        or ""
    )
    # fhirUser may be absolute (https://ehr/fhir/Practitioner/1); keep the relative part.
    parts = value.rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else ""


def bearer_for_patient(patient: Any) -> str | None:
    """A live user token for the patient (refreshed first when about to expire), or None."""
    from reconcile_app.smart.services import launch_bearer_for_patient

    if patient.registration_id is None:
        return None  # a bundle-imported record: no EHR to write to with a token
    return launch_bearer_for_patient(registration=patient.registration, patient_fhir_id=patient.fhir_id)


def writeback_facts(*, item: TriageItem, reviewer: User | None) -> WriteBackFacts:
    finding = item.finding
    memory = finding.memory
    return WriteBackFacts(
        finding_id=finding.pk,
        patient_fhir_id=item.patient.fhir_id,
        kind=finding.kind,
        severity=finding.severity,
        category=finding.category,
        explanation=finding.explanation,
        memory_content=memory.content,
        quote=memory.quote,
        speaker=memory.speaker,
        mentioned_at=memory.mention_time,
        citations=tuple(c for c in finding.citations or [] if isinstance(c, dict)),
        identified_at=item.decided_at or timezone.now(),
        author_reference=_fhir_user_for(reviewer),
        author_display=(reviewer.get_full_name() or reviewer.username) if reviewer else "",
    )


def writeback_send(*, writeback_id: int) -> WriteBack:
    """Write the confirmed finding: DetectedIssue first, then Task, then Communication when the
    server says a type is unsupported. A RetryableError is recorded and re-raised for the task."""
    wb = WriteBack.objects.select_related("item__finding__memory", "item__patient__registration", "reviewer").get(pk=writeback_id)
    if wb.status in (WriteBack.Status.DONE, WriteBack.Status.CANCELLED):
        return wb
    item = wb.item
    base_url = wb.base_url or (item.patient.registration.iss if item.patient.registration else "")
    WriteBack.objects.filter(pk=wb.pk).update(attempts=wb.attempts + 1)
    facts = writeback_facts(item=item, reviewer=wb.reviewer)
    bearer = bearer_for_patient(item.patient)
    last_unsupported: PermanentError | None = None
    try:
        for build in BUILDERS:
            resource = build(facts)
            try:
                stored = client.fhir_resource_create(base_url=base_url, bearer=bearer, resource=resource)
            except client.ResourceNotSupported as exc:
                last_unsupported = exc
                continue
            with transaction.atomic():
                # Row lock: a consent withdrawal that cancelled this write while it was on its way
                # finds it written here, and the withdrawal's retraction follows at once.
                cancelled = WriteBack.objects.select_for_update().filter(pk=wb.pk).values_list("status", flat=True).first() == \
                    WriteBack.Status.CANCELLED
                WriteBack.objects.filter(pk=wb.pk).update(
                    status=WriteBack.Status.DONE, resource_type=resource["resourceType"], resource_id=str(stored["id"])[:64],
                    last_error="", written_at=timezone.now(), finding=item.finding,
                )
                if cancelled:
                    retraction_request(writeback=WriteBack.objects.select_related("item").get(pk=wb.pk), reason="written after its source was withdrawn")
            TriageEvent.objects.create(item=item, action="written_back", from_status=item.status, to_status=item.status,
                                       note=f"{resource['resourceType']}/{stored['id']}"[:300])
            audit_record(action="triage.writeback", patient_pk=item.patient_id, object_type="finding", object_id=item.finding_id,
                         details={"resource_type": resource["resourceType"], "resource_id": str(stored["id"])[:64]})
            break
        else:
            raise last_unsupported or PermanentError("no resource type accepted")
    except RetryableError as exc:
        WriteBack.objects.filter(pk=wb.pk).update(status=WriteBack.Status.RETRYING, last_error=exc.message[:300])
        raise
    except PermanentError as exc:
        writeback_give_up(writeback_id=wb.pk, message=exc.message)
        raise
    wb.refresh_from_db()
    return wb


def writeback_give_up(*, writeback_id: int, message: str) -> None:
    WriteBack.objects.filter(pk=writeback_id).update(status=WriteBack.Status.FAILED, last_error=message[:300])
    wb = WriteBack.objects.select_related("item").get(pk=writeback_id)
    audit_record(action="triage.writeback", outcome="error", patient_pk=wb.item.patient_id, object_type="finding",
                 object_id=wb.item.finding_id, details={"error": message[:120]})


def writeback_retry(*, writeback: WriteBack, user: User) -> WriteBack:
    """A reviewer asks for another try after a visible failure."""
    from .tasks import writeback_send_task

    updated = WriteBack.objects.filter(pk=writeback.pk, status=WriteBack.Status.FAILED).update(status=WriteBack.Status.PENDING)
    if updated:
        audit_record(action="triage.writeback_retry", actor=user, patient_pk=writeback.item.patient_id, object_type="finding",
                     object_id=writeback.item.finding_id)
        writeback_send_task.delay_on_commit(writeback.pk)
    writeback.refresh_from_db()
    return writeback

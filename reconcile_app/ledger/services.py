"""Truth maintenance across both streams, each propagation in one transaction: a withdrawn source
revokes what was derived from it (memories, findings, queue items, copies written to the EHR); a new
record version re-evaluates only the findings its changed resources touch; a later statement, an
accepted correction or an expired state re-checks the findings resting on the old one."""
from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from reconcile_app.audit.services import audit_record
from reconcile_app.core.exceptions import RetryableError
from reconcile_app.fhir.selectors import snapshot_latest
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.services import (
    memories_expire,
    memories_revoke_for_session,
    memory_correction_accept,
    memory_correction_reject,
)
from reconcile_app.reconciliation.justification import autoclose_allowed, is_touched, record_changes
from reconcile_app.reconciliation.models import Finding, FindingEvent
from reconcile_app.reconciliation.selectors import (
    finding_justification,
    findings_current_for_patient,
    snapshot_versions,
)
from reconcile_app.reconciliation.services import (
    Reverdict,
    finding_close,
    finding_event,
    finding_supersede,
    findings_close_batch,
    findings_evaluate_memories,
    findings_reevaluate,
    findings_revoke,
)
from reconcile_app.transcripts.models import Session
from reconcile_app.triage.models import TriageQuote
from reconcile_app.triage.services import (
    triage_items_route,
    triage_open_item_for,
    triage_quotes_close,
    triage_reviewed_finding_ids,
    writebacks_withdraw,
)

logger = logging.getLogger(__name__)
Q_ = TriageQuote.Closed
DISCREPANCIES = (Finding.Kind.CONTRADICTION, Finding.Kind.GAP)
AUTOCLOSED = "autoclosed"  # FindingEvent action: its discrepancy closed on its own (the flapping guard counts these)


def _is_discrepancy(finding: Finding | None) -> bool:
    return finding is not None and finding.kind in DISCREPANCIES


# --- revocation ---------------------------------------------------------------------------------


@dataclass
class Revocation:
    """What a withdrawal took with it, counted (the audit row and the report carry these numbers)."""

    memories: int = 0
    findings_revoked: int = 0
    findings_kept: int = 0  # reviewed: kept as decided, marked
    items_withdrawn: int = 0
    items_marked: int = 0
    items_recomputed: int = 0
    retractions: int = 0
    writes_cancelled: int = 0
    restored: int = 0
    memory_ids: list[int] = field(default_factory=list)
    finding_ids: list[int] = field(default_factory=list)


def session_revoke(*, session: Session, user: User | None = None, reason: str = "consent withdrawn") -> Revocation:
    """Consent withdrawn for a session: breadth-first over provenance, every memory derived from it is
    revoked (its words removed), their findings revoked, or kept and marked where a person decided on
    them; their queue items withdrawn (or marked), write-backs retracted in the EHR (or cancelled when
    not yet written); earlier states they had outdated are believed again and re-evaluated. One
    transaction: a crash part-way leaves everything as it was."""
    with transaction.atomic():
        revoked, restored = memories_revoke_for_session(session=session, reason=reason, actor=user)
        memory_ids = [m.pk for m in revoked]
        candidate_ids = list(Finding.objects.filter(memory_id__in=memory_ids).exclude(status=Finding.Status.REVOKED).values_list("pk", flat=True))
        reviewed = triage_reviewed_finding_ids(finding_ids=candidate_ids)
        findings, kept = findings_revoke(memory_ids=memory_ids, reviewed=reviewed, reason=f"{reason} (session #{session.pk})", actor=user)
        items = triage_quotes_close(findings=[*findings, *kept], reason=Q_.WITHDRAWN, user=user)
        writes = writebacks_withdraw(findings=[*findings, *kept], user=user, reason=reason)
        _reevaluate_restored(restored=restored, user=user)
        result = Revocation(
            memories=len(revoked), findings_revoked=len(findings), findings_kept=len(kept),
            items_withdrawn=len(items["closed"]), items_marked=len(items["marked"]), items_recomputed=len(items["recomputed"]),
            retractions=writes["retractions"], writes_cancelled=writes["cancelled"], restored=len(restored),
            memory_ids=memory_ids, finding_ids=[f.pk for f in [*findings, *kept]],
        )
        audit_record(action="ledger.revoke", actor=user, patient_pk=session.patient_id, object_type="session", object_id=session.pk,
                     details={k: v for k, v in asdict(result).items() if not k.endswith("_ids")})
    logger.info("session %s revoked: %s memories, %s findings", session.pk, result.memories, result.findings_revoked)
    return result


def _reevaluate_restored(*, restored: list[Memory], user: User | None) -> None:
    """A restored state whose finding was closed when it was outdated gets a verdict again."""
    without = [m for m in restored if not Finding.objects.filter(memory=m, status=Finding.Status.CURRENT).exists()]
    if not without:
        return
    snapshot = snapshot_latest(patient=without[0].patient_id)
    if snapshot is None:
        return
    created = findings_evaluate_memories(memories=without, snapshot=snapshot, actor=user,
                                         reason="its later state was revoked: believed again")
    triage_items_route(findings=[f for f in created.values() if _is_discrepancy(f)])


# --- re-evaluation after a record change ------------------------------------------------------------


@dataclass
class Reevaluation:
    snapshot_version: int = 0
    checked: int = 0  # current findings made against an earlier version
    touched: int = 0  # ... whose justification a changed resource touches
    changed: int = 0  # ... whose verdict changed (a new finding)
    resolved: int = 0  # open items closed: resolved by EHR update
    held: int = 0  # ... left open by the flapping guard
    routed: int = 0  # new discrepancies routed to the queue


def flap_window() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "LEDGER_FLAP_WINDOW_SECONDS", 7 * 24 * 3600)))


def flap_limit() -> int:
    return int(getattr(settings, "LEDGER_FLAP_LIMIT", 1))


def _autoclose_allowed(*, memory_id: int, now: datetime) -> bool:
    earlier = FindingEvent.objects.filter(finding__memory_id=memory_id, action=AUTOCLOSED).values_list("at", flat=True)
    return autoclose_allowed(earlier_autocloses=list(earlier), now=now, window=flap_window(), limit=flap_limit())


def lease_token() -> str:
    return f"ledger-{uuid.uuid4().hex}"


def record_reevaluate(*, patient_id: int, user: User | None = None) -> Reevaluation:
    """Re-evaluate the patient's current findings against the latest record version, holding the
    patient's pipeline lease (so no session is half-reconciled meanwhile; busy -> retry later)."""
    from reconcile_app.pipeline import lease_claim, lease_release

    token = lease_token()
    if not lease_claim(patient_id=patient_id, token=token):
        raise RetryableError("the patient's pipeline is working; re-evaluation waits for it")
    try:
        return _record_reevaluate(patient_id=patient_id, user=user)
    finally:
        lease_release(patient_id=patient_id, token=token)


def _record_reevaluate(*, patient_id: int, user: User | None) -> Reevaluation:
    result = Reevaluation()
    with transaction.atomic():
        snapshot = snapshot_latest(patient=patient_id)
        if snapshot is None:
            return result
        result.snapshot_version = snapshot.version
        stale = [f for f in findings_current_for_patient(patient=patient_id) if (f.checked_snapshot_id or f.snapshot_id) != snapshot.pk]
        result.checked = len(stale)
        if not stale:
            return result
        latest = snapshot_versions(snapshot=snapshot)
        changes_from: dict[int, dict] = {}
        touched: list[Finding] = []
        untouched: list[int] = []
        for finding in stale:
            old = finding.checked_snapshot or finding.snapshot
            if old.pk not in changes_from:
                changes_from[old.pk] = record_changes(snapshot_versions(snapshot=old), latest)
            if is_touched(finding_justification(finding), changes_from[old.pk]):
                touched.append(finding)
            else:
                untouched.append(finding.pk)
        Finding.objects.filter(pk__in=untouched).update(checked_snapshot=snapshot)  # nothing it rests on changed
        result.touched = len(touched)
        reverdicts = findings_reevaluate(findings=touched, snapshot=snapshot, code="ehr_update", actor=user,
                                         reason=f"record version {snapshot.version}")
        _triage_after_reverdicts(reverdicts=reverdicts, result=result, user=user)
        audit_record(action="ledger.reevaluate", actor=user, patient_pk=patient_id, object_type="snapshot", object_id=snapshot.pk,
                     details={k: v for k, v in asdict(result).items()})
    logger.info("patient %s re-evaluated against v%s: %s touched, %s changed", patient_id, result.snapshot_version,
                result.touched, result.changed)
    return result


def _more_urgent(new: Finding, old: Finding) -> bool:
    rank = {"low": 1, "medium": 2, "high": 3}
    return (new.safety_critical and not old.safety_critical) or rank.get(new.severity, 0) > rank.get(old.severity, 0)


def _triage_after_reverdicts(*, reverdicts: list[Reverdict], result: Reevaluation, user: User | None) -> None:
    """Carry changed verdicts to the queue. A discrepancy the record now agrees with closes as resolved
    by EHR update (once per flapping window; after that it waits for a person). A new discrepancy, or
    one of another kind, is routed (joining the open item of its concept, or a new one). A re-graded
    discrepancy joins its open item; one a person already decided is only noted on that item, unless
    it became more urgent."""
    now = timezone.now()
    to_route: list[Finding] = []
    regraded: list[Finding] = []
    for verdict in reverdicts:
        old, new = verdict.old, verdict.new
        if new is None:
            continue
        result.changed += 1
        open_item = triage_open_item_for(finding=old)
        same_kind = _is_discrepancy(old) and _is_discrepancy(new) and new.kind == old.kind
        if same_kind:
            regraded.append(old)
            if open_item is not None or not TriageQuote.objects.filter(finding=old).exists() or _more_urgent(new, old):
                to_route.append(new)
            continue
        if _is_discrepancy(new):
            to_route.append(new)
        if not _is_discrepancy(old):
            continue
        reason = Q_.RESOLVED_BY_EHR if not _is_discrepancy(new) else Q_.REEVALUATED
        allowed = open_item is None or _autoclose_allowed(memory_id=old.memory_id, now=now)
        outcome = triage_quotes_close(findings=[old], reason=reason, user=user, close_items=allowed)
        if open_item is not None and open_item.pk in outcome["closed"]:
            finding_event(finding=old, action=AUTOCLOSED, reason=f"its open item closed: {reason}", actor=user)
            result.resolved += 1
        result.held += len(outcome["held"])
    triage_items_route(findings=to_route)
    result.routed = len(to_route)
    if regraded:  # after routing: the new finding has joined the open item, so the old quote can close
        triage_quotes_close(findings=regraded, reason=Q_.REEVALUATED, user=user)


# --- a later statement, a correction, a time to live --------------------------------------------------


def session_chain_recheck(*, session: Session) -> int:
    """After a session is routed: the findings of the states its memories outdated are re-checked.
    Each is superseded by the newer memory's finding; its open quote closes (a later statement replaced
    it), so an item whose discrepancy the patient no longer states resolves on its own, while one the
    newer statement repeats keeps it as its live quote. Returns how many findings were re-checked."""
    newer = list(Memory.objects.filter(session=session, supersedes__isnull=False, supersedes__status=Memory.Status.OUTDATED)
                 .values_list("pk", "supersedes_id"))
    if not newer:
        return 0
    # The current findings of both ends of every link, read once (not twice per link). Their statuses are followed
    # in memory as they are superseded, so each link sees what one query per link would have seen at its turn.
    pool = list(Finding.objects.filter(memory_id__in={pk for link in newer for pk in link}, status=Finding.Status.CURRENT)
                .defer("citations", "explanation", "justification", "gate_notes").order_by("id"))
    with transaction.atomic():
        # The steps as they follow one another (each link sees the statuses the links before it left), written
        # at once: one UPDATE and one INSERT of events rather than two statements per finding. Should a finding
        # have changed meanwhile, the links are taken one finding at a time, as before.
        steps, quotes = _chain_steps(newer=newer, pool=pool, session=session, statuses={f.pk: f.status for f in pool})
        if not findings_close_batch(steps=steps, code="later_statement"):
            steps, quotes = _chain_steps(newer=newer, pool=pool, session=session, statuses=None)
        for discrepancies in quotes:
            triage_quotes_close(findings=discrepancies, reason=Q_.LATER_STATEMENT)
    return len(steps)


def _chain_steps(*, newer: list[tuple[int, int]], pool: list[Finding], session: Session,
                 statuses: dict[int, str] | None) -> tuple[list[tuple[Finding, Finding | None, str]], list[list[Finding]]]:
    """session_chain_recheck's steps, link by link: each current finding of the outdated state is superseded by the
    newer state's current finding (closed where it has none), and the discrepancies among them lose their quotes.
    With `statuses` (id -> status, followed here as the steps change them) nothing is written: the steps are
    returned for findings_close_batch. Without, each step is written as it comes (finding_supersede, finding_close)."""
    current = (lambda f: statuses[f.pk] == Finding.Status.CURRENT) if statuses is not None else (lambda f: f.status == Finding.Status.CURRENT)
    steps: list[tuple[Finding, Finding | None, str]] = []
    quotes: list[list[Finding]] = []
    for memory_id, superseded_id in newer:
        replacement = next((f for f in reversed(pool) if f.memory_id == memory_id and current(f)), None)
        olds = [f for f in pool if f.memory_id == superseded_id and current(f)]
        for old in olds:
            reason = f"a later state: memory #{memory_id} (session #{session.pk})"
            steps.append((old, replacement, reason))
            if statuses is not None:
                statuses[old.pk] = Finding.Status.SUPERSEDED if replacement is not None else Finding.Status.CLOSED
            elif replacement is not None:
                finding_supersede(finding=old, by=replacement, code="later_statement", reason=reason)
            else:
                finding_close(finding=old, code="later_statement", reason=reason)
        discrepancies = [f for f in olds if _is_discrepancy(f)]
        if discrepancies:
            quotes.append(discrepancies)
    return steps, quotes


def correction_accept(*, correction: Memory, user: User, note: str = "") -> Finding | None:
    """Accept a correction and carry it through: the correction is reconciled against the latest record
    (through the engine's public interface), its finding supersedes the original's, the original's open
    quotes close (the memory was corrected) and a discrepancy the correction raises is routed."""
    with transaction.atomic():
        original, correction = memory_correction_accept(correction=correction, actor=user, note=note)
        snapshot = snapshot_latest(patient=original.patient_id)
        if snapshot is None:
            return None
        new = findings_evaluate_memories(memories=[correction], snapshot=snapshot, actor=user,
                                         reason=f"correction #{correction.pk} of memory #{original.pk} accepted")[correction.pk]
        olds = list(Finding.objects.filter(memory=original, status=Finding.Status.CURRENT))
        for old in olds:
            finding_supersede(finding=old, by=new, code="memory_corrected", actor=user, reason=f"memory corrected by #{correction.pk}")
        if _is_discrepancy(new):
            triage_items_route(findings=[new])
        triage_quotes_close(findings=[f for f in olds if _is_discrepancy(f)], reason=Q_.CORRECTED, user=user)
        return new


def correction_reject(*, correction: Memory, user: User, note: str = "") -> Memory:
    original, _ = memory_correction_reject(correction=correction, actor=user, note=note)
    return original


@dataclass
class Expiry:
    memories: int = 0
    findings: int = 0


def memories_expire_due(*, now: datetime | None = None) -> Expiry:
    """Evolving states past their time to live become outdated; their findings close and open quotes
    go. A memory with a safety-critical finding is a safety fact and never expires."""
    now = now or timezone.now()
    with transaction.atomic():
        safety = set(Finding.objects.filter(status=Finding.Status.CURRENT, safety_critical=True, memory__expires_at__isnull=False)
                     .values_list("memory_id", flat=True))
        expired = memories_expire(now=now, keep=safety)
        closed: list[Finding] = []
        for memory in expired:
            for finding in Finding.objects.filter(memory=memory, status=Finding.Status.CURRENT):
                if finding_close(finding=finding, code="memory_outdated", reason="its memory's time to live passed"):
                    closed.append(finding)
        triage_quotes_close(findings=[f for f in closed if _is_discrepancy(f)], reason=Q_.OUTDATED)
        by_patient: dict[int, int] = defaultdict(int)
        for memory in expired:
            by_patient[memory.patient_id] += 1
        for patient_id, count in by_patient.items():
            audit_record(action="ledger.expire", patient_pk=patient_id, object_type="patient", object_id=patient_id,
                         details={"memories": count})
    return Expiry(memories=len(expired), findings=len(closed))

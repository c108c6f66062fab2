"""Write side of reconciliation: run an engine over a session's memories against a snapshot; re-evaluate
findings when the record or a memory changes; supersede, close, revoke and mark them, each change logged."""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import BigIntegerField, Case, CharField, Value, When
from django.utils import timezone

from reconcile_app.core.exceptions import PermanentError
from reconcile_app.core.runs import run_mark_failed, run_mark_running
from reconcile_app.fhir.models import RecordSnapshot
from reconcile_app.fhir.selectors import clinical_record_for
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.selectors import EarlierKeys, memory_drafts_history, memory_list_for_session, memory_list_with_drafts, memory_to_draft
from reconcile_app.reconciliation.types import FindingDraft
from reconcile_app.transcripts.models import Session

from .engines import get_reconciler
from .gate import citation_gate
from .justification import justification_for, verdict_key
from .models import Finding, FindingEvent, ReconciliationRun
from .selectors import snapshot_versions

logger = logging.getLogger(__name__)


def reconciliation_run_get_or_create(*, session: Session, snapshot: RecordSnapshot, engine: str | None = None) -> ReconciliationRun:
    reconciler = get_reconciler(engine)
    run, _ = ReconciliationRun.objects.get_or_create(
        session=session, snapshot=snapshot, engine=reconciler.name, engine_version=reconciler.version
    )
    return run


def reconciliation_run_execute(*, run_id: int, engine: str | None = None, run: ReconciliationRun | None = None,
                               earlier: EarlierKeys | None = None) -> ReconciliationRun:
    """Idempotent like extraction: findings are written with the 'done' mark in one transaction. `run`: the
    row as the caller has just read it with its session and snapshot (the pipeline), not read again; `earlier`:
    the keys of the session's earlier memories the caller read for its extraction (memory_earlier_keys)."""
    if run is None or run.pk != run_id:
        # The snapshot's row without its resources: the record comes from the per-snapshot cache.
        run = (ReconciliationRun.objects.select_related("session", "session__patient", "snapshot").defer("snapshot__resources")
               .get(pk=run_id))
    if run.status == ReconciliationRun.Status.DONE:
        return run
    session = run.session
    if session.withdrawn_at is not None:
        raise PermanentError("session was withdrawn")
    run_mark_running(run)
    reconciler = get_reconciler(engine or run.engine)
    record = clinical_record_for(snapshot=run.snapshot)
    memories, memory_drafts = memory_list_with_drafts(session=session)
    history = memory_drafts_history(session=session, keys=earlier)
    try:
        drafts = reconciler.reconcile(memory_drafts, record, history=history)
    except PermanentError as exc:  # a RetryableError propagates to the task, which retries
        run_mark_failed(run, exc)
        raise
    if len(drafts) != len(memories):
        raise PermanentError(f"engine returned {len(drafts)} findings for {len(memories)} memories")
    with transaction.atomic():
        # The run's row again, locked; its snapshot is the one already read with the run (a snapshot never changes).
        snapshot = run.snapshot
        run = ReconciliationRun.objects.select_for_update().get(pk=run.pk)
        run.snapshot = snapshot
        if run.status == ReconciliationRun.Status.DONE:
            return run
        # A pipeline run's findings are written only in the transaction that marks it done: one not done has none.
        Finding.objects.bulk_create([finding_build(run=run, memory=memory, draft=citation_gate(draft, record))
                                     for memory, draft in zip(memories, drafts)])
        run.status = ReconciliationRun.Status.DONE
        run.finished_at = timezone.now()
        run.stats = {"memories": len(memories), "discrepancies": sum(1 for d in drafts if d.is_discrepancy),
                     **getattr(reconciler, "last_usage", {})}
        run.save(update_fields=["status", "finished_at", "stats"])
    logger.info("reconciliation run %s done: %s findings", run.pk, len(drafts))
    return run


def finding_store(*, run: ReconciliationRun, memory: Memory, draft: FindingDraft) -> Finding:
    """A finding with its justification: the memory and the exact versions of the resources it cites."""
    finding = finding_build(run=run, memory=memory, draft=draft)
    finding.save(force_insert=True)
    return finding


def finding_build(*, run: ReconciliationRun, memory: Memory, draft: FindingDraft) -> Finding:
    """The finding finding_store saves, not saved yet (a pipeline run inserts its session's findings at once)."""
    snapshot = run.snapshot
    citations = [c.as_dict() for c in draft.citations]
    return Finding(
        run=run,
        memory=memory,
        patient_id=memory.patient_id,
        session_id=run.session_id,
        snapshot=snapshot,
        checked_snapshot=snapshot,
        kind=draft.kind,
        severity=draft.severity,
        safety_critical=draft.safety_critical,
        category=draft.category,
        citations=citations,
        explanation=draft.explanation,
        rule=draft.rule[:80],
        engine=draft.engine or run.engine,
        engine_version=draft.engine_version or run.engine_version,
        gate_notes=draft.gate_notes,
        justification=justification_for(
            memory_id=memory.pk, memory_sha256=memory.content_sha256, category=memory.category, citations=citations,
            snapshot_id=snapshot.pk, snapshot_version=snapshot.version, snapshot_sha256=snapshot.content_sha256,
            versions=snapshot_versions(snapshot=snapshot),
        ),
    )


# --- the finding lifecycle ----------------------------------------------------------------------

NO_LONGER_SAID = (Memory.Status.REVOKED, Memory.Status.CORRECTED, Memory.Status.REJECTED)

def _label(actor: AbstractBaseUser | None, label: str = "") -> str:
    return (label or (getattr(actor, "username", "") if actor is not None else "") or "system")[:60]


def finding_event(*, finding: Finding, action: str, reason: str, from_status: str = "", to_status: str = "",
                  actor: AbstractBaseUser | None = None, actor_label: str = "", snapshot: RecordSnapshot | None = None,
                  justification: dict[str, Any] | None = None, related: Finding | None = None) -> FindingEvent:
    return FindingEvent.objects.create(
        finding=finding, actor=actor if getattr(actor, "is_authenticated", False) else None, actor_label=_label(actor, actor_label),
        action=action, from_status=from_status, to_status=to_status or from_status, reason=reason[:300], snapshot=snapshot,
        justification=justification or {}, related=related,
    )


def _close(*, finding: Finding, status: str, reason: str, code: str, actor: AbstractBaseUser | None, related: Finding | None = None,
           changes: dict[str, Any] | None = None) -> bool:
    """Conditional UPDATE from the state read: a finding leaves CURRENT (or, revoked, any state) once. The
    fields it wrote are then set on `finding` (no other field changes with it), rather than the row read again."""
    written = {"status": status, "closed_reason": code[:40],
               "superseded_by": related if status == Finding.Status.SUPERSEDED else None, **(changes or {})}
    updated = Finding.objects.filter(pk=finding.pk, status=finding.status).update(**written)
    if updated:
        finding_event(finding=finding, action=status if status != Finding.Status.CLOSED else "closed", reason=reason,
                      from_status=finding.status, to_status=status, actor=actor, related=related)
        for field, value in written.items():
            setattr(finding, field, value)
    return bool(updated)


def finding_supersede(*, finding: Finding, by: Finding, code: str, reason: str, actor: AbstractBaseUser | None = None) -> bool:
    """A later finding replaces this one (a re-evaluation, a later state of the memory's chain, a correction)."""
    if finding.status != Finding.Status.CURRENT or finding.pk == by.pk:
        return False
    return _close(finding=finding, status=Finding.Status.SUPERSEDED, reason=reason, code=code, actor=actor, related=by)


def finding_close(*, finding: Finding, code: str, reason: str, actor: AbstractBaseUser | None = None) -> bool:
    """Its memory no longer stands and nothing replaces it (e.g. the memory's time to live passed)."""
    if finding.status != Finding.Status.CURRENT:
        return False
    return _close(finding=finding, status=Finding.Status.CLOSED, reason=reason, code=code, actor=actor)


class _ChangedMeanwhile(Exception):
    pass


def findings_close_batch(*, steps: list[tuple[Finding, Finding | None, str]], code: str) -> bool:
    """Several findings, each CURRENT as read, superseded by their replacement (or closed where there is none),
    as finding_supersede and finding_close would one after another, in two statements: one conditional UPDATE of
    them all and their events inserted together, in the same order. Should any of them have left CURRENT meanwhile,
    nothing is written and False is returned: the caller takes them one at a time, each step deciding on its own.
    The fields written are set on the findings, as _close does."""
    if not steps:
        return True
    if len({finding.pk for finding, _by, _reason in steps}) != len(steps) or any(
            finding.status != Finding.Status.CURRENT or (by is not None and by.pk == finding.pk) for finding, by, _reason in steps):
        return False
    status = {finding.pk: Finding.Status.SUPERSEDED if by is not None else Finding.Status.CLOSED for finding, by, _reason in steps}
    replaced = [When(pk=finding.pk, then=Value(by.pk)) for finding, by, _reason in steps if by is not None]
    try:
        with transaction.atomic():
            updated = Finding.objects.filter(pk__in=list(status), status=Finding.Status.CURRENT).update(
                status=Case(*[When(pk=pk, then=Value(to)) for pk, to in status.items()], output_field=CharField()),
                closed_reason=code[:40],
                superseded_by_id=Case(*replaced, default=Value(None), output_field=BigIntegerField()) if replaced else None,
            )
            if updated != len(steps):
                raise _ChangedMeanwhile
            FindingEvent.objects.bulk_create([
                FindingEvent(finding=finding, actor=None, actor_label=_label(None), action="closed" if by is None else status[finding.pk],
                             from_status=Finding.Status.CURRENT, to_status=status[finding.pk], reason=reason[:300], snapshot=None,
                             justification={}, related=by)
                for finding, by, reason in steps
            ])
    except _ChangedMeanwhile:
        return False
    for finding, by, _reason in steps:
        finding.status, finding.closed_reason, finding.superseded_by = status[finding.pk], code[:40], by
    return True


# The engine's text restates the patient's words: it goes with them when a source is withdrawn.
REVOKED_WORDS = {"explanation": ""}


def findings_revoke(*, memory_ids: Iterable[int], reviewed: Iterable[int], reason: str,
                    actor: AbstractBaseUser | None = None) -> tuple[list[Finding], list[Finding]]:
    """Every finding of the revoked memories: a reviewed one (a person decided on it) is kept as it is
    and marked; any other is revoked. Returns (revoked, marked)."""
    reviewed_ids = set(reviewed)
    revoked: list[Finding] = []
    marked: list[Finding] = []
    now = timezone.now()
    for finding in Finding.objects.filter(memory_id__in=list(memory_ids)).exclude(status=Finding.Status.REVOKED).order_by("id"):
        if finding.pk in reviewed_ids:
            if finding.source_revoked_at is None:
                Finding.objects.filter(pk=finding.pk).update(source_revoked_at=now)
                finding_event(finding=finding, action="source_revoked", reason=f"kept (reviewed); {reason}",
                              from_status=finding.status, actor=actor)
                finding.refresh_from_db()
                marked.append(finding)
            continue
        if _close(finding=finding, status=Finding.Status.REVOKED, reason=reason, code="source_withdrawn", actor=actor,
                  changes={**REVOKED_WORDS, "source_revoked_at": now}):
            revoked.append(finding)
    return revoked, marked


@dataclass
class Reverdict:
    """One finding re-evaluated: `new` is None when the verdict stands (only its justification moved)."""

    old: Finding
    new: Finding | None

    @property
    def changed(self) -> bool:
        return self.new is not None


def _run_for(*, session: Session, snapshot: RecordSnapshot, purpose: str, engine: str | None) -> ReconciliationRun:
    reconciler = get_reconciler(engine)
    now = timezone.now()
    return ReconciliationRun.objects.create(session=session, snapshot=snapshot, engine=reconciler.name,
                                            engine_version=reconciler.version, purpose=purpose,
                                            status=ReconciliationRun.Status.DONE, started_at=now, finished_at=now)


def _verdicts(*, session: Session, memories: list[Memory], snapshot: RecordSnapshot, engine: str | None) -> dict[int, FindingDraft]:
    """The engine's verdict on each of `memories` (all of one session), through its public interface,
    given the same context the pipeline gave it: the session's memories and the earlier history."""
    record = clinical_record_for(snapshot=snapshot)
    # The session's statements as the pipeline gave them, less those no longer the patient's (a memory
    # replaced by its correction must not weigh on the correction's verdict).
    context = [m for m in memory_list_for_session(session=session) if m.status not in NO_LONGER_SAID]
    wanted = {m.pk for m in memories}
    batch = context + [m for m in memories if m.pk not in {c.pk for c in context}]
    drafts = get_reconciler(engine).reconcile([memory_to_draft(m) for m in batch], record, history=memory_drafts_history(session=session))
    if len(drafts) != len(batch):
        raise PermanentError(f"engine returned {len(drafts)} findings for {len(batch)} memories")
    return {m.pk: citation_gate(d, record) for m, d in zip(batch, drafts) if m.pk in wanted}


def findings_reevaluate(*, findings: Iterable[Finding], snapshot: RecordSnapshot, code: str, reason: str,
                        actor: AbstractBaseUser | None = None, engine: str | None = None) -> list[Reverdict]:
    """Re-evaluate current findings against `snapshot`. The caller holds the transaction (and the
    patient's lease). A verdict that stands is re-checked: its event records the new justification and
    `checked_snapshot` moves. Another verdict is a new finding that supersedes the old one."""
    by_session: dict[int, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.status == Finding.Status.CURRENT:
            by_session[finding.session_id].append(finding)
    results: list[Reverdict] = []
    versions = snapshot_versions(snapshot=snapshot)
    for session_findings in by_session.values():
        session = session_findings[0].session
        verdicts = _verdicts(session=session, memories=[f.memory for f in session_findings], snapshot=snapshot, engine=engine)
        run: ReconciliationRun | None = None
        for old in session_findings:
            draft = verdicts[old.memory_id]
            citations = [c.as_dict() for c in draft.citations]
            same = verdict_key(kind=old.kind, severity=old.severity, safety_critical=old.safety_critical, citations=old.citations or []) == \
                verdict_key(kind=draft.kind, severity=draft.severity, safety_critical=draft.safety_critical, citations=citations)
            if same:
                justification = justification_for(
                    memory_id=old.memory_id, memory_sha256=old.memory.content_sha256, category=old.memory.category,
                    citations=citations, snapshot_id=snapshot.pk, snapshot_version=snapshot.version,
                    snapshot_sha256=snapshot.content_sha256, versions=versions)
                Finding.objects.filter(pk=old.pk).update(checked_snapshot=snapshot)
                finding_event(finding=old, action="rechecked", reason=f"verdict stands; {reason}", from_status=old.status,
                              actor=actor, snapshot=snapshot, justification=justification)
                results.append(Reverdict(old=old, new=None))
                continue
            if run is None:
                run = _run_for(session=session, snapshot=snapshot, purpose=ReconciliationRun.Purpose.REEVALUATION, engine=engine)
            new = finding_store(run=run, memory=old.memory, draft=draft)
            finding_event(finding=new, action="created", reason=f"re-evaluation of finding #{old.pk}; {reason}",
                          to_status=new.status, actor=actor, snapshot=snapshot, related=old)
            finding_supersede(finding=old, by=new, code=code, reason=reason, actor=actor)
            results.append(Reverdict(old=old, new=new))
    return results


def findings_evaluate_memories(*, memories: Iterable[Memory], snapshot: RecordSnapshot, reason: str,
                               actor: AbstractBaseUser | None = None, engine: str | None = None) -> dict[int, Finding]:
    """New findings for memories that have none standing (an accepted correction, a restored state):
    memory id -> finding. The caller holds the transaction."""
    by_session: dict[int, list[Memory]] = defaultdict(list)
    for memory in memories:
        by_session[memory.session_id].append(memory)
    created: dict[int, Finding] = {}
    for session_memories in by_session.values():
        session = session_memories[0].session
        verdicts = _verdicts(session=session, memories=session_memories, snapshot=snapshot, engine=engine)
        run = _run_for(session=session, snapshot=snapshot, purpose=ReconciliationRun.Purpose.MEMORY_CHANGE, engine=engine)
        for memory in session_memories:
            finding = finding_store(run=run, memory=memory, draft=verdicts[memory.pk])
            finding_event(finding=finding, action="created", reason=reason, to_status=finding.status, actor=actor, snapshot=snapshot)
            created[memory.pk] = finding
    return created

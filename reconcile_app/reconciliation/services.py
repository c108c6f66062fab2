"""Write side of reconciliation: run an engine over a session's memories against a snapshot."""
from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from reconcile_app.core.exceptions import PermanentError
from reconcile_app.core.runs import run_mark_failed, run_mark_running
from reconcile_app.fhir.models import RecordSnapshot
from reconcile_app.fhir.selectors import clinical_record_for
from reconcile_app.narrative.selectors import memory_drafts_history, memory_list_for_session, memory_to_draft
from reconcile_app.transcripts.models import Session

from .engines import get_reconciler
from .gate import citation_gate
from .models import Finding, ReconciliationRun

logger = logging.getLogger(__name__)


def reconciliation_run_get_or_create(*, session: Session, snapshot: RecordSnapshot, engine: str | None = None) -> ReconciliationRun:
    reconciler = get_reconciler(engine)
    run, _ = ReconciliationRun.objects.get_or_create(
        session=session, snapshot=snapshot, engine=reconciler.name, engine_version=reconciler.version
    )
    return run


def reconciliation_run_execute(*, run_id: int, engine: str | None = None) -> ReconciliationRun:
    """Idempotent like extraction: findings are written with the 'done' mark in one transaction."""
    # The snapshot's row without its resources: the record comes from the per-snapshot cache.
    run = ReconciliationRun.objects.select_related("session", "session__patient", "snapshot").defer("snapshot__resources").get(pk=run_id)
    if run.status == ReconciliationRun.Status.DONE:
        return run
    session = run.session
    if session.withdrawn_at is not None:
        raise PermanentError("session was withdrawn")
    run_mark_running(run)
    reconciler = get_reconciler(engine or run.engine)
    record = clinical_record_for(snapshot=run.snapshot)
    memories = list(memory_list_for_session(session=session))
    history = memory_drafts_history(session=session)
    try:
        drafts = reconciler.reconcile([memory_to_draft(m) for m in memories], record, history=history)
    except PermanentError as exc:  # a RetryableError propagates to the task, which retries
        run_mark_failed(run, exc)
        raise
    if len(drafts) != len(memories):
        raise PermanentError(f"engine returned {len(drafts)} findings for {len(memories)} memories")
    with transaction.atomic():
        run = (ReconciliationRun.objects.select_for_update(of=("self",)).select_related("snapshot").defer("snapshot__resources")
               .get(pk=run.pk))
        if run.status == ReconciliationRun.Status.DONE:
            return run
        run.findings.all().delete()
        for memory, draft in zip(memories, drafts):
            draft = citation_gate(draft, record)
            Finding.objects.create(
                run=run,
                memory=memory,
                patient=session.patient,
                session=session,
                snapshot=run.snapshot,
                kind=draft.kind,
                severity=draft.severity,
                safety_critical=draft.safety_critical,
                category=draft.category,
                citations=[c.as_dict() for c in draft.citations],
                explanation=draft.explanation,
                rule=draft.rule[:80],
                engine=draft.engine or run.engine,
                engine_version=draft.engine_version or run.engine_version,
                gate_notes=draft.gate_notes,
            )
        run.status = ReconciliationRun.Status.DONE
        run.finished_at = timezone.now()
        run.stats = {"memories": len(memories), "discrepancies": sum(1 for d in drafts if d.is_discrepancy),
                     **getattr(reconciler, "last_usage", {})}
        run.save(update_fields=["status", "finished_at", "stats"])
    logger.info("reconciliation run %s done: %s findings", run.pk, len(drafts))
    return run

"""Write side of the narrative stream: run an extraction engine over a session and store its deltas."""
from __future__ import annotations

import hashlib
import json
import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reconcile_app.core.exceptions import PermanentError
from reconcile_app.core.runs import run_mark_failed, run_mark_running
from reconcile_app.fhir.selectors import clinical_record_for, snapshot_latest
from reconcile_app.transcripts.models import Session, Turn

from .engines import get_extractor
from .models import ExtractionRun, Memory
from .selectors import memory_drafts_current, session_input_for
from .types import MemoryDraft, MemoryOp

logger = logging.getLogger(__name__)


def session_content_sha256(*, session: Session) -> str:
    rows = list(session.turns.order_by("seq").values_list("external_id", "speaker", "speaker_label", "at", "text"))
    payload = json.dumps([[r[0], r[1], r[2], r[3].isoformat(), r[4]] for r in rows], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def extraction_run_get_or_create(*, session: Session, engine: str | None = None) -> ExtractionRun:
    extractor = get_extractor(engine)
    run, _ = ExtractionRun.objects.get_or_create(
        session=session,
        engine=extractor.name,
        engine_version=extractor.version,
        input_sha256=session_content_sha256(session=session),
    )
    return run


def _memory_sha256(draft: MemoryDraft) -> str:
    key = [draft.anchor_turn_id, draft.category, draft.subject, draft.assertion, draft.quote_start, draft.quote_end,
           draft.content, sorted(draft.attributes.items(), key=str).__repr__()]
    return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()


def extraction_run_execute(*, run_id: int, engine: str | None = None) -> ExtractionRun:
    """Idempotent: a done run is returned as is; a run left 'running' by a killed worker is redone.

    Memories are written in the same transaction that marks the run done, so a worker killed
    mid-way leaves nothing behind and the redelivered task starts clean.
    """
    run = ExtractionRun.objects.select_related("session", "session__patient").get(pk=run_id)
    if run.status == ExtractionRun.Status.DONE:
        return run
    session = run.session
    if session.withdrawn_at is not None:
        raise PermanentError("session was withdrawn")
    run_mark_running(run)
    extractor = get_extractor(engine or run.engine)
    snapshot = snapshot_latest(patient=session.patient)
    record = clinical_record_for(snapshot=snapshot) if snapshot else None
    prior = memory_drafts_current(patient=session.patient, before_session=session)
    try:
        drafts = extractor.extract_session(session_input_for(session=session), prior=prior, record=record)
    except PermanentError as exc:  # a RetryableError propagates to the task, which retries
        run_mark_failed(run, exc)
        raise
    with transaction.atomic():
        run = ExtractionRun.objects.select_for_update().get(pk=run.pk)
        if run.status == ExtractionRun.Status.DONE:  # a duplicate delivery finished first
            return run
        run.memories.all().delete()
        turns = {t.external_id: t for t in Turn.objects.filter(session=session)}
        created = memory_drafts_store(run=run, session=session, drafts=drafts, turns=turns)
        run.status = ExtractionRun.Status.DONE
        run.finished_at = timezone.now()
        # Token usage of LLM engines (counts only); rules engines have none.
        run.stats = {"memories": len(created), "turns": len(turns), **getattr(extractor, "last_usage", {})}
        run.save(update_fields=["status", "finished_at", "stats"])
    logger.info("extraction run %s done: %s memories", run.pk, len(created))
    return run


def memory_drafts_store(*, run: ExtractionRun, session: Session, drafts: list[MemoryDraft], turns: dict[str, Turn]) -> list[Memory]:
    created: list[Memory] = []
    seen: set[str] = set()
    for seq, draft in enumerate(drafts):
        digest = _memory_sha256(draft)
        if digest in seen or draft.anchor_turn_id not in turns:
            continue  # exact-duplicate guard; drafts must point at a real turn
        seen.add(digest)
        event = draft.event_time
        memory = Memory.objects.create(
            patient=session.patient,
            session=session,
            run=run,
            turn=turns[draft.anchor_turn_id],
            turn_ids=list(draft.turn_ids),
            seq=seq,
            category=draft.category,
            subject=draft.subject,
            subject_relation=draft.subject_relation,
            assertion=draft.assertion,
            attributes=draft.attributes,
            content=draft.content,
            quote=draft.quote,
            quote_start=draft.quote_start,
            quote_end=draft.quote_end,
            speaker=draft.speaker,
            event_time_text=(event.text[:120] if event else ""),
            event_start=event.start if event else None,
            event_end=event.end if event else None,
            mention_time=draft.mention_time,
            confidence=draft.confidence,
            engine=draft.engine or run.engine,
            engine_version=draft.engine_version or run.engine_version,
            chain_key=draft.chain_key[:120],
            op=draft.op,
            content_sha256=digest,
        )
        if draft.chain_key and draft.op in (MemoryOp.SUPERSEDE, MemoryOp.UPDATE):
            # Truth maintenance: earlier states stay, marked superseded, linked from the new one.
            earlier = (
                Memory.objects.filter(patient=session.patient, chain_key=draft.chain_key, status=Memory.Status.CURRENT)
                .exclude(pk=memory.pk)
                .filter(Q(session__started_at__lt=session.started_at) | Q(session=session, seq__lt=seq))
                .order_by("-mention_time", "-id")
            )
            previous = earlier.first()
            if previous is not None:
                memory.supersedes = previous
                memory.save(update_fields=["supersedes"])
                earlier.update(status=Memory.Status.SUPERSEDED)
        created.append(memory)
    return created


@transaction.atomic
def memories_revoke_for_session(*, session: Session) -> int:
    """Consent withdrawal: memories of the session are deleted with their findings (CASCADE)."""
    count, _ = Memory.objects.filter(session=session).delete()
    ExtractionRun.objects.filter(session=session).delete()
    return count

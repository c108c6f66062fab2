"""Reads of the narrative stream, and conversions from rows to the engines' plain data."""
from __future__ import annotations

from django.db.models import QuerySet

from reconcile_app.fhir.models import Patient
from reconcile_app.transcripts.models import Session

from .models import ExtractionRun, Memory
from .drafts import drafts_of
from .types import EventTime, MemoryDraft, SessionInput, TurnInput


def session_input_for(*, session: Session) -> SessionInput:
    turns = tuple(
        TurnInput(id=t.external_id, speaker=(t.speaker if t.speaker != "other" else (t.speaker_label or "other")), at=t.at, text=t.text)
        for t in session.turns.order_by("seq")
    )
    return SessionInput(id=session.external_id, started_at=session.started_at, turns=turns)


def memory_to_draft(memory: Memory) -> MemoryDraft:
    event = None
    if memory.event_time_text or memory.event_start:
        event = EventTime(text=memory.event_time_text, start=memory.event_start, end=memory.event_end)
    return MemoryDraft(
        category=memory.category,
        content=memory.content,
        anchor_turn_id=memory.turn.external_id,
        turn_ids=tuple(memory.turn_ids),
        quote=memory.quote,
        quote_start=memory.quote_start,
        quote_end=memory.quote_end,
        speaker=memory.speaker,
        mention_time=memory.mention_time,
        subject=memory.subject,
        subject_relation=memory.subject_relation,
        assertion=memory.assertion,
        attributes=dict(memory.attributes),
        event_time=event,
        confidence=memory.confidence,
        chain_key=memory.chain_key,
        op=memory.op,
        engine=memory.engine,
        engine_version=memory.engine_version,
    )


def memory_list_for_session(*, session: Session) -> QuerySet[Memory]:
    """Memories of the session's latest finished extraction run."""
    run = ExtractionRun.objects.filter(session=session, status=ExtractionRun.Status.DONE).order_by("-finished_at", "-id").first()
    if run is None:
        return Memory.objects.none()
    return Memory.objects.filter(run=run).exclude(status=Memory.Status.REVOKED).select_related("turn").order_by("seq")


def memory_drafts_current(*, patient: Patient, before_session: Session | None = None) -> list[MemoryDraft]:
    qs = Memory.objects.filter(patient=patient, status=Memory.Status.CURRENT).select_related("turn")
    if before_session is not None:
        qs = qs.filter(session__started_at__lt=before_session.started_at)
    return drafts_of(qs.order_by("mention_time", "seq"), convert=memory_to_draft)


def memory_drafts_history(*, session: Session) -> list[MemoryDraft]:
    """Every unrevoked memory of the patient's earlier sessions (superseded states included), oldest first."""
    qs = (
        Memory.objects.filter(patient=session.patient_id, session__started_at__lt=session.started_at)
        .exclude(status=Memory.Status.REVOKED)
        .select_related("turn")
        .order_by("mention_time", "seq")
    )
    return drafts_of(qs, convert=memory_to_draft)


def memory_history(*, memory: Memory) -> list[Memory]:
    """Earlier states of the memory's chain, newest first (the chain keeps every state)."""
    if not memory.chain_key:
        return []
    return list(
        Memory.objects.filter(patient=memory.patient_id, chain_key=memory.chain_key, mention_time__lte=memory.mention_time)
        .exclude(pk=memory.pk)
        .select_related("session")
        .order_by("-mention_time", "-id")
    )

"""Reads of the narrative stream, and conversions from rows to the engines' plain data."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime

from django.db.models import BooleanField, Case, Q, QuerySet, Subquery, Value, When

from reconcile_app.fhir.models import Patient
from reconcile_app.transcripts.models import Session

from .models import ExtractionRun, Memory
from .drafts import DraftKey, drafts_for_keys, drafts_of
from .types import EventTime, MemoryDraft, SessionInput, TurnInput

# What the engines read as the patient's statements: current ones, and an original whose correction
# is still waiting (it stands until someone decides); never a correction nobody has accepted yet.
BELIEVED = Q(status=Memory.Status.CURRENT) | Q(status=Memory.Status.NEEDS_REVIEW, origin=Memory.Origin.EXTRACTED)
# Statements that are no longer the patient's: revoked, replaced by a correction, a rejected correction,
# or a correction still waiting.
NOT_SAID = Q(status__in=(Memory.Status.REVOKED, Memory.Status.CORRECTED, Memory.Status.REJECTED)) | (
    Q(status=Memory.Status.NEEDS_REVIEW) & ~Q(origin=Memory.Origin.EXTRACTED))


# A turn as the extraction reads it: (external_id, speaker, speaker_label, at, text), in the session's order.
TurnRow = tuple[str, str, str, datetime, str]


def session_turn_rows(*, session: Session) -> list[TurnRow]:
    """The session's turns, read once for both the run's content hash and the engine's input."""
    return list(session.turns.order_by("seq").values_list("external_id", "speaker", "speaker_label", "at", "text"))


def session_input_for(*, session: Session, rows: list[TurnRow] | None = None) -> SessionInput:
    """`rows`: the session's turns as session_turn_rows read them (the pipeline has them already)."""
    turns = tuple(
        TurnInput(id=external_id, speaker=(speaker if speaker != "other" else (label or "other")), at=at, text=text)
        for external_id, speaker, label, at, text in (session_turn_rows(session=session) if rows is None else rows)
    )
    return SessionInput(id=session.external_id, started_at=session.started_at, turns=turns)


def memory_to_draft(memory: Memory) -> MemoryDraft:
    event = None
    if memory.event_time_text or memory.event_start:
        event = EventTime(text=memory.event_time_text, start=memory.event_start, end=memory.event_end)
    return MemoryDraft(
        category=memory.category,
        content=memory.content,
        anchor_turn_id=memory.turn.external_id if memory.turn_id else (memory.turn_ids[0] if memory.turn_ids else ""),
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
    """Memories the engine extracted in the session's latest finished run (corrections are not the
    engine's: they are reconciled on their own when accepted)."""
    # The run as a subquery: one statement (no run: NULL, no rows).
    run = ExtractionRun.objects.filter(session=session, status=ExtractionRun.Status.DONE).order_by("-finished_at", "-id").values("pk")[:1]
    return (Memory.objects.filter(run=Subquery(run), origin=Memory.Origin.EXTRACTED).exclude(status=Memory.Status.REVOKED)
            .select_related("turn").order_by("seq"))


# What a finding is built from (reconciliation.services.finding_build): the rest of the row is the draft's.
FINDING_FIELDS = ("id", "patient_id", "content_sha256", "category", "created_at")


def memory_list_with_drafts(*, session: Session) -> tuple[list[Memory], list[MemoryDraft]]:
    """memory_list_for_session's memories, each with only what a finding is built from, and their drafts (as
    memory_to_draft makes them) from the drafts cache: the session's memories were seeded there when their
    extraction stored them, so their rows are not read and decoded back. Should any draft be missing (the cache
    emptied, a memory changed between the reads), the whole rows are read as before."""
    memories = list(memory_list_for_session(session=session).select_related(None).only(*FINDING_FIELDS))
    drafts = drafts_for_keys([(m.pk, m.created_at) for m in memories], convert=memory_to_draft)
    if len(drafts) != len(memories):
        memories = list(memory_list_for_session(session=session))
        drafts = [memory_to_draft(m) for m in memories]
    return memories, drafts


def memory_drafts_current(*, patient: Patient, before_session: Session | None = None) -> list[MemoryDraft]:
    qs = Memory.objects.filter(BELIEVED, patient=patient).select_related("turn")
    if before_session is not None:
        qs = qs.filter(session__started_at__lt=before_session.started_at)
    return drafts_of(qs.order_by("mention_time", "seq"), convert=memory_to_draft)


def memory_drafts_history(*, session: Session, keys: EarlierKeys | None = None) -> list[MemoryDraft]:
    """Every memory of the patient's earlier sessions that is still the patient's (outdated states
    included; revoked, corrected and rejected ones not), oldest first. `keys`: memory_earlier_keys read for this
    session by the caller (the pipeline, before its extraction), so the keys are not read again."""
    if keys is not None:
        return drafts_for_keys(keys.history, convert=memory_to_draft)
    return drafts_of(_earlier_memories(session=session).select_related("turn"), convert=memory_to_draft)


def _earlier_memories(*, session: Session) -> QuerySet[Memory]:
    """The patient's memories of sessions before this one that are still the patient's, oldest first."""
    return (Memory.objects.filter(patient=session.patient_id, session__started_at__lt=session.started_at)
            .exclude(NOT_SAID).order_by("mention_time", "seq"))


@dataclass(frozen=True)
class EarlierKeys:
    """The drafts' keys of a session's earlier memories: `history` as memory_drafts_history reads them, and `current`,
    those of them memory_drafts_current reads (BELIEVED), in the same order."""
    history: list[DraftKey]
    current: list[DraftKey]


def memory_earlier_keys(*, session: Session) -> EarlierKeys:
    """One read for both the extraction's prior state and the reconciliation's history of a session: BELIEVED is a
    subset of the history (never NOT_SAID), and the extraction of the session changes no earlier memory's membership
    of the history (it only outdates current states, which the history keeps)."""
    history: list[DraftKey] = []
    current: list[DraftKey] = []
    believed = Case(When(BELIEVED, then=Value(True)), default=Value(False), output_field=BooleanField())
    for pk, created_at, is_believed in (_earlier_memories(session=session).annotate(believed=believed)
                                        .values_list("pk", "created_at", "believed")):
        history.append((pk, created_at))
        if is_believed:
            current.append((pk, created_at))
    return EarlierKeys(history=history, current=current)


def memory_history(*, memory: Memory) -> list[Memory]:
    """Earlier states of the memory's chain, newest first (the chain keeps every state; revoked ones
    have no words left, and corrections are shown with what they correct)."""
    if not memory.chain_key:
        return []
    return list(
        Memory.objects.filter(patient=memory.patient_id, chain_key=memory.chain_key, mention_time__lte=memory.mention_time,
                              origin=Memory.Origin.EXTRACTED)
        .exclude(pk=memory.pk)
        .exclude(status=Memory.Status.REVOKED)
        .select_related("session")
        .order_by("-mention_time", "-id")
    )


def memory_provenance_descendants(*, session: Session) -> list[Memory]:
    """Everything derived from the session's words, breadth-first over provenance: its memories, then
    the corrections of those, then theirs. Each memory once, in the order reached."""
    queue = deque(Memory.objects.filter(session=session).order_by("seq", "id"))
    seen: set[int] = set()
    found: list[Memory] = []
    while queue:
        memory = queue.popleft()
        if memory.pk in seen:
            continue
        seen.add(memory.pk)
        found.append(memory)
        queue.extend(Memory.objects.filter(corrects=memory).order_by("id"))
    return found


def memory_corrections_pending(*, patient: Patient | None = None) -> QuerySet[Memory]:
    """Corrections waiting for review, oldest first, with what they correct."""
    qs = Memory.objects.filter(status=Memory.Status.NEEDS_REVIEW).exclude(origin=Memory.Origin.EXTRACTED)
    if patient is not None:
        qs = qs.filter(patient=patient)
    return qs.select_related("corrects", "patient", "session").order_by("created_at", "id")

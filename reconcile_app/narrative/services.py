"""Write side of the narrative stream: run an extraction engine over a session and store its deltas;
the memory lifecycle (outdated, revoked, corrected, needs review), each change logged with who and why."""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from reconcile_app.audit.services import audit_record
from reconcile_app.core.exceptions import PermanentError, ValidationFailed
from reconcile_app.core.runs import run_mark_failed, run_mark_running
from reconcile_app.fhir.models import RecordSnapshot
from reconcile_app.fhir.selectors import clinical_record_for, snapshot_latest
from reconcile_app.transcripts.models import Session, Turn

from .engines import get_extractor
from .lifecycle import DEFAULT_TTL_DAYS, Transition, TransitionNotAllowed, memory_expires_at, transition_target
from .models import ExtractionRun, Memory, MemoryEvent
from .drafts import drafts_for_keys, drafts_seed
from .selectors import (EarlierKeys, TurnRow, memory_drafts_current, memory_provenance_descendants, memory_to_draft, session_input_for,
                        session_turn_rows)
from .types import Assertion, MemoryDraft, MemoryOp, SessionInput, Subject, TurnInput

logger = logging.getLogger(__name__)


def session_content_sha256(*, session: Session, rows: list[TurnRow] | None = None) -> str:
    rows = session_turn_rows(session=session) if rows is None else rows
    payload = json.dumps([[r[0], r[1], r[2], r[3].isoformat(), r[4]] for r in rows], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def extraction_run_get_or_create(*, session: Session, engine: str | None = None, rows: list[TurnRow] | None = None,
                                 claim: bool = False) -> ExtractionRun:
    """`rows`: the session's turns as session_turn_rows read them, when the caller has them (the pipeline reads
    them once for the hash here and the engine's input in extraction_run_execute). `claim`: the caller executes the
    run next (the pipeline), so a new run of a session not withdrawn is inserted already running with its first
    attempt counted, as run_mark_running would mark it, and extraction_run_execute, handed this row, does not mark
    it again (one UPDATE less per session); a run that existed is marked by extraction_run_execute as before."""
    extractor = get_extractor(engine)
    key = {"session": session, "engine": extractor.name, "engine_version": extractor.version,
           "input_sha256": session_content_sha256(session=session, rows=rows)}
    claimed = claim and session.withdrawn_at is None
    fields = {**key, "status": ExtractionRun.Status.RUNNING, "attempts": 1, "started_at": timezone.now(), "error": ""} if claimed else key
    # get_or_create with the INSERT first: a session is extracted once (its run is new) far more often than again, so
    # the look-up that would miss is skipped; the unique constraint on exactly these fields (extraction_run_idempotent)
    # refuses a second run, whose row is then read, as get_or_create reads it after losing a race.
    try:
        with transaction.atomic():
            run = ExtractionRun.objects.create(**fields)
    except IntegrityError:
        return ExtractionRun.objects.get(**key)
    run.claimed_at_creation = claimed  # type: ignore[attr-defined]
    return run


def _memory_sha256(draft: MemoryDraft) -> str:
    key = [draft.anchor_turn_id, draft.category, draft.subject, draft.assertion, draft.quote_start, draft.quote_end,
           draft.content, sorted(draft.attributes.items(), key=str).__repr__()]
    return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()


_UNREAD = object()  # extraction_run_execute's snapshot when the caller read none: read here


def extraction_run_execute(*, run_id: int, engine: str | None = None, run: ExtractionRun | None = None,
                           rows: list[TurnRow] | None = None, snapshot: RecordSnapshot | None | object = _UNREAD,
                           earlier: EarlierKeys | None = None) -> ExtractionRun:
    """Idempotent: a done run is returned as is; a run left 'running' by a killed worker is redone.

    Memories are written in the same transaction that marks the run done, so a worker killed
    mid-way leaves nothing behind and the redelivered task starts clean. `run`: the row as the caller
    has just read it with its session (the pipeline, from extraction_run_get_or_create), not read again;
    `rows`: the session's turns the caller read for the run's hash (session_turn_rows), the engine's input;
    `snapshot`: the patient's latest snapshot as the caller has just read it (None: no record yet); `earlier`: the
    keys of the session's earlier memories (memory_earlier_keys), read by the caller for this step and the next.
    """
    if run is None or run.pk != run_id:
        run = ExtractionRun.objects.select_related("session", "session__patient").get(pk=run_id)
    if run.status == ExtractionRun.Status.DONE:
        return run
    session = run.session
    if session.withdrawn_at is not None:
        raise PermanentError("session was withdrawn")
    if not getattr(run, "claimed_at_creation", False):  # inserted running by extraction_run_get_or_create(claim=True)
        run_mark_running(run)
    extractor = get_extractor(engine or run.engine)
    if snapshot is _UNREAD:
        snapshot = snapshot_latest(patient=session.patient)
    record = clinical_record_for(snapshot=snapshot) if snapshot else None  # type: ignore[arg-type]
    prior = (memory_drafts_current(patient=session.patient, before_session=session) if earlier is None
             else drafts_for_keys(earlier.current, convert=memory_to_draft))
    try:
        drafts = extractor.extract_session(session_input_for(session=session, rows=rows), prior=prior, record=record)
    except PermanentError as exc:  # a RetryableError propagates to the task, which retries
        run_mark_failed(run, exc)
        raise
    with transaction.atomic():
        run = ExtractionRun.objects.select_for_update().get(pk=run.pk)
        if run.status == ExtractionRun.Status.DONE:  # a duplicate delivery finished first
            return run
        # No delete of earlier rows first: a run's memories are written only in the transaction that marks it done,
        # so a run that is not done has none.
        # Each turn's id and external id are all a memory takes from it (its words are the engine's input, read before).
        turns = {t.external_id: t for t in Turn.objects.filter(session=session).only("id", "session_id", "external_id")}
        created = memory_drafts_store(run=run, session=session, drafts=drafts, turns=turns)
        run.status = ExtractionRun.Status.DONE
        run.finished_at = timezone.now()
        # Token usage of LLM engines (counts only); rules engines have none.
        run.stats = {"memories": len(created), "turns": len(turns), **getattr(extractor, "last_usage", {})}
        run.save(update_fields=["status", "finished_at", "stats"])
    logger.info("extraction run %s done: %s memories", run.pk, len(created))
    return run


def ttl_days() -> dict[str, int]:
    return dict(getattr(settings, "LEDGER_MEMORY_TTL_DAYS", DEFAULT_TTL_DAYS))


def memory_drafts_store(*, run: ExtractionRun, session: Session, drafts: list[MemoryDraft], turns: dict[str, Turn]) -> list[Memory]:
    created: list[Memory] = []
    chained: list[bool] = []  # whether the draft updates or supersedes an earlier state of its chain
    seen: set[str] = set()
    ttl = ttl_days()
    for seq, draft in enumerate(drafts):
        digest = _memory_sha256(draft)
        if digest in seen or draft.anchor_turn_id not in turns:
            continue  # exact-duplicate guard; drafts must point at a real turn
        seen.add(digest)
        event = draft.event_time
        memory = Memory(
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
            expires_at=memory_expires_at(category=draft.category, mentioned_at=draft.mention_time, ttl_days=ttl),
        )
        created.append(memory)
        chained.append(bool(draft.chain_key) and draft.op in (MemoryOp.SUPERSEDE, MemoryOp.UPDATE))
    # One INSERT for the session's memories, then truth maintenance in their order: each step sees only
    # the states before it (seq__lt), exactly as when they were inserted one at a time.
    Memory.objects.bulk_create(created)
    drafts_seed(created, convert=memory_to_draft)  # the next session reads them as its prior state
    states = _chain_states(session=session, keys={m.chain_key for m, chain in zip(created, chained) if chain})
    supersessions: list[tuple[Memory, list[Memory]]] = []
    for memory, chain in zip(created, chained):
        if chain:
            # Truth maintenance: earlier states stay, marked outdated, linked from the new one.
            earlier = sorted(
                (s for s in states.get(memory.chain_key, ()) if s.status == Memory.Status.CURRENT and s.pk != memory.pk
                 and (s.session_id != session.pk or s.seq < memory.seq)),
                key=lambda s: (s.mention_time, s.pk), reverse=True,
            )
            if earlier:
                memory.supersedes = earlier[0]
                supersessions.append((memory, earlier))
                for state in earlier:  # followed in memory, so a later draft of the chain sees it outdated
                    state.status = transition_target(Transition.SUPERSEDE, state.status)
    _supersessions_store(supersessions)
    return created


def _supersessions_store(supersessions: list[tuple[Memory, list[Memory]]]) -> None:
    """The session's supersessions written at once (three statements, not three per state): the links, then the
    outdated states, each from CURRENT as memory_transition would (a state changed meanwhile refuses the whole
    step, which the caller's transaction rolls back), then their events in the order they happened."""
    if not supersessions:
        return
    Memory.objects.bulk_update([memory for memory, _ in supersessions], ["supersedes"])
    outdated = [state.pk for _, earlier in supersessions for state in earlier]
    updated = Memory.objects.filter(pk__in=outdated, status=Memory.Status.CURRENT).update(
        status=transition_target(Transition.SUPERSEDE, Memory.Status.CURRENT))
    if updated != len(outdated):
        raise TransitionNotAllowed(f"{len(outdated) - updated} earlier state(s) changed meanwhile; nothing was changed")
    MemoryEvent.objects.bulk_create([
        MemoryEvent(memory=state, actor=None, actor_label=SYSTEM, action=Transition.SUPERSEDE.value,
                    from_status=Memory.Status.CURRENT, to_status=state.status, reason=f"a later state: memory #{memory.pk}"[:300],
                    related=memory)
        for memory, earlier in supersessions for state in earlier
    ])


# What truth maintenance reads of an earlier state (the rest of the row, JSON and words, is not decoded).
CHAIN_STATE_FIELDS = ("id", "session_id", "seq", "chain_key", "status", "mention_time")


def _chain_states(*, session: Session, keys: set[str]) -> dict[str, list[Memory]]:
    """The current states of the given chains that a memory of `session` may supersede: those of earlier
    sessions and of this one (memory_drafts_store keeps those before each memory). One query for the
    session's chains; statuses are then followed in memory as the session's memories outdate them."""
    states: dict[str, list[Memory]] = {}
    if not keys:
        return states
    for state in Memory.objects.filter(
        Q(session__started_at__lt=session.started_at) | Q(session=session),
        patient=session.patient, chain_key__in=sorted(keys), status=Memory.Status.CURRENT,
    ).only(*CHAIN_STATE_FIELDS).order_by("id"):
        states.setdefault(state.chain_key, []).append(state)
    return states


# --- the lifecycle ------------------------------------------------------------------------------

SYSTEM = "system"


def actor_label_for(actor: AbstractBaseUser | None, label: str = "") -> str:
    if label:
        return label[:60]
    return (getattr(actor, "username", "") or SYSTEM)[:60] if actor is not None else SYSTEM


def memory_transition(
    *, memory: Memory, transition: Transition, reason: str, actor: AbstractBaseUser | None = None, actor_label: str = "",
    related: Memory | None = None, before_review: str = "", changes: dict | None = None, refresh: bool = True,
) -> Memory:
    """One step of the lifecycle: a conditional UPDATE from the state the memory was read in (whoever
    acts second finds it changed and is refused), and its event. Never deletes, never edits the words
    (except `changes` that a revocation passes to remove them). `refresh=False`: the caller read the row in
    this transaction, so the status and `changes` are set on it rather than the row read again."""
    target = transition_target(transition, memory.status, before_review=before_review)
    updated = Memory.objects.filter(pk=memory.pk, status=memory.status).update(status=target, **(changes or {}))
    if not updated:
        current = Memory.objects.filter(pk=memory.pk).values_list("status", flat=True).first()
        raise TransitionNotAllowed(f"memory #{memory.pk} is now {current or 'gone'}; nothing was changed")
    MemoryEvent.objects.create(memory=memory, actor=actor if getattr(actor, "is_authenticated", False) else None,
                               actor_label=actor_label_for(actor, actor_label), action=transition.value,
                               from_status=memory.status, to_status=target, reason=reason[:300], related=related)
    if refresh:
        memory.refresh_from_db()
    else:
        memory.status = target
        for field, value in (changes or {}).items():
            setattr(memory, field, value)
    return memory


# The patient's words and anything read from them: removed from a revoked memory (consent withdrawn).
WORD_FIELDS = {"content": "", "quote": "", "attributes": {}, "event_time_text": ""}


def memories_revoke(*, memories: Iterable[Memory], reason: str, actor: AbstractBaseUser | None = None, actor_label: str = "") -> list[Memory]:
    """Revoke each memory (not yet revoked): the row and its provenance stay, its words go."""
    revoked = []
    for memory in memories:
        if memory.status == Memory.Status.REVOKED:
            continue
        revoked.append(memory_transition(memory=memory, transition=Transition.REVOKE, reason=reason, actor=actor,
                                         actor_label=actor_label, changes=dict(WORD_FIELDS)))
    return revoked


def memories_restore_after_revoke(*, revoked: Iterable[Memory], actor: AbstractBaseUser | None = None, actor_label: str = "") -> list[Memory]:
    """Truth maintenance: a state that was outdated only because a now-revoked memory superseded it is
    believed again, when that supersession is still the last thing that happened to it."""
    revoked_ids = {m.pk for m in revoked}
    restored = []
    for memory in revoked:
        earlier = Memory.objects.filter(pk=memory.supersedes_id, status=Memory.Status.OUTDATED).first() if memory.supersedes_id else None
        if earlier is None or earlier.pk in revoked_ids:
            continue
        last = earlier.events.order_by("-at", "-id").first()
        if last is None or last.action != Transition.SUPERSEDE or last.related_id not in revoked_ids:
            continue  # outdated for another reason (its time to live, a later state that stands)
        restored.append(memory_transition(memory=earlier, transition=Transition.RESTORE, related=memory, actor=actor,
                                          actor_label=actor_label, reason=f"the later state (memory #{memory.pk}) was revoked"))
    return restored


@transaction.atomic
def memories_revoke_for_session(*, session: Session, reason: str = "consent withdrawn", actor: AbstractBaseUser | None = None) -> tuple[list[Memory], list[Memory]]:
    """Consent withdrawal, narrative side: every memory derived from the session (its own, then
    corrections of them, breadth-first) is revoked; earlier states they had outdated are restored.
    Returns (revoked, restored); the ledger carries it on to findings, the queue and the EHR."""
    revoked = memories_revoke(memories=memory_provenance_descendants(session=session), actor=actor,
                              reason=f"{reason} (session #{session.pk})")
    restored = memories_restore_after_revoke(revoked=revoked, actor=actor)
    return revoked, restored


def memories_expire(*, now: datetime | None = None, keep: Iterable[int] = (), limit: int = 500) -> list[Memory]:
    """Current memories past their time to live become outdated (safety facts carry none). `keep`
    names memories to leave alone (the ledger passes those with a safety-critical finding)."""
    now = now or timezone.now()
    due = (Memory.objects.filter(status=Memory.Status.CURRENT, expires_at__isnull=False, expires_at__lte=now)
           .exclude(pk__in=list(keep)).order_by("expires_at", "id")[:limit])
    expired = []
    for memory in due:
        try:
            expired.append(memory_transition(memory=memory, transition=Transition.EXPIRE, reason="time to live passed"))
        except TransitionNotAllowed:
            continue  # changed meanwhile
    return expired


# --- corrections ------------------------------------------------------------------------------

CORRECTION_ENGINE = "correction"


def _correction_draft(*, memory: Memory, content: str, subject: str, assertion: str) -> MemoryDraft | None:
    """The structured reading of a correction: the extraction engine over the corrected words, said by
    the patient at the original's time (so a corrected drug or dose is reconciled like any statement)."""
    snapshot = snapshot_latest(patient=memory.patient)
    record = clinical_record_for(snapshot=snapshot) if snapshot else None
    turn = TurnInput(id=memory.turn_ids[0] if memory.turn_ids else "correction", speaker="patient", at=memory.mention_time, text=content)
    drafts = get_extractor().extract_session(SessionInput(id="correction", started_at=memory.mention_time, turns=(turn,)),
                                             prior=[], record=record)
    same = [d for d in drafts if d.category == memory.category]
    return (same or drafts or [None])[0]


def memory_correction_propose(
    *, memory: Memory, content: str, subject: str = "", assertion: str = "", origin: str = Memory.Origin.STAFF_CORRECTION,
    actor: AbstractBaseUser | None = None, actor_label: str = "", note: str = "",
) -> Memory:
    """Someone says the memory is wrong and what is right. The correction is a new memory linked to
    the original; both need review until someone accepts or rejects it. Nothing is overwritten."""
    content = " ".join((content or "").split())
    if not content:
        raise ValidationFailed("Say what the right content is.", errors=["content"])
    if len(content) > 1000:
        raise ValidationFailed("The correction is too long (1,000 characters at most).", errors=["content"])
    subject = subject or memory.subject
    assertion = assertion or memory.assertion
    if subject not in Subject.__members__.values() or assertion not in Assertion.__members__.values():
        raise ValidationFailed("Unknown subject or assertion.", errors=["subject", "assertion"])
    if memory.status not in (Memory.Status.CURRENT, Memory.Status.OUTDATED) or memory.origin != Memory.Origin.EXTRACTED:
        raise ValidationFailed("Only a current or outdated memory from a conversation can be corrected "
                               f"(this one is {memory.get_status_display().lower()}).", errors=["memory"])
    draft = _correction_draft(memory=memory, content=content, subject=subject, assertion=assertion)
    event = draft.event_time if draft else None
    label = actor_label_for(actor, actor_label)
    with transaction.atomic():
        memory = memory_transition(memory=memory, transition=Transition.FLAG, actor=actor, actor_label=label,
                                   reason=f"a correction was proposed ({origin}){': ' + note[:200] if note else ''}")
        digest = hashlib.sha256(json.dumps(["correction", memory.pk, content, subject, assertion, timezone.now().isoformat()]).encode()).hexdigest()
        correction = Memory.objects.create(
            patient_id=memory.patient_id, session_id=memory.session_id, run_id=memory.run_id, turn_id=memory.turn_id,
            turn_ids=list(memory.turn_ids), seq=memory.seq, category=draft.category if draft else memory.category,
            subject=subject, subject_relation=memory.subject_relation if subject == memory.subject else "",
            # Read from the corrected words (its quote), about the original's turns (turn_ids, `corrects`).
            assertion=assertion, attributes=dict(draft.attributes) if draft else {}, content=content,
            quote=draft.quote if draft else content, quote_start=draft.quote_start if draft else 0,
            quote_end=draft.quote_end if draft else len(content), speaker=memory.speaker,
            event_time_text=(event.text[:120] if event else ""), event_start=event.start if event else None,
            event_end=event.end if event else None, mention_time=memory.mention_time, confidence=1.0, engine=CORRECTION_ENGINE, engine_version="1",
            chain_key=memory.chain_key, op=MemoryOp.INSERT, status=Memory.Status.NEEDS_REVIEW, origin=origin,
            corrects=memory, content_sha256=digest, expires_at=memory.expires_at,
        )
        MemoryEvent.objects.create(memory=correction, actor=actor if getattr(actor, "is_authenticated", False) else None,
                                   actor_label=label, action=Transition.PROPOSE.value, to_status=Memory.Status.NEEDS_REVIEW,
                                   reason=f"corrects memory #{memory.pk}", related=memory)
        audit_record(action="ledger.correction_propose", actor=actor, patient_pk=memory.patient_id, object_type="memory",
                     object_id=memory.pk, details={"correction": correction.pk, "origin": origin, "by": label})
    return correction


def _proposer_id(correction: Memory) -> int | None:
    event = correction.events.filter(action=Transition.PROPOSE.value).order_by("at", "id").first()
    return event.actor_id if event else None


def _before_review(original: Memory) -> str:
    event = original.events.filter(action=Transition.FLAG.value).order_by("-at", "-id").first()
    return event.from_status if event else Memory.Status.CURRENT


@transaction.atomic
def memory_correction_accept(*, correction: Memory, actor: AbstractBaseUser, note: str = "") -> tuple[Memory, Memory]:
    """Accepted: the correction becomes current and the original corrected. Someone other than the
    member of staff who proposed it decides (four eyes); a patient's correction any reviewer may accept."""
    if correction.corrects_id is None or correction.status != Memory.Status.NEEDS_REVIEW:
        raise ValidationFailed("This correction is not waiting for review.", errors=["correction"])
    if correction.origin == Memory.Origin.STAFF_CORRECTION and _proposer_id(correction) == getattr(actor, "pk", None):
        raise ValidationFailed("Someone other than its author accepts a correction.", errors=["reviewer"])
    original = Memory.objects.get(pk=correction.corrects_id)
    reason = f"correction #{correction.pk} accepted{': ' + note[:200] if note else ''}"
    original = memory_transition(memory=original, transition=Transition.ACCEPT_ORIGINAL, actor=actor, reason=reason, related=correction)
    correction = memory_transition(memory=correction, transition=Transition.ACCEPT_CORRECTION, actor=actor, reason=reason, related=original)
    audit_record(action="ledger.correction_accept", actor=actor, patient_pk=original.patient_id, object_type="memory",
                 object_id=original.pk, details={"correction": correction.pk})
    return original, correction


@transaction.atomic
def memory_correction_reject(*, correction: Memory, actor: AbstractBaseUser, note: str = "") -> tuple[Memory, Memory]:
    """Rejected: the correction is kept, rejected; the original returns to the state it had before."""
    if correction.corrects_id is None or correction.status != Memory.Status.NEEDS_REVIEW:
        raise ValidationFailed("This correction is not waiting for review.", errors=["correction"])
    original = Memory.objects.get(pk=correction.corrects_id)
    reason = f"correction #{correction.pk} rejected{': ' + note[:200] if note else ''}"
    correction = memory_transition(memory=correction, transition=Transition.REJECT_CORRECTION, actor=actor, reason=reason, related=original)
    original = memory_transition(memory=original, transition=Transition.REJECT_ORIGINAL, actor=actor, reason=reason,
                                 related=correction, before_review=_before_review(original))
    audit_record(action="ledger.correction_reject", actor=actor, patient_pk=original.patient_id, object_type="memory",
                 object_id=original.pk, details={"correction": correction.pk})
    return original, correction

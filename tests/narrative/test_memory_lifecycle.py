"""The memory lifecycle on real rows: a test per transition. Nothing is overwritten or deleted; every
change records who, when and why (MemoryEvent), and a second actor on a changed memory is refused."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from reconcile_app.core.exceptions import ValidationFailed
from reconcile_app.narrative.lifecycle import Transition, TransitionNotAllowed
from reconcile_app.narrative.models import ExtractionRun, Memory, MemoryEvent
from reconcile_app.narrative.selectors import memory_drafts_current, memory_drafts_history, memory_earlier_keys
from reconcile_app.narrative.services import (
    memories_expire,
    memories_restore_after_revoke,
    memories_revoke,
    memory_correction_accept,
    memory_correction_propose,
    memory_correction_reject,
    memory_drafts_store,
    memory_transition,
)
from reconcile_app.narrative.types import MemoryDraft, MemoryOp
from tests.triage.factories import BASE_TIME, memory_create, patient_create, session_create

pytestmark = pytest.mark.django_db


def _events(memory: Memory) -> list[tuple[str, str, str]]:
    return list(memory.events.values_list("action", "from_status", "to_status"))


def test_a_later_state_in_the_chain_outdates_the_earlier_one_with_a_reason(nurse) -> None:  # type: ignore[no-untyped-def]
    patient = patient_create()
    first = session_create(patient=patient)
    earlier = memory_create(session=first, content="Taking lisinopril", chain_key="medication:lisinopril")
    later_session = session_create(patient=patient)
    type(later_session).objects.filter(pk=later_session.pk).update(started_at=BASE_TIME + timedelta(days=7))
    later_session.refresh_from_db()
    run = ExtractionRun.objects.create(session=later_session, engine="rules", engine_version="1", input_sha256="x")
    turn = later_session.turns.get(seq=2)
    draft = MemoryDraft(category="medication", content="Stopped lisinopril", anchor_turn_id=turn.external_id, turn_ids=(turn.external_id,),
                        quote="I stopped the lisinopril", quote_start=0, quote_end=24, speaker="patient", mention_time=turn.at,
                        chain_key="medication:lisinopril", op=MemoryOp.SUPERSEDE)
    (later,) = memory_drafts_store(run=run, session=later_session, drafts=[draft], turns={turn.external_id: turn})
    earlier.refresh_from_db()
    assert (earlier.status, earlier.content, later.supersedes_id) == ("outdated", "Taking lisinopril", earlier.pk)
    event = earlier.events.get()
    assert (event.action, event.from_status, event.to_status, event.related_id, event.actor_label) == (
        "supersede", "current", "outdated", later.pk, "system")
    assert f"memory #{later.pk}" in event.reason


def test_an_evolving_state_expires_after_its_time_to_live_and_a_safety_fact_does_not() -> None:
    session = session_create(patient=patient_create())
    goal = memory_create(session=session, category="goal", chain_key="", content="Walk every day",
                         expires_at=timezone.now() - timedelta(days=1))
    kept = memory_create(session=session, category="goal", chain_key="", content="Lose weight",
                         expires_at=timezone.now() - timedelta(days=1))
    medication = memory_create(session=session, content="Takes metformin")  # no expiry: a safety fact
    expired = memories_expire(keep={kept.pk})
    assert [m.pk for m in expired] == [goal.pk]
    goal.refresh_from_db(), kept.refresh_from_db(), medication.refresh_from_db()
    assert (goal.status, kept.status, medication.status, medication.expires_at) == ("outdated", "current", "current", None)
    assert _events(goal) == [("expire", "current", "outdated")] and goal.events.get().reason == "time to live passed"


def test_revocation_keeps_the_row_and_its_provenance_but_takes_the_words(admin_user) -> None:  # type: ignore[no-untyped-def]
    memory = memory_create(session=session_create(patient=patient_create()), attributes={"drug": "lisinopril"})
    sha, turns = memory.content_sha256, list(memory.turn_ids)
    (revoked,) = memories_revoke(memories=[memory], reason="consent withdrawn (session #1)", actor=admin_user)
    assert (revoked.status, revoked.content, revoked.quote, revoked.attributes, revoked.event_time_text) == ("revoked", "", "", {}, "")
    assert (revoked.content_sha256, revoked.turn_ids, revoked.session_id) == (sha, turns, memory.session_id)
    event = revoked.events.get()
    assert (event.action, event.actor, event.reason) == ("revoke", admin_user, "consent withdrawn (session #1)")
    assert memories_revoke(memories=[revoked], reason="again") == []  # revoked is final
    with pytest.raises(TransitionNotAllowed):
        memory_transition(memory=revoked, transition=Transition.RESTORE, reason="no")


def test_an_earlier_state_outdated_only_by_a_revoked_memory_is_believed_again() -> None:
    patient = patient_create()
    earlier = memory_create(session=session_create(patient=patient), content="Taking lisinopril")
    later = memory_create(session=session_create(patient=patient), content="Stopped lisinopril", supersedes=earlier)
    memory_transition(memory=earlier, transition=Transition.SUPERSEDE, reason="later", related=later)
    expired_goal = memory_create(session=session_create(patient=patient), category="goal", chain_key="goal:walk")
    memory_transition(memory=expired_goal, transition=Transition.EXPIRE, reason="time to live passed")
    other = memory_create(session=session_create(patient=patient), category="goal", chain_key="goal:walk", supersedes=expired_goal)
    revoked = memories_revoke(memories=[later, other], reason="consent withdrawn")
    restored = memories_restore_after_revoke(revoked=revoked)
    assert [m.pk for m in restored] == [earlier.pk]  # the goal was outdated by its time to live, not by `other`
    earlier.refresh_from_db()
    assert earlier.status == "current" and earlier.events.last().action == "restore"
    expired_goal.refresh_from_db()
    assert expired_goal.status == "outdated"


@pytest.fixture
def no_extractor(monkeypatch):  # type: ignore[no-untyped-def]
    """Corrections are read by the extraction engine; these tests are about the lifecycle around it."""
    monkeypatch.setattr("reconcile_app.narrative.services._correction_draft", lambda **kwargs: None)


def test_a_correction_links_to_the_original_and_both_wait_for_review(nurse, no_extractor) -> None:  # type: ignore[no-untyped-def]
    original = memory_create(session=session_create(patient=patient_create()), content="Takes 10 mg lisinopril")
    correction = memory_correction_propose(memory=original, content="Takes 20 mg lisinopril", actor=nurse, note="dose")
    original.refresh_from_db()
    assert (original.status, original.content) == ("needs_review", "Takes 10 mg lisinopril")  # not overwritten
    assert (correction.status, correction.corrects_id, correction.origin, correction.content) == (
        "needs_review", original.pk, "staff_correction", "Takes 20 mg lisinopril")
    assert _events(original) == [("flag", "current", "needs_review")] and original.events.get().actor == nurse
    assert _events(correction) == [("propose", "", "needs_review")]
    # While it waits the original still stands for the engines; the correction does not yet.
    assert [d.content for d in memory_drafts_current(patient=original.patient)] == ["Takes 10 mg lisinopril"]
    with pytest.raises(ValidationFailed):
        memory_correction_propose(memory=original, content="Another", actor=nurse)  # one correction waits at a time


def test_accepting_a_correction_makes_it_current_and_the_original_corrected_by_someone_else(nurse, admin_user, no_extractor) -> None:  # type: ignore[no-untyped-def]
    original = memory_create(session=session_create(patient=patient_create()), content="Takes 10 mg lisinopril")
    correction = memory_correction_propose(memory=original, content="Takes 20 mg lisinopril", actor=nurse)
    with pytest.raises(ValidationFailed):
        memory_correction_accept(correction=correction, actor=nurse)  # four eyes: not its author
    original, correction = memory_correction_accept(correction=correction, actor=admin_user, note="checked the chart")
    assert (original.status, correction.status) == ("corrected", "current")
    assert _events(original)[-1] == ("accept_original", "needs_review", "corrected")
    assert _events(correction)[-1] == ("accept_correction", "needs_review", "current")
    assert original.events.last().actor == admin_user and "checked the chart" in original.events.last().reason
    assert [d.content for d in memory_drafts_current(patient=original.patient)] == ["Takes 20 mg lisinopril"]


def test_rejecting_a_correction_keeps_it_rejected_and_returns_the_original_to_its_earlier_state(nurse, admin_user, no_extractor) -> None:  # type: ignore[no-untyped-def]
    patient = patient_create()
    original = memory_create(session=session_create(patient=patient), content="Taking lisinopril")
    memory_transition(memory=original, transition=Transition.SUPERSEDE, reason="a later state")
    correction = memory_correction_propose(memory=original, content="Never took lisinopril", actor=nurse)
    original, correction = memory_correction_reject(correction=correction, actor=nurse, note="the patient confirmed")
    assert (original.status, correction.status) == ("outdated", "rejected")
    assert _events(original)[-1] == ("reject_original", "needs_review", "outdated")
    later = session_create(patient=patient)
    type(later).objects.filter(pk=later.pk).update(started_at=BASE_TIME + timedelta(days=1))
    later.refresh_from_db()
    assert [d.content for d in memory_drafts_history(session=later)] == ["Taking lisinopril"]  # never the rejected correction


def test_lifecycle_events_are_append_only() -> None:
    memory = memory_create(session=session_create(patient=patient_create()))
    event = MemoryEvent.objects.create(memory=memory, action="note", actor_label="system")
    event.reason = "edited"
    with pytest.raises(RuntimeError):
        event.save()


def test_a_correction_is_read_by_the_extraction_engine(nurse) -> None:  # type: ignore[no-untyped-def]
    original = memory_create(session=session_create(patient=patient_create()), content="Takes lisinopril",
                             attributes={"drug": "lisinopril", "action": "taking"})
    correction = memory_correction_propose(memory=original, content="I stopped taking my metformin last week.", actor=nurse)
    assert correction.category == "medication" and correction.attributes.get("drug") == "metformin"
    assert correction.attributes.get("action") == "stopped"


def _later_session_with_run():  # type: ignore[no-untyped-def]
    patient = patient_create()
    first = session_create(patient=patient)
    later_session = session_create(patient=patient)
    type(later_session).objects.filter(pk=later_session.pk).update(started_at=BASE_TIME + timedelta(days=7))
    later_session.refresh_from_db()
    run = ExtractionRun.objects.create(session=later_session, engine="rules", engine_version="1", input_sha256="x")
    return patient, first, later_session, run


def test_the_drafts_seeded_at_insertion_are_those_a_read_of_the_rows_makes() -> None:
    """The next session reads the extraction's new memories from the drafts seeded when they were inserted:
    they must be what reading the rows back gives (times in UTC, JSON as decoded, plain strings)."""
    from datetime import timezone as dt_timezone, timedelta as td

    from reconcile_app.narrative import drafts as drafts_module
    from reconcile_app.narrative.types import Assertion, EventTime

    patient, _first, later_session, run = _later_session_with_run()
    turn = later_session.turns.get(seq=2)
    elsewhere = dt_timezone(td(hours=-5))
    draft = MemoryDraft(category="medication", content="Stopped lisinopril", anchor_turn_id=turn.external_id,
                        turn_ids=(turn.external_id,), quote="I stopped the lisinopril", quote_start=0, quote_end=24, speaker="patient",
                        mention_time=turn.at.astimezone(elsewhere), assertion=Assertion.NEGATED, confidence=1,
                        attributes={"dose": ("10", "mg"), "delta": {"why": ("a", "b"), "score": 0.5}, "status": Assertion.NEGATED},
                        event_time=EventTime(text="last week", start=turn.at.astimezone(elsewhere) - td(days=7), end=None),
                        chain_key="medication:lisinopril", op=MemoryOp.INSERT)
    (memory,) = memory_drafts_store(run=run, session=later_session, drafts=[draft], turns={turn.external_id: turn})
    seeded, seeded_attributes, _flat = drafts_module._DRAFTS[(memory.pk, memory.created_at)]
    drafts_module._DRAFTS.clear()
    later = session_create(patient=patient)
    type(later).objects.filter(pk=later.pk).update(started_at=BASE_TIME + timedelta(days=14))
    later.refresh_from_db()
    (read,) = memory_drafts_current(patient=patient, before_session=later)
    assert repr(read.__dict__) == repr({**seeded.__dict__, "attributes": read.attributes})
    assert json.loads(seeded_attributes) == read.attributes == {"dose": ["10", "mg"], "delta": {"why": ["a", "b"], "score": 0.5},
                                                                "status": "negated"}


def test_a_sessions_supersessions_are_written_in_three_statements_however_many_states() -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    patient, first, later_session, run = _later_session_with_run()
    earlier = [memory_create(session=first, content=f"Taking drug {i}", chain_key=f"medication:drug{i}") for i in range(3)]
    turn = later_session.turns.get(seq=2)
    drafts = [MemoryDraft(category="medication", content=f"Stopped drug {i}", anchor_turn_id=turn.external_id, turn_ids=(turn.external_id,),
                          quote=f"I stopped drug {i}", quote_start=0, quote_end=15, speaker="patient", mention_time=turn.at,
                          chain_key=f"medication:drug{i}", op=MemoryOp.SUPERSEDE) for i in range(3)]
    assert later_session.patient == patient  # read, as the pipeline's session brings it
    with CaptureQueriesContext(connection) as queries:
        later = memory_drafts_store(run=run, session=later_session, drafts=drafts, turns={turn.external_id: turn})
    # the memories' INSERT, the chains' states, then the links, the outdated states and their events
    assert len([q for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]) == 5
    for old, new in zip(earlier, later):
        old.refresh_from_db()
        new.refresh_from_db()
        assert (old.status, new.supersedes_id) == ("outdated", old.pk)
        assert _events(old) == [("supersede", "current", "outdated")]
        assert old.events.get().related_id == new.pk


def test_one_read_of_earlier_keys_gives_the_prior_state_and_the_history_the_two_reads_give(nurse, no_extractor) -> None:  # type: ignore[no-untyped-def]
    patient = patient_create()
    first = session_create(patient=patient)
    kept = memory_create(session=first, content="Takes metformin with breakfast")
    outdated = memory_create(session=first, content="Walks the dog daily", chain_key="activity:walking")
    memory_transition(memory=outdated, transition=Transition.SUPERSEDE, reason="a later state")
    flagged = memory_create(session=first, content="Takes 5 mg amlodipine")
    memory_correction_propose(memory=flagged, content="Takes 10 mg amlodipine", actor=nurse)  # original believed, correction not
    revoked = memory_create(session=first, content="Drinks two coffees")
    memories_revoke(memories=[revoked], reason="consent withdrawn")
    later = session_create(patient=patient)
    type(later).objects.filter(pk=later.pk).update(started_at=BASE_TIME + timedelta(days=3))
    later.refresh_from_db()
    keys = memory_earlier_keys(session=later)
    assert [d.content for d in memory_drafts_history(session=later, keys=keys)] == [
        d.content for d in memory_drafts_history(session=later)]
    assert [k[0] for k in keys.history] == [kept.pk, outdated.pk, flagged.pk]
    assert [k[0] for k in keys.current] == [kept.pk, flagged.pk] == [
        m.pk for m in Memory.objects.filter(content__in=[d.content for d in memory_drafts_current(patient=patient, before_session=later)])
        .order_by("id")]

"""The memory lifecycle as pure data: which transition leads where, and time to live (no database)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.lifecycle import (
    SAFETY_CATEGORIES,
    MemoryStatus as S,
    Transition as T,
    TransitionNotAllowed,
    memory_expires_at,
    transition_target,
)

SAID = datetime(2026, 1, 5, 18, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(("transition", "start", "end"), [
    (T.SUPERSEDE, S.CURRENT, S.OUTDATED),
    (T.EXPIRE, S.CURRENT, S.OUTDATED),
    (T.REVOKE, S.CURRENT, S.REVOKED),
    (T.REVOKE, S.OUTDATED, S.REVOKED),
    (T.REVOKE, S.NEEDS_REVIEW, S.REVOKED),
    (T.REVOKE, S.CORRECTED, S.REVOKED),
    (T.RESTORE, S.OUTDATED, S.CURRENT),
    (T.FLAG, S.CURRENT, S.NEEDS_REVIEW),
    (T.FLAG, S.OUTDATED, S.NEEDS_REVIEW),
    (T.PROPOSE, "", S.NEEDS_REVIEW),
    (T.ACCEPT_ORIGINAL, S.NEEDS_REVIEW, S.CORRECTED),
    (T.ACCEPT_CORRECTION, S.NEEDS_REVIEW, S.CURRENT),
    (T.REJECT_CORRECTION, S.NEEDS_REVIEW, S.REJECTED),
])
def test_each_transition_leads_from_its_states_to_one_state(transition, start, end) -> None:  # type: ignore[no-untyped-def]
    assert transition_target(transition, start) == end


def test_a_rejected_correction_returns_the_original_to_the_state_it_had_before_review() -> None:
    assert transition_target(T.REJECT_ORIGINAL, S.NEEDS_REVIEW, before_review=S.OUTDATED) == S.OUTDATED
    assert transition_target(T.REJECT_ORIGINAL, S.NEEDS_REVIEW, before_review=S.CURRENT) == S.CURRENT
    with pytest.raises(TransitionNotAllowed):
        transition_target(T.REJECT_ORIGINAL, S.NEEDS_REVIEW, before_review=S.REVOKED)


@pytest.mark.parametrize(("transition", "start"), [
    (T.REVOKE, S.REVOKED),  # revoked is final
    (T.RESTORE, S.REVOKED),
    (T.FLAG, S.REVOKED),
    (T.SUPERSEDE, S.OUTDATED),
    (T.EXPIRE, S.NEEDS_REVIEW),
    (T.ACCEPT_CORRECTION, S.REJECTED),
    (T.FLAG, S.NEEDS_REVIEW),  # one correction waits at a time
])
def test_a_step_from_the_wrong_state_is_refused(transition, start) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TransitionNotAllowed):
        transition_target(transition, start)


def test_evolving_states_carry_a_time_to_live_and_safety_facts_never_expire_whatever_the_settings() -> None:
    table = {"goal": 90, "lifestyle": 30, "medication": 7, "allergy": 1}
    assert memory_expires_at(category="goal", mentioned_at=SAID, ttl_days=table) == SAID + timedelta(days=90)
    assert memory_expires_at(category="lifestyle", mentioned_at=SAID, ttl_days=table) == SAID + timedelta(days=30)
    assert memory_expires_at(category="preference", mentioned_at=SAID, ttl_days=table) is None  # none set
    for category in SAFETY_CATEGORIES:
        assert memory_expires_at(category=category, mentioned_at=SAID, ttl_days=table) is None
    assert {"medication", "allergy", "condition"} <= SAFETY_CATEGORIES

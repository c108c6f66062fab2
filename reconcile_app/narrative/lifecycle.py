"""The memory lifecycle as pure data: states, the transitions between them, and time to live (no ORM)."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum


class MemoryStatus(StrEnum):
    CURRENT = "current"
    OUTDATED = "outdated"  # a later state of its chain, or its time to live passed
    REVOKED = "revoked"  # its source was withdrawn (consent)
    CORRECTED = "corrected"  # replaced by an accepted correction
    NEEDS_REVIEW = "needs_review"  # a correction is waiting; or a correction itself, until reviewed
    REJECTED = "rejected"  # a correction the reviewer turned down


class MemoryOrigin(StrEnum):
    EXTRACTED = "extracted"
    STAFF_CORRECTION = "staff_correction"
    PATIENT_CORRECTION = "patient_correction"


class Transition(StrEnum):
    SUPERSEDE = "supersede"  # a newer state of the same chain was said
    EXPIRE = "expire"  # an evolving state's time to live passed
    REVOKE = "revoke"  # consent for its source was withdrawn
    RESTORE = "restore"  # the later state that outdated it was revoked
    FLAG = "flag"  # someone proposed a correction: the original waits for review
    PROPOSE = "propose"  # a correction is created, waiting for review
    ACCEPT_ORIGINAL = "accept_original"  # the correction was accepted: the original is corrected
    ACCEPT_CORRECTION = "accept_correction"  # ... and the correction becomes current
    REJECT_ORIGINAL = "reject_original"  # the correction was rejected: the original returns to its earlier state
    REJECT_CORRECTION = "reject_correction"  # ... and the correction is kept, rejected


S = MemoryStatus
# transition -> (states it may start from, the state it leads to; None: the state before the review).
TRANSITIONS: dict[Transition, tuple[frozenset[str], str | None]] = {
    Transition.SUPERSEDE: (frozenset({S.CURRENT}), S.OUTDATED),
    Transition.EXPIRE: (frozenset({S.CURRENT}), S.OUTDATED),
    Transition.REVOKE: (frozenset({S.CURRENT, S.OUTDATED, S.CORRECTED, S.NEEDS_REVIEW, S.REJECTED}), S.REVOKED),
    Transition.RESTORE: (frozenset({S.OUTDATED}), S.CURRENT),
    Transition.FLAG: (frozenset({S.CURRENT, S.OUTDATED}), S.NEEDS_REVIEW),
    Transition.PROPOSE: (frozenset({""}), S.NEEDS_REVIEW),
    Transition.ACCEPT_ORIGINAL: (frozenset({S.NEEDS_REVIEW}), S.CORRECTED),
    Transition.ACCEPT_CORRECTION: (frozenset({S.NEEDS_REVIEW}), S.CURRENT),
    Transition.REJECT_ORIGINAL: (frozenset({S.NEEDS_REVIEW}), None),
    Transition.REJECT_CORRECTION: (frozenset({S.NEEDS_REVIEW}), S.REJECTED),
}

# What the engines treat as the patient's statements: an original waiting for review still stands
# until someone decides; a correction counts only once accepted (then it is current).
BELIEVED = frozenset({S.CURRENT, S.NEEDS_REVIEW})
# Never shown as the patient's words again, nor given to an engine.
GONE = frozenset({S.REVOKED, S.CORRECTED, S.REJECTED})


class TransitionNotAllowed(ValueError):
    """The memory is not in a state this step may start from (someone else acted first, or it is revoked)."""


def transition_target(transition: Transition, from_status: str, *, before_review: str = "") -> str:
    """The state `transition` leads to from `from_status`, or TransitionNotAllowed."""
    sources, target = TRANSITIONS[transition]
    if from_status not in sources:
        raise TransitionNotAllowed(f"a {from_status or 'new'} memory cannot {transition.value.replace('_', ' ')}")
    if target is None:
        if before_review not in (S.CURRENT, S.OUTDATED):
            raise TransitionNotAllowed("the state before the review is unknown")
        return before_review
    return target


# Evolving states may carry a time to live; safety facts never expire, whatever the settings say.
SAFETY_CATEGORIES = frozenset({"medication", "allergy", "condition", "symptom", "measurement", "procedure", "immunization"})
DEFAULT_TTL_DAYS: dict[str, int] = {"goal": 90, "lifestyle": 90, "care_activity": 180}


def memory_expires_at(*, category: str, mentioned_at: datetime, ttl_days: Mapping[str, int]) -> datetime | None:
    """When a memory of this category, said at `mentioned_at`, becomes outdated on its own (None: never)."""
    if category in SAFETY_CATEGORIES:
        return None
    days = ttl_days.get(category)
    if not days or days <= 0:
        return None
    return mentioned_at + timedelta(days=int(days))

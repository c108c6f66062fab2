"""Plain-data contracts of the narrative stream: conversation input and memory drafts (no ORM)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class MemoryCategory(StrEnum):
    MEDICATION = "medication"
    CONDITION = "condition"
    SYMPTOM = "symptom"
    ALLERGY = "allergy"
    PROCEDURE = "procedure"
    IMMUNIZATION = "immunization"
    MEASUREMENT = "measurement"
    CARE_ACTIVITY = "care_activity"  # diet, exercise, therapy, devices, appointments
    GOAL = "goal"
    PREFERENCE = "preference"
    LIFESTYLE = "lifestyle"  # routines and context with no clinical content


class Subject(StrEnum):
    PATIENT = "patient"
    OTHER = "other"


class Assertion(StrEnum):
    AFFIRMED = "affirmed"
    NEGATED = "negated"
    HYPOTHETICAL = "hypothetical"
    HISTORICAL = "historical"
    UNCERTAIN = "uncertain"


class MemoryOp(StrEnum):
    INSERT = "insert"
    UPDATE = "update"  # refines a current memory in place (same chain, same state)
    SUPERSEDE = "supersede"  # a new state in a chain; the earlier one is kept, marked superseded


@dataclass(frozen=True)
class TurnInput:
    id: str
    speaker: str  # "patient", "coach" or another label ("daughter")
    at: datetime
    text: str


@dataclass(frozen=True)
class SessionInput:
    id: str
    started_at: datetime
    turns: tuple[TurnInput, ...]


@dataclass(frozen=True)
class EventTime:
    text: str  # the expression as written ("couple weeks back")
    start: datetime | None = None
    end: datetime | None = None  # equal to start for an instant


@dataclass
class MemoryDraft:
    """One extracted memory. `attributes` holds the typed fields of its category:

    medication: drug, drug_class, dose_text, frequency, action (started / stopped / skipped /
      changed_dose / took_once / taking / resumed), dose_change (half / double / more / less),
      reason, source (prescribed / otc / someone_else / outside_clinician)
    condition / symptom: name, stated_status (new / ongoing / resolved / worse / better / diagnosed)
    allergy: substance, reaction
    measurement: kind (blood_pressure / glucose / a1c / inr / weight / heart_rate / spo2 /
      temperature), value, value2 (diastolic), unit, setting (home / outside / clinic)
    procedure / immunization: name, where
    care_activity / goal / preference: name, detail
    All categories may add `lexicon` hits: [{"term", "kind", "canonical", "source"}].
    """

    category: str
    content: str
    anchor_turn_id: str
    turn_ids: tuple[str, ...]
    quote: str
    quote_start: int
    quote_end: int
    speaker: str
    mention_time: datetime
    subject: str = Subject.PATIENT
    subject_relation: str = ""
    assertion: str = Assertion.AFFIRMED
    attributes: dict[str, Any] = field(default_factory=dict)
    event_time: EventTime | None = None
    confidence: float = 0.5
    chain_key: str = ""  # e.g. "medication:lisinopril"; evolving states share a chain
    op: str = MemoryOp.INSERT
    engine: str = ""
    engine_version: str = ""

    @property
    def is_patient_affirmed(self) -> bool:
        return self.subject == Subject.PATIENT and self.assertion == Assertion.AFFIRMED

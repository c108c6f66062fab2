"""The extractor's working state: a mention before it becomes a draft, a turn in its conversation, a sentence rule's scope."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reconcile_app.narrative.types import Assertion, EventTime, MemoryCategory, Subject, TurnInput
from reconcile_app.terminology.lexicon import Hit, Lexicon

from ..clauses import Sentence
from ..measurements import Measurement


MAX_CHARS = 20_000  # longer turns are analysed on their first 20 KB; offsets stay exact
CLINICAL = frozenset({"medication", "condition", "symptom", "allergy", "procedure", "immunization", "measurement"})

_KIND_CATEGORY = {
    "drug": MemoryCategory.MEDICATION,
    "drug_class": MemoryCategory.MEDICATION,
    "condition": MemoryCategory.CONDITION,
    "symptom": MemoryCategory.SYMPTOM,
    "procedure": MemoryCategory.PROCEDURE,
    "immunization": MemoryCategory.IMMUNIZATION,
    "care": MemoryCategory.CARE_ACTIVITY,
}


@dataclass
class Mention:
    """One clinical or coaching mention inside a turn, before it becomes a draft."""

    category: str
    turn: TurnInput
    sentence: Sentence
    start: int  # char offsets into turn.text of the mention
    end: int
    attributes: dict[str, Any]
    subject: str = Subject.PATIENT
    relation: str = ""
    assertion: str = Assertion.AFFIRMED
    confidence: float = 0.7
    turn_ids: list[str] = field(default_factory=list)
    name: str = ""
    event_time: EventTime | None = None
    unresolved: bool = False  # a medication named only as "my pen" / "it"
    state: str = ""
    quote_end: int = -1  # the quote runs on to here: a follow-on sentence about the same medicine ("I take it at night")


@dataclass
class TurnState:
    turn: TurnInput
    index: int
    low: str
    sentences: list[Sentence]
    mentions: list[Mention] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    context_text: str = ""  # this turn and the few before it, lowered: cues such as "I saw a specialist"
    carry_out: str = ""  # the other person an answer was about, still open at the end of this turn
    tail_other: str = ""  # the other person the turn ended on when it was about their health ("my brother was in the hospital")


@dataclass
class SentenceScope:
    """What the sentence rules read and write: the sentence, its words and hits, assertion cues, people, readings."""

    state: TurnState
    sent: Sentence
    words: list[str]
    hits: list[Hit]
    triggers: list
    people: list
    measurements: list[Measurement]
    lex: Lexicon
    out: list[Mention] = field(default_factory=list)


# ---- the conversation around a turn --------------------------------------------------------------


def _patient_neighbours(states: list[TurnState], i: int, before: int, after: int) -> list[TurnState]:
    """Patient turns near position i (same session), nearest first, backwards then forwards."""
    out: list[TurnState] = []
    back = [s for s in states[:i] if s.turn.speaker == "patient"][-before:] if before else []
    fwd = [s for s in states[i + 1 :] if s.turn.speaker == "patient"][:after] if after else []
    out.extend(fwd)
    out.extend(reversed(back))
    return out

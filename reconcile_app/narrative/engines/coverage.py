"""Extraction coverage against dataset labels: scenario turns without a memory, trap turns with one (pure, no DB)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reconcile_app.narrative.types import Assertion, MemoryDraft, Subject

# Label categories -> the memory categories that count as capturing them.
LABEL_CATEGORIES: dict[str, frozenset[str]] = {
    "observation": frozenset({"measurement", "symptom"}),
    "condition": frozenset({"condition", "symptom"}),
    "careplan": frozenset({"care_activity"}),
    "medication": frozenset({"medication"}),
    "allergy": frozenset({"allergy"}),
    "procedure": frozenset({"procedure"}),
    "immunization": frozenset({"immunization"}),
}
CLINICAL = frozenset({"medication", "condition", "symptom", "allergy", "procedure", "immunization", "measurement"})
_OTHER_PERSON = re.compile(
    r"not the patient|another person|not (?:his|her|their) own|\b(?:husband|wife|father|mother|dad|mom|son|daughter|"
    r"sister|brother|sister-in-law|son-in-law|neighbou?r|roommate|resident|friend|coworker|grandson|granddaughter|"
    r"uncle|aunt|cousin|nephew|niece|partner|boyfriend|girlfriend)\b", re.I)


@dataclass
class TurnOutcome:
    ref: str  # scenario or trap id
    turn_id: str
    category: str
    hit: bool
    note: str = ""


@dataclass
class PatientCoverage:
    key: str
    scenario_turns: list[TurnOutcome] = field(default_factory=list)
    trap_turns: list[TurnOutcome] = field(default_factory=list)
    other_person_trap_turns: list[TurnOutcome] = field(default_factory=list)

    @property
    def scenario_missed(self) -> list[TurnOutcome]:
        return [t for t in self.scenario_turns if not t.hit]

    @property
    def trap_violations(self) -> list[TurnOutcome]:
        return [t for t in self.trap_turns if t.hit]


def _by_turn(drafts: Iterable[MemoryDraft]) -> dict[str, list[MemoryDraft]]:
    out: dict[str, list[MemoryDraft]] = {}
    for d in drafts:
        for tid in dict.fromkeys(d.turn_ids or (d.anchor_turn_id,)):
            out.setdefault(tid, []).append(d)
    return out


def coverage_for_patient(key: str, labels: dict[str, Any], drafts: Iterable[MemoryDraft]) -> PatientCoverage:
    """A turn counts when it is the anchor or a context turn of a patient-subject affirmed memory."""
    by_turn = _by_turn(drafts)
    cov = PatientCoverage(key)
    for sc in labels.get("scenarios") or []:
        wanted = LABEL_CATEGORIES.get(sc.get("category", ""), frozenset({sc.get("category", "")}))
        for tid in sc.get("turn_ids") or []:
            hit = any(d.category in wanted and d.subject == Subject.PATIENT and d.assertion == Assertion.AFFIRMED
                      for d in by_turn.get(tid, []))
            got = sorted({f"{d.category}/{d.subject}/{d.assertion}" for d in by_turn.get(tid, []) if d.category in CLINICAL})
            cov.scenario_turns.append(TurnOutcome(sc.get("id", "?"), tid, sc.get("category", ""), hit, ", ".join(got)))
    for n, trap in enumerate(labels.get("traps") or []):
        about_other = bool(_OTHER_PERSON.search(str(trap.get("why") or "")))
        for tid in trap.get("turn_ids") or []:
            bad = [d for d in by_turn.get(tid, []) if d.category in CLINICAL and d.is_patient_affirmed]
            outcome = TurnOutcome(f"trap{n + 1}", tid, "other-person" if about_other else "trap", bool(bad),
                                  ", ".join(sorted({d.content for d in bad}))[:200])
            cov.trap_turns.append(outcome)
            if about_other:
                any_patient = [d for d in by_turn.get(tid, []) if d.category in CLINICAL and d.subject == Subject.PATIENT]
                cov.other_person_trap_turns.append(TurnOutcome(outcome.ref, tid, "other-person", bool(any_patient),
                                                               ", ".join(sorted({d.content for d in any_patient}))[:200]))
    return cov


def pct(part: int, whole: int) -> str:
    return f"{(100.0 * part / whole):.1f}%" if whole else "n/a"

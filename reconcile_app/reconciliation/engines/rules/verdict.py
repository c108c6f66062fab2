"""Verdicts under construction, the reconciliation context, and small pure helpers every category uses."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from reconcile_app.fhir.clinical import ClinicalEntry
from reconcile_app.narrative.types import MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, norm, regex_text, split_sentences
from reconcile_app.reconciliation.matching import RecordIndex
from reconcile_app.reconciliation.types import FindingCategory, FindingKind, SEVERITY_RANK, Severity

from .cues import FIRST_SUBJECT, PAST_EXPRESSION, RELATION, THIRD_PRONOUN
from .cues import pattern as cue_pattern_of

# data/cues/cond_resolution.json: "at my mom's" is a place (the local genitive), not another person's fact
PLACE_OF_PERSON = cue_pattern_of("place_of_person")


AGREE, CONTRA, GAP, NCR = (FindingKind.AGREEMENT, FindingKind.CONTRADICTION, FindingKind.GAP, FindingKind.NO_CLINICAL_RELEVANCE)


Cat = FindingCategory


REPEAT_WINDOW = timedelta(days=90)


MAX_CITATIONS = 6


MAX_EXPLANATION = 600  # a reviewer reads a few sentences; longer ones end at a sentence, never mid-word


@dataclass


class Verdict:
    """A finding under construction; citations keep order and stay unique."""

    kind: str
    category: str
    rule: str
    severity: str = Severity.LOW
    safety: bool = False
    explanation: str = ""
    cites: list[ClinicalEntry] = field(default_factory=list)

    def cite(self, *entries: ClinicalEntry | None) -> Verdict:
        for e in entries:
            if e is not None and all((c.resource_type, c.id) != (e.resource_type, e.id) for c in self.cites):
                self.cites.append(e)
        return self

    def raise_to(self, severity: str, safety: bool) -> None:
        self.severity = _severity_max(self.severity, severity)
        self.safety = self.safety or safety


@dataclass


class Context:
    idx: RecordIndex
    kb: Knowledge
    session_text: str  # every patient quote of the session, for co-mentions (an explanation, a drug before a reaction)
    history: Sequence[MemoryDraft]
    turn_text: dict[str, str] = field(default_factory=dict)  # a turn's patient text, rebuilt from its memories' quotes

    def around(self, m: MemoryDraft) -> str:
        """The memory's quote plus the rest of its turn(s): "its the water pill. so i quit it." spans two sentences."""
        parts = [m.quote]
        for turn_id in m.turn_ids:
            text = self.turn_text.get(turn_id, "")
            if text and text not in parts:
                parts.append(text)
        return " ".join(parts)


def _severity_max(*levels: str) -> str:
    return max((lv for lv in levels if lv), key=lambda lv: SEVERITY_RANK.get(lv, 0), default=Severity.LOW)


def _order_text(entry: ClinicalEntry) -> str:
    """An order's display, detail and dosage instructions, lowercased: how the record says the drug is given."""
    raw = entry.raw or {}
    dosage = " ".join(str(d.get("text") or "") for d in raw.get("dosageInstruction") or [] if isinstance(d, dict))
    return regex_text(" ".join([entry.display or "", entry.detail or "", dosage, str(raw.get("note") or "")]))


def _as_needed(entry: ClinicalEntry) -> bool:
    """An order taken only when needed (FHIR dosageInstruction.asNeeded, or "as needed"/"PRN" in its instructions)."""
    dosages = [d for d in (entry.raw or {}).get("dosageInstruction") or [] if isinstance(d, dict)]
    if any(d.get("asNeededBoolean") or d.get("asNeededCodeableConcept") for d in dosages):
        return True
    return bool(re.search(r"\b(?:as needed|prn)\b", _order_text(entry)))


def _short(entry: ClinicalEntry) -> str:
    name = re.sub(r"\s*\((?:disorder|finding|procedure|situation|substance|regime/therapy)\)\s*$", "", entry.display).strip()
    return _clip(name, 80)


def _text(memory: MemoryDraft) -> str:
    return " ".join(p for p in (memory.quote, memory.content) if p)


def _attr(memory: MemoryDraft, *keys: str) -> str:
    for key in keys:
        value = memory.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _lexicon_terms(memory: MemoryDraft) -> list[str]:
    hits = memory.attributes.get("lexicon") or []
    out = []
    for hit in hits if isinstance(hits, list) else []:
        if isinstance(hit, dict):
            out.extend(str(hit.get(k) or "") for k in ("canonical", "term"))
    return [t for t in out if t]


def _clip(text: str, limit: int) -> str:
    """Text for inside a sentence: whole words up to limit characters, with an ellipsis when shortened."""
    text = " ".join(text.split()).rstrip(" .;,")
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" .;,")
    return f"{cut}…"


def _sentences(text: str, limit: int) -> str:
    """Whole sentences up to limit characters (the first one is always kept whole)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    parts = split_sentences(text)
    kept = parts[0]
    for part in parts[1:]:
        if len(kept) + 1 + len(part) > limit:
            break
        kept = f"{kept} {part}"
    return kept


_CONCEPT_ATTRIBUTES = ("drug", "substance")  # a medicine or allergen: care activities and symptoms repeat on the resource alone


def _repeat_key(v: Verdict, m: MemoryDraft) -> tuple[str, str, str] | None:
    """What makes two discrepancies the same: the rule, the first record resource it cites and what the patient
    spoke of (turmeric and aspirin on the same warfarin order are two findings; "still on half a pill" is one)."""
    if v.kind not in (CONTRA, GAP) or not v.cites:
        return None
    concept = next((str(m.attributes[a]).strip().lower() for a in _CONCEPT_ATTRIBUTES if m.attributes.get(a)), "")
    return v.rule.split("+")[0], f"{v.cites[0].resource_type}/{v.cites[0].id}", concept


def _elapsed(start: datetime, end: datetime) -> timedelta:
    """end - start, tolerating one naive and one aware timestamp (compared as wall-clock times)."""
    try:
        return end - start
    except TypeError:
        return end.replace(tzinfo=None) - start.replace(tzinfo=None)


def _long_ago(m: MemoryDraft) -> bool:
    """Past history rather than news: the event is over a year before the mention (resolved time, or a year said)."""
    if m.event_time is not None and m.event_time.start is not None and PAST_EXPRESSION.search(regex_text(m.event_time.text)):
        # only an expression that dates the event itself; "mine was from 2016" dates an older dose, not this one
        return _elapsed(m.event_time.start, m.mention_time) > timedelta(days=365)
    # without a resolved time, only a year the event is said to happen in ("in 2010", "back in 2010", "since 2010");
    # "mine was from 2016" dates an older dose, not this one
    years = [int(y) for y in re.findall(r"\b(?:in|back in|since|around)\s+((?:19|20)\d\d)\b", regex_text(m.quote))]
    return bool(years) and max(years) < m.mention_time.year - 1


def _record_category(memory_category: str) -> str:
    return {
        "medication": Cat.MEDICATION, "allergy": Cat.ALLERGY, "condition": Cat.CONDITION, "symptom": Cat.CONDITION,
        "measurement": Cat.OBSERVATION, "procedure": Cat.PROCEDURE, "immunization": Cat.IMMUNIZATION,
    }.get(memory_category, Cat.CAREPLAN)


def _looks_acute(flag: Verdict) -> bool:
    return flag.severity == Severity.HIGH or flag.safety


def _days_apart(iso: str, when: datetime) -> int | None:
    try:
        day = datetime.fromisoformat(iso[:10]).date()
    except ValueError:
        return None
    return abs((when.date() - day).days)


def _grounded_term(m: MemoryDraft) -> str:
    """The extractor's surface term for the memory's thing, if it really is in the quote."""
    quote = norm(m.quote)
    for candidate in [_attr(m, "term"), *(_lexicon_surface(m))]:
        if candidate and len(candidate) >= 3 and f" {norm(candidate).strip()} " in quote:
            return candidate
    return ""


def _lexicon_surface(m: MemoryDraft) -> list[str]:
    hits = m.attributes.get("lexicon") or []
    return [str(h.get("term") or "") for h in hits if isinstance(h, dict)] if isinstance(hits, list) else []


def _with_attributes(m: MemoryDraft, attributes: dict) -> MemoryDraft:
    from dataclasses import replace

    return replace(m, attributes={**m.attributes, **attributes})


def _only_the_patient_in(quote: str) -> bool:
    """The quote speaks of the patient alone: first person, no third-person pronoun, relation or proper name."""
    quote = PLACE_OF_PERSON.sub(" there ", quote)  # "on the scale at my mom's": a place, not another experiencer
    text = regex_text(quote)
    if not FIRST_SUBJECT.search(text) or THIRD_PRONOUN.search(text) or RELATION.search(text):
        return False
    words = quote.replace("\u2019", "'").split()
    # a capitalised word inside the sentence is a name (Tina, Dr. Patel's office): someone else may be meant
    return not any(w[:1].isupper() and not w.startswith("I") and i > 0 and not words[i - 1].endswith((".", "!", "?"))
                   for i, w in enumerate(words))

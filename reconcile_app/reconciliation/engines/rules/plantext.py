"""A care plan's own text read as instructions: what it asks the patient to use, what it forbids, what it limits and
by how much, what it asks to keep steady; and the patient's words read against them through the care vocabulary
(reconciliation/data/careplan.json: care_concepts and plan_reading, each concept with its source).

Nothing here knows a plan by name: a plan is understood from CarePlan.activity.detail.description and code display,
clause by clause ("No ladders, roof or gutter work" forbids the heights concept; "no more than 1 drink on any day"
limits the alcohol concept to one drink a day; "Use CPAP every night" asks for the cpap device).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.reconciliation.knowledge import DATA_DIR, norm, regex_text, split_sentences
from reconcile_app.reconciliation.matching import RecordIndex, careplan_activities

from .cues import pattern as cue_pattern_of

# data/cues/cond_plans.json: "No skipped snacks" forbids skipping, not snacks
PRIVATIVE_ACT = cue_pattern_of("privative_act")


@dataclass(frozen=True)
class Concept:
    """A device, activity, drink or food a plan can name, with the words for it and what disregarding it risks."""

    id: str
    kind: str  # device, activity, drink, food
    terms: tuple[str, ...]  # normalized words a patient (and a plan) uses
    plan_terms: tuple[str, ...]  # how a plan names it, when it differs
    ambiguous: tuple[str, ...]  # lay heads ("mask", "pens") that mean this concept only when the patient's plans say so
    near: tuple[tuple[str, ...], ...]  # word groups that together name it ("cans ... soup")
    unit: str  # lb, ft, drink, oz: what a plan's number limits
    plan_mode: str  # a mode the plan's mention always has ("thickened liquids" forbids thin ones)
    by_amount: float  # named by an amount in its unit alone ("above 8,000 feet"), from this amount up; 0 if not
    severity: str
    safety: bool
    why: str
    conditions: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class PlanItem:
    careplan: ClinicalEntry
    clause: str  # the sentence of the plan the item comes from
    mode: str  # use, avoid, limit, steady
    concept: str
    limit: float | None = None  # in the concept's unit, per `per`
    per: str = ""


@dataclass(frozen=True)
class Reading:
    """The cue lists of plan_reading, compiled once."""

    avoid: tuple[str, ...]
    limit: tuple[str, ...]
    steady: tuple[str, ...]
    disuse: tuple[re.Pattern[str], ...]  # said of an object: it, them, or the device itself in the same sentence
    disuse_elliptic: tuple[re.Pattern[str], ...]  # the object left out ("I just go without", "not one night")
    disuse_objects: frozenset[str]
    disuse_negated: re.Pattern[str]
    resumed: tuple[re.Pattern[str], ...]
    negation_before: re.Pattern[str]
    habit: tuple[re.Pattern[str], ...]
    change: tuple[re.Pattern[str], ...]
    intake: tuple[re.Pattern[str], ...]


@lru_cache(maxsize=1)
def vocabulary() -> tuple[dict[str, Concept], Reading]:
    data = json.loads((DATA_DIR / "careplan.json").read_text(encoding="utf-8"))
    concepts = {}
    for r in data["care_concepts"]:
        terms = tuple(norm(t).strip() for t in r["terms"])
        concepts[r["id"]] = Concept(
            r["id"], r["kind"], terms, tuple(norm(t).strip() for t in r.get("plan_terms", [])) or terms,
            tuple(norm(t).strip() for t in r.get("ambiguous", [])), tuple(tuple(g) for g in r.get("near", [])), r.get("unit", ""),
            r.get("plan_mode", ""), float(r.get("by_amount", 0)), r["severity"], bool(r["safety"]), r["why"],
            tuple(r.get("conditions", [])), r["source"])
    pr = data["plan_reading"]
    reading = Reading(
        tuple(pr["avoid_cues"]), tuple(pr["limit_cues"]), tuple(pr["steady_cues"]),
        tuple(re.compile(p) for p in pr["disuse_patterns"]), tuple(re.compile(p) for p in pr["disuse_elliptic_patterns"]),
        frozenset(pr["disuse_object_words"]), re.compile(pr["disuse_negated"]),
        tuple(re.compile(p) for p in pr["resumed_patterns"]), re.compile(pr["negation_before"]),
        tuple(re.compile(p) for p in pr["habit_patterns"]), tuple(re.compile(p) for p in pr["change_patterns"]),
        tuple(re.compile(p) for p in pr["intake_patterns"]))
    return concepts, reading


# --- numbers -------------------------------------------------------------------------------------

_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                 "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
                 "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "couple": 2, "few": 3, "several": 3,
                 "dozen": 12, "half": 0.5}
_NUMBER = (r"(?:\d[\d,]*(?:\.\d+)?|half an?|(?:(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
           r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|couple|few|several|"
           r"dozen|half)(?:[\s-]+(?:one|two|three|four|five|six|seven|eight|nine|hundred|thousand|of))*))")
# units of what a plan limits, to the concept's unit (UCUM conversions)
_UNITS = {
    "lb": (r"lbs?|pounds?|kgs?|kilos?|kilograms?", {"k": 2.20462}),
    "ft": (r"feet|foot|ft|meters|metres", {"m": 3.28084}),
    "oz": (r"oz|ounces?|fl oz|liters?|litres?|l\b|gallons?|cups?|ml", {"li": 33.814, "l": 33.814, "ga": 128.0, "cu": 8.0, "ml": 0.033814}),
    # a count of drinks; in a sentence about drinking, an unknown plural after a number is one too ("four or five Gansetts")
    "drink": (r"drinks?|beers?|glass(?:es)?|shots?|cans?|bottles?|pints?|cocktails?|margaritas?|pulls?|"
              r"(?!(?:nights|days|weeks|times|hours|minutes|mins|years|months|miles|kids|people|dollars|bucks|pounds|feet|"
              r"steps|games|innings|streets|blocks|friends|guys|buddies|boys|girls|cousins)\b)[a-z]+s", {}),
}
_PER = re.compile(r"^(?:\s+of\s+(?:\w+\s+){0,2}?)?\W*(?:(?:a|per|each|every|on any|on one|in one|in a)\s+(day|night|evening|week|sitting|occasion)|(daily|nightly|weekly))\b")
_RANGE = re.compile(rf"({_NUMBER})(?:\s*(?:-|to|or|,|and)\s*(?:maybe\s+)?({_NUMBER}))?")


def number_value(text: str) -> float | None:
    """A number written in digits or words ("8,000", "eleven thousand", "a couple"); None when it is not one."""
    text = text.strip().lower()
    if re.fullmatch(r"\d[\d,]*(?:\.\d+)?", text):
        return float(text.replace(",", ""))
    total, current = 0.0, 0.0
    words = re.split(r"[\s-]+", text)
    if words[0] == "half":
        return 0.5
    for word in words:
        if word == "of" or word in ("a", "an") and len(words) > 1:
            continue
        if word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total, current = total + max(current, 1) * 1000, 0.0
        elif word in _WORD_NUMBERS:
            current += _WORD_NUMBERS[word]
        else:
            return None
    return total + current or None


def quantities(text: str, unit: str) -> list[tuple[float, str]]:
    """Amounts in the concept's unit with what they are per ("1 drink a day" -> (1.0, "day")); a range gives its top."""
    pattern, factors = _UNITS[unit]
    out = []
    for m in re.finditer(rf"(?<![\w.])({_RANGE.pattern})\s*(?:-\s*)?(?P<unit>{pattern})\b", text):
        low_text, high_text = m.group(2), m.group(3)
        values = [v for v in (number_value(low_text), number_value(high_text or "")) if v is not None]
        if not values:
            continue
        word = m.group("unit")
        factor = next((f for prefix, f in factors.items() if word.startswith(prefix)), 1.0)
        if unit == "oz" and word in ("l",) and max(values) > 10:
            continue  # "l" after a large number is not litres
        per = _PER.match(text[m.end():])
        out.append((max(values) * factor, _per_name(per)))
    return out


def _per_name(match: re.Match | None) -> str:
    if match is None:
        return ""
    word = match.group(1) or match.group(2)
    return "week" if word.startswith("week") else "day"


# --- the plan ------------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def plan_items(idx: RecordIndex) -> tuple[PlanItem, ...]:
    """Every active care plan's clauses as items: the concepts each clause names and how (use, avoid, limit, steady)."""
    concepts, reading = vocabulary()
    items: list[PlanItem] = []
    for entry, _ in idx.careplans:
        if entry.state != State.ACTIVE:
            continue
        for activity in careplan_activities(entry):
            for clause in _clauses(activity):
                items.extend(_clause_items(entry, clause, concepts, reading))
    return tuple(items)


def _clauses(activity: str) -> list[str]:
    """An activity's sentences, then its semicolon clauses; parentheses stay with their clause."""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(])|;\s+|:\s+(?=[A-Z])", activity):
        if sentence.strip():
            out.append(sentence.strip())
    return out


def _clause_items(entry: ClinicalEntry, clause: str, concepts: dict[str, Concept], reading: Reading) -> list[PlanItem]:
    low = f" {regex_text(clause)} "
    normed = norm(clause)
    mode = _clause_mode(low, reading)
    out = []
    for concept in concepts.values():
        named = [t for t in concept.plan_terms if _has(normed, t)]
        by_amount = bool(concept.by_amount) and any(v >= concept.by_amount for v, _ in quantities(low, concept.unit))
        if not named and not by_amount:
            continue
        if named and not by_amount and all(_QUALIFIED.search(normed.split(f" {t} ", 1)[1][:40]) for t in named):
            continue  # "no flights after 32 weeks": a restriction that holds only under a condition we cannot check
        item_mode = concept.plan_mode or (mode if mode else ("use" if concept.kind == "device" else ""))
        if item_mode == "avoid" and not concept.plan_mode and named and all(_listed_before_prohibition(clause, t, reading) for t in named):
            # "walker at all times, night lights, no throw rugs": the "no" forbids the rugs, not the walker
            item_mode = "use" if concept.kind == "device" else ""
        if not item_mode:
            continue
        if item_mode == "avoid" and named and all(_doubly_negated(low, t, reading) for t in named):
            continue  # "No skipped snacks", "never go without breakfast": the plan asks for the thing
        limit, per = None, ""
        if concept.unit and item_mode in ("avoid", "limit"):
            found = quantities(low, concept.unit)
            if found:
                limit, per = found[0]
                item_mode = "limit"
            elif concept.unit == "oz":
                continue  # a fluid mention without an amount limits nothing we can compare
        if item_mode == "limit" and limit is None and concept.kind in ("activity", "drink") and concept.unit:
            continue  # "limit alcohol" without an amount: only the table's excess rules apply
        out.append(PlanItem(entry, clause, item_mode, concept.id, limit, per))
    return out


def _listed_before_prohibition(clause: str, term: str, reading: Reading) -> bool:
    """The term is a list item before the item that carries the clause's first prohibition ("walker at all times,
    night lights, no throw rugs"): a prohibition governs what follows it (NegEx forward scope, Chapman et al. 2001),
    and a list item before it is an instruction of its own. "No ladders, roof or gutter work" forbids every item."""
    items = [f" {regex_text(part)} " for part in re.split(r"[,;]", clause)]
    prohibited = [i for i, item in enumerate(items) if any((f" {cue}" if not cue.startswith(" ") else cue) in item for cue in reading.avoid)]
    named = [i for i, item in enumerate(items) if f" {term} " in f" {norm(item)} "]
    return bool(prohibited) and bool(named) and max(named) < min(prohibited)


def _doubly_negated(low: str, term: str, reading: Reading) -> bool:
    """The term follows a privative act ("skipped", "go without") that itself follows a prohibition in the clause
    ("no", "do not", "never"): two negations, so the plan requires the thing (Horn 1989, double negation)."""
    at = low.find(f" {term}")
    if at < 0:
        return False
    before = low[:at]
    privative = [m for m in PRIVATIVE_ACT.finditer(before)]
    if not privative:
        return False
    head = before[:privative[-1].start()]
    return any(f" {cue}" in head or (cue.startswith(" ") and cue in head) for cue in reading.avoid)


_QUALIFIED = re.compile(r"^(?:after|before|until|unless|if|when|once) (?:\d|the|you|your|week|month|day|surgery)")


def _clause_mode(low: str, reading: Reading) -> str:
    """How the clause instructs: the earliest cue wins (a limit cue inside a prohibition is a limit)."""
    found = []
    for mode, cues in (("limit", reading.limit), ("steady", reading.steady), ("avoid", reading.avoid)):
        for cue in cues:
            i = low.find(f" {cue}" if not cue.startswith(" ") else cue)
            if i != -1:
                found.append((i, 0 if mode == "limit" else 1, mode))
    if re.match(r"^\s*(?:fluid|fluids)\b", low):
        found.append((0, 0, "limit"))  # "Fluid restriction: ...", "Fluids about 1.5 to 2 liters a day"
    return min(found)[2] if found else ""


def item_active(item: PlanItem, when: datetime) -> bool:
    """A clause limited in time ("for 6 weeks after surgery", "for 2 weeks") has ended once that time has passed."""
    low = regex_text(item.clause)
    raw = item.careplan.raw or {}
    start = str((raw.get("period") or {}).get("start") or raw.get("created") or item.careplan.date or "")
    m = re.search(r"\bfor (\d+|one|two|three|four|five|six|eight|ten|twelve) (day|week|month)s?\b", low)
    if not m or not start:
        return True
    try:
        begun = datetime.fromisoformat(start[:10])
    except ValueError:
        return True
    n = number_value(m.group(1)) or 0
    days = n * {"day": 1, "week": 7, "month": 30}[m.group(2)]
    return when.replace(tzinfo=None) <= begun + timedelta(days=days + 3)


# --- the patient's words -------------------------------------------------------------------------

def _has(normed: str, term: str) -> bool:
    return bool(term) and f" {term} " in normed


def mentions(text: str, allowed: set[str] | None = None, ambiguous_ok: set[str] | None = None) -> dict[str, list[int]]:
    """Concepts named in the text, each with the positions (in the normalized text) where it is named."""
    found = _mentions(text, None if allowed is None else frozenset(allowed), frozenset(ambiguous_ok or ()))
    return {cid: list(spots) for cid, spots in found}


@lru_cache(maxsize=16384)
def _mentions(text: str, allowed: frozenset[str] | None, ambiguous_ok: frozenset[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """mentions(), kept per text and concept sets: the rules read the same quote and clause for several plan items."""
    concepts, _ = vocabulary()
    normed = _without_idioms(norm(text))
    out: dict[str, list[int]] = {}
    for concept in concepts.values():
        if allowed is not None and concept.id not in allowed:
            continue
        terms = list(concept.terms) + (list(concept.ambiguous) if ambiguous_ok and concept.id in ambiguous_ok else [])
        spots = [i for t in terms for i in _positions(normed, t)]
        if concept.near and all(any(_has(normed, w) for w in group) for group in concept.near):
            spots += _near_positions(normed, concept.near)
        if concept.by_amount and any(v >= concept.by_amount for v, _ in quantities(f" {regex_text(text)} ", concept.unit)):
            spots.append(len(normed) - 1)  # named by its amount ("nine thousand feet"); no negation reaches it
        if spots:
            out[concept.id] = sorted(set(spots))
    return tuple((cid, tuple(spots)) for cid, spots in out.items())


@lru_cache(maxsize=1)
def _idioms() -> tuple[str, ...]:
    """Idioms that use an activity word for something else ("running around", "ran into"), from careplan.json."""
    data = json.loads((DATA_DIR / "careplan.json").read_text(encoding="utf-8"))
    return tuple(norm(i).strip() for i in data["idioms"])


@lru_cache(maxsize=16384)
def _without_idioms(normed: str) -> str:
    """Idioms blanked out with same-length filler, so positions stay where they were."""
    for idiom in _idioms():
        normed = normed.replace(f" {idiom} ", " " + "_" * len(idiom) + " ")
    return normed


def _positions(normed: str, term: str) -> list[int]:
    """Where the term (or its plural) stands in the normalized text."""
    out = []
    for form in (term, f"{term}s") if term and not term.endswith("s") else (term,):
        start = normed.find(f" {form} ") if form else -1
        while start != -1:
            out.append(start + 1)
            start = normed.find(f" {form} ", start + 1)
    return out


def _near_positions(normed: str, groups: tuple[tuple[str, ...], ...], window: int = 5) -> list[int]:
    words = normed.split()
    spots = []
    for i, w in enumerate(words):
        if w in groups[-1] and any(x in groups[0] for x in words[max(0, i - window) : i]):
            spots.append(len(" " + " ".join(words[:i])))
    return spots


def negated_at(normed: str, position: int, reading: Reading) -> bool:
    """A concept the patient names after a negation in the same clause ("no deli meat", "didn't climb any ladders")."""
    before = normed[max(0, position - 40) : position]
    return bool(reading.negation_before.search(before))


_CLAUSE = re.compile(r"[,;.!?]+\s+|\s+(?:but|while|whereas)\s+")
_OTHER_ACTOR = re.compile(r"^(?:(?:and|but|so|then|while|because|since|cause)\s+)?(?:he|she|they|someone|somebody|"
                          r"my (?:son|daughter|husband|wife|brother|sister|mom|dad|mother|father|friend|neighbou?r|partner|"
                          r"boyfriend|girlfriend|kids?|grandson|granddaughter|nephew|niece|cousin|roommate|buddy)s?)\b")


def done_by_patient(text: str, allowed: set[str] | None = None, ambiguous_ok: set[str] | None = None) -> set[str]:
    """Concepts the patient says they did or had: named in a clause that neither negates them ("no salami", "didn't
    go near a ladder") nor has someone else do them ("my son did the gutters")."""
    return set(_done_by_patient(text, None if allowed is None else frozenset(allowed), frozenset(ambiguous_ok or ())))


@lru_cache(maxsize=16384)
def _done_by_patient(text: str, allowed: frozenset[str] | None, ambiguous_ok: frozenset[str]) -> frozenset[str]:
    """done_by_patient(), kept per text and concept sets (a quote is read again when the rules judge it on its own)."""
    _, reading = vocabulary()
    out: set[str] = set()
    for clause in _CLAUSE.split(regex_text(text)):
        found = mentions(clause, allowed, ambiguous_ok)
        if not found or _OTHER_ACTOR.search(clause.strip()):
            continue
        normed = _without_idioms(norm(clause))
        out |= {c for c, spots in found.items() if any(not negated_at(normed, p, reading) for p in spots)}
    return frozenset(out)


def ambiguous_for(items: tuple[PlanItem, ...]) -> set[str]:
    """Concepts whose ambiguous lay heads may stand for them: the plan names the concept and no other concept that
    shares the head ("pens" are the auto-injectors in a peanut-allergy plan without insulin pens)."""
    concepts, _ = vocabulary()
    named = {i.concept for i in items}
    out = set()
    for cid in named:
        heads = set(concepts[cid].ambiguous)
        if heads and not any(heads & set(concepts[o].ambiguous) for o in named if o != cid):
            out.add(cid)
    return out


def disuse_in(text: str, reading: Reading, names_device) -> bool:
    """The text says the device is not being used: a sentence that stores it away, lets it expire or does not wear
    it, naming the device or a pronoun for it ("it's been in the closet since May"); or a sentence that leaves the
    object out ("I just go without", "not one night") in a text that names the device."""
    sentences = [x for x in split_sentences(regex_text(text)) if x]
    if any(p.search(x) for x in sentences for p in reading.resumed):
        return False
    named_anywhere = any(names_device(x) for x in sentences)
    # "I use the walker always" beside "since Christmas, not one time": an ellipsis takes the nearest antecedent
    # (the falls), and a sentence that says the device is used outranks an object left out
    used = any(names_device(x) and _in_use(x) for x in sentences)
    for sentence in sentences:
        words = set(re.findall(r"[a-z']+", sentence))
        if _said(sentence, reading.disuse, reading) and (names_device(sentence) or words & reading.disuse_objects):
            return True
        if named_anywhere and not used and _said(sentence, reading.disuse_elliptic, reading):
            return True
    return False


_USE_SAID = re.compile(r"\b(?:i|we)\s+(?:\w+\s+){0,2}?(?:use|uses|using|wear|wearing|sleep with|take|bring|carry)\b")
_NOT_BEFORE = re.compile(r"\b(?:don'?t|dont|do not|never|not|no longer|stopped|quit|barely|hardly)\b")


def _in_use(sentence: str) -> bool:
    """A first-person use verb in the sentence that no negation reaches: "i use the walker always"."""
    return any(not _NOT_BEFORE.search(sentence[hit.start():hit.end()]) for hit in _USE_SAID.finditer(sentence))


def _said(sentence: str, patterns: tuple[re.Pattern[str], ...], reading: Reading) -> bool:
    return any(not reading.disuse_negated.search(sentence[max(0, m.start() - 20) : m.start()])
               for p in patterns for m in p.finditer(sentence))


_MODAL_BEFORE = re.compile(r"\b(?:can|could|will|would|should|might|may|gonna|going to|want to|wanna|'ll|plan to|try to|need to)\s+(?:\w+\s+)?$")


def intake_in(text: str, reading: Reading) -> bool:
    """The patient ate or drank it (had, ate, got, grabbed, went through), not only planned or listed it."""
    low = regex_text(text)
    return any(not _MODAL_BEFORE.search(low[max(0, m.start() - 25) : m.start()]) for p in reading.intake for m in p.finditer(low))


def habit_in(text: str, reading: Reading, *, change: bool = False) -> bool:
    low = regex_text(text)
    return any(p.search(low) for p in (reading.change if change else reading.habit))

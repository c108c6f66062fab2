"""Allergies: claims, reactions after an exposure, tolerance, and exposures to what the record lists as an allergy."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import Assertion, MemoryCategory, Subject
from reconcile_app.terminology.concepts import allergen_families
from reconcile_app.terminology.lexicon import Entry, Hit

from .. import context as ctx
from ..clauses import Sentence
from ..cues import cue_pattern, cue_words
from .condition import _STOP_CONDITION
from .medication import _ANTIHISTAMINE
from .sentences import _event_time
from .state import Mention, SentenceScope, TurnState, _patient_neighbours


_REACTION = cue_words("reaction")
_REACTION_WORDS = cue_pattern("reaction_words")
_ALLERGY_CLAIM = cue_pattern("allergy_claim")
_ALLERGY_RESOLVED = cue_pattern("allergy_resolved")
_EXPOSURE = cue_pattern("exposure")
_NO_REACTION = cue_pattern("no_reaction")
# "taking one when my ankles swell", "for the itching": the symptom is why the drug is taken, not a reaction to it
_INDICATION_BEFORE = cue_pattern("indication_before")
_HABITUAL_EATING = cue_pattern("habitual_eating")
_SKIN_ERUPTION = cue_pattern("skin_eruption")
# Drug classes that are a course someone is given (a reaction right after points at them); not devices or rescue drugs.
_EXPOSURE_CLASSES = cue_words("exposure_classes")
_ALLERGIC_TO = cue_pattern("allergic_to")


def _s_allergen_eaten(s: SentenceScope, hit: Hit) -> None:
    """A food the record lists as an allergy, eaten as a habit: a tolerance statement the record contradicts."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    entry = hit.best
    recorded = next((e for e in hit.entries if e.kind == "allergen" and e.record_ref), entry)
    if _HABITUAL_EATING.search(sent.low):
        # eating a food the record lists as an allergy, as a habit ("peanut butter toast every morning"):
        # a tolerance statement the record contradicts
        res = ctx.assess(words, hit.tok_start, hit.tok_end, triggers=triggers, people=people)
        if res.subject == Subject.PATIENT and res.assertion == Assertion.AFFIRMED:
            tol = Mention(MemoryCategory.ALLERGY, state.turn, sent, sent.start + hit.start, sent.start + hit.end,
                          {"substance": recorded.canonical, "reaction": "none", "stated_status": "tolerated",
                           "inferred": True}, confidence=0.45, turn_ids=[state.turn.id], name=recorded.canonical)
            if recorded.record_ref:
                tol.attributes["record_ref"] = f"{recorded.record_ref[0]}/{recorded.record_ref[1]}"
                tol.attributes["display"] = recorded.display
            tol.event_time = _event_time(state, sent)
            out.append(tol)


def _s_allergic_to(s: SentenceScope) -> None:
    """"allergic to X" with a substance the terminology may not know."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    if _ALLERGY_CLAIM.search(sent.low) and not any(x.category == MemoryCategory.ALLERGY for x in out):
        m = _ALLERGIC_TO.search(sent.low)
        if m:
            substance = m.group(1).strip()
            drug_here = next((x for x in out if x.category == MemoryCategory.MEDICATION and x.attributes.get("drug")), None)
            if drug_here is None:
                drug_here = next((x for x in out if x.category == MemoryCategory.MEDICATION and x.attributes.get("drug_class")), None)
            if drug_here is not None and drug_here.start >= sent.start + m.start(1):
                substance = drug_here.attributes.get("drug") or drug_here.attributes.get("drug_class") or substance
            if substance.split()[0] not in _STOP_CONDITION:
                tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(1)), 0)
                res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
                mention = Mention(MemoryCategory.ALLERGY, state.turn, sent, sent.start + m.start(1), sent.start + m.end(1),
                                  {}, res.subject, res.relation, res.assertion, confidence=0.55, turn_ids=[state.turn.id])
                _allergy_claim(mention, Entry("allergen", substance, "rules"), sent)
                mention.event_time = _event_time(state, sent)
                out.append(mention)


def _allergy_claim(mention: Mention, entry: Entry, sent: Sentence) -> None:
    mention.name = entry.canonical
    attrs: dict[str, Any] = {"substance": entry.canonical, "reaction": ""}
    if _ALLERGY_RESOLVED.search(sent.low):
        attrs["stated_status"] = "resolved"
        if mention.assertion == Assertion.NEGATED:
            mention.assertion = Assertion.AFFIRMED  # "not allergic anymore" states a resolution
    reactions = sorted({m.group(1) for m in _REACTION_WORDS.finditer(sent.low)} - {"reaction"})
    if reactions:
        attrs["reaction"] = ", ".join(reactions)
    mention.attributes = attrs


def _allergy_frame(low: str, hit: Hit) -> bool:
    after = low[hit.end : hit.end + 25]
    before = low[max(0, hit.start - 30) : hit.start]
    return bool(re.match(r"\s*(?:drugs?\s+|meds?\s+|antibiotics?\s+)?(allerg\w*|intoleran\w*|sensitivity)", after)
                or re.search(r"(allergic|allergy|allergies|reaction|react|sensitive|intolerant)\s+(?:to|from|with)\s+(?:the |my |any |all )?$", before))


_ALLERGY_SYNONYMS = allergen_families()  # "penicillin" -> penicillin, amoxicillin, ampicillin (terminology/data/allergens.json)


def _allergy_keys(canonical: str, drug_class: str) -> set[str]:
    keys = {w for w in re.findall(r"[a-z]+", canonical.lower()) if len(w) > 3}
    cls = drug_class.lower()
    for family, words in _ALLERGY_SYNONYMS.items():
        if family in cls or family in canonical.lower() or any(w in canonical.lower() for w in words):
            keys |= set(words) | {family}
    return keys


def _record_allergy_exposures(states: list[TurnState], record: ClinicalRecord | None) -> None:
    """Taking or meeting a substance the record lists as an allergy is an allergy fact in its own right
    ("took amoxicillin for a week, no problem" against a penicillin allergy)."""
    if record is None:
        return
    try:
        allergies = [a for a in record.of_type("AllergyIntolerance", states=["active"]) if a.display]
    except Exception:
        return
    if not allergies:
        return
    patient_states = [s for s in states if s.turn.speaker == "patient"]
    for k, state in enumerate(patient_states):
        exposures: list[tuple[str, str, Mention | None, Sentence]] = []
        for m in state.mentions:
            if m.category == MemoryCategory.MEDICATION and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED \
                    and m.attributes.get("drug"):
                exposures.append((m.attributes["drug"], m.attributes.get("drug_class", ""), m, m.sentence))
        for sent in state.sentences:
            for hit in getattr(sent, "hits", []):
                if hit.best.kind == "allergen" and _EXPOSURE.search(sent.low):
                    exposures.append((hit.best.canonical, "", None, sent))
        for canonical, cls, source, sent in exposures:
            keys = _allergy_keys(canonical, cls)
            match = next((a for a in allergies if any(key in a.display.lower() for key in keys)), None)
            if match is None or any(m.category == MemoryCategory.ALLERGY and m.subject == Subject.PATIENT
                                    and m.assertion == Assertion.AFFIRMED for m in state.mentions):
                continue
            following = patient_states[k + 1] if k + 1 < len(patient_states) else None
            window = state.low + " " + (following.low if following else "")
            if _NO_REACTION.search(window):
                status, reaction = "tolerated", "none"
            elif _REACTION_WORDS.search(state.low):
                status, reaction = "reaction", ", ".join(sorted({x.group(1) for x in _REACTION_WORDS.finditer(state.low)}))
            else:
                status, reaction = "exposed", ""
            attrs = {"substance": canonical, "reaction": reaction, "stated_status": status,
                     "record_ref": f"{match.resource_type}/{match.id}", "display": match.display}
            turn_ids = [state.turn.id] + ([following.turn.id] if following and status == "tolerated" and not _NO_REACTION.search(state.low) else [])
            mention = Mention(MemoryCategory.ALLERGY, state.turn, sent, source.start if source else sent.start,
                              source.end if source else sent.end, attrs, confidence=0.55, turn_ids=turn_ids, name=canonical)
            mention.event_time = source.event_time if source else None
            state.mentions.append(mention)


def _allergy_inference(state: TurnState, states: list[TurnState], i: int) -> None:
    """Reaction after an exposure -> an allergy memory; exposure with no reaction -> a tolerance memory."""
    reaction = _reaction_in(state)
    if not reaction.any and not reaction.none_said:
        return
    exposures = _exposures_before(state, states, i, reaction.none_said)
    if not exposures:
        return
    exp_state, exposure = exposures[0]
    substance = exposure.attributes.get("drug") or exposure.attributes.get("substance") or exposure.name \
        or exposure.attributes.get("drug_class", "")
    if not substance:
        return
    existing = next((m for m in state.mentions if m.category == MemoryCategory.ALLERGY and m.name == substance
                     and m.assertion == Assertion.AFFIRMED and m.subject == Subject.PATIENT), None)
    if existing is not None:
        if reaction.any:  # the claim is already there: enrich it with the reaction and the exposure turn
            existing.attributes["reaction"] = reaction.names()
        if exp_state is not state and exp_state.turn.id not in existing.turn_ids:
            existing.turn_ids.append(exp_state.turn.id)
    elif reaction.any:
        _new_allergy(state, states, i, reaction, (exp_state, exposure), substance)
    elif reaction.none_said:
        _tolerance(state, exposures, substance)


@dataclass
class _Reaction:
    """What a turn says followed an exposure: reaction symptoms, a swollen face, a skin eruption, or no reaction."""

    symptoms: list[Mention]
    lips: bool
    eruption: bool
    none_said: bool

    @property
    def any(self) -> bool:
        return bool(self.symptoms) or self.lips or self.eruption

    def names(self) -> str:
        return ", ".join(sorted({m.name for m in self.symptoms} | ({"lip/face swelling"} if self.lips else set())
                                | ({"hives"} if self.eruption else set())))


def _reaction_in(state: TurnState) -> _Reaction:
    """The patient's affirmed reaction symptoms (not symptoms a drug is taken for), face swelling, eruptions, "no reaction"."""
    symptoms = [m for m in state.mentions if m.category == MemoryCategory.SYMPTOM and m.name in _REACTION
                and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED
                and not _INDICATION_BEFORE.search(state.low[max(0, m.start - 30) : m.start])]
    lips = bool(re.search(r"\b(lips?|tongue|face|throat|eyes?|eyelids?)\b[^.!?]{0,30}\b(puff\w*|swell|swelled|swollen|swelling|"
                          r"blew up|tingl\w*|tight|itchy)\b", state.low))
    # "broke out in welts/bumps" after a new drug: a skin reaction even when no symptom term matched
    eruption = not symptoms and bool(_SKIN_ERUPTION.search(state.low))
    return _Reaction(symptoms, lips, eruption, bool(_NO_REACTION.search(state.low)))


def _exposures_before(state: TurnState, states: list[TurnState], i: int, tolerance: bool) -> list[tuple[TurnState, Mention]]:
    """What the patient was exposed to, in this turn then up to two patient turns back (named drugs and allergens
    first, a course of a drug class only when nothing is named)."""
    exposures: list[tuple[TurnState, Mention]] = []
    class_exposures: list[tuple[TurnState, Mention]] = []
    for s in [state] + _patient_neighbours(states, i, 2, 0):
        named, by_class = _turn_exposures(s)
        exposures += named
        class_exposures += by_class
        if exposures and not (s is state and tolerance):
            break  # a tolerance statement looks one turn further back for the exposure itself
    return exposures or class_exposures


def _turn_exposures(s: TurnState) -> tuple[list[tuple[TurnState, Mention]], list[tuple[TurnState, Mention]]]:
    """A turn's exposures: drugs taken (not antihistamines), allergy mentions, allergens met; and drug-class courses."""
    named: list[tuple[TurnState, Mention]] = []
    by_class: list[tuple[TurnState, Mention]] = []
    for m in s.mentions:
        if m.subject != Subject.PATIENT:
            continue
        if m.category == MemoryCategory.MEDICATION and m.attributes.get("drug") and m.attributes["drug"] not in _ANTIHISTAMINE \
                and m.assertion == Assertion.AFFIRMED:
            named.append((s, m))
        elif m.category == MemoryCategory.MEDICATION and not m.attributes.get("drug") and m.assertion == Assertion.AFFIRMED \
                and m.attributes.get("drug_class") in _EXPOSURE_CLASSES:
            # "they gave me an antibiotic" with no name: the class is the suspected substance (named drugs first)
            by_class.append((s, m))
        elif m.category == MemoryCategory.ALLERGY:
            named.append((s, m))
    for sent in s.sentences:
        for hit in getattr(sent, "hits", []):
            if hit.best.kind == "allergen" and _EXPOSURE.search(sent.low):
                named.append((s, Mention(MemoryCategory.ALLERGY, s.turn, sent, sent.start + hit.start,
                                         sent.start + hit.end, {"substance": hit.best.canonical}, name=hit.best.canonical)))
    return named, by_class


def _new_allergy(state: TurnState, states: list[TurnState], i: int, reaction: _Reaction,
                 exposed: tuple[TurnState, Mention], substance: str) -> None:
    """A new, inferred allergy to the substance, anchored on the reaction, with the turns of its episode."""
    exp_state, exposure = exposed
    attrs = {"substance": substance, "reaction": reaction.names(), "stated_status": "new", "inferred": True}
    anchor_sent = reaction.symptoms[0].sentence if reaction.symptoms else state.sentences[0]
    turn_ids = [state.turn.id] + ([exp_state.turn.id] if exp_state is not state else [])
    allergy = Mention(MemoryCategory.ALLERGY, state.turn, anchor_sent, anchor_sent.start, anchor_sent.end, attrs,
                      confidence=0.6, turn_ids=turn_ids, name=substance)
    allergy.event_time = reaction.symptoms[0].event_time if reaction.symptoms else None
    _episode_turns(allergy, state, states, i, substance, exposure.attributes.get("drug_class", ""))
    state.mentions.append(allergy)
    if exp_state is not state and state.turn.id not in exposure.turn_ids and exposure in exp_state.mentions:
        exposure.turn_ids.append(state.turn.id)


def _episode_turns(allergy: Mention, state: TurnState, states: list[TurnState], i: int, substance: str, drug_class: str) -> None:
    """The turns of the reaction's episode join the allergy: later ones that stop the drug or treat the reaction, and
    earlier ones where the patient took the same drug or class ("she gave me some of her water pills" ... "Lasix I think?")."""
    for later in _patient_neighbours(states, i, 0, 2):
        for m in later.mentions:
            if m.category == MemoryCategory.MEDICATION and (
                    m.attributes.get("drug") in _ANTIHISTAMINE or m.attributes.get("drug") == substance):
                if later.turn.id not in allergy.turn_ids:
                    allergy.turn_ids.append(later.turn.id)
    for earlier in _patient_neighbours(states, i, 3, 0):
        if earlier is state or earlier.turn.id in allergy.turn_ids:
            continue
        if any(m.category == MemoryCategory.MEDICATION and m.subject == Subject.PATIENT
               and m.assertion == Assertion.AFFIRMED and (m.attributes.get("drug") == substance or
                                                          (drug_class and m.attributes.get("drug_class") == drug_class))
               for m in earlier.mentions):
            allergy.turn_ids.append(earlier.turn.id)


def _tolerance(state: TurnState, exposures: list[tuple[TurnState, Mention]], substance: str) -> None:
    """An exposure with no reaction: the substance is tolerated, with the turns that named it."""
    sent = next((s for s in state.sentences if _NO_REACTION.search(s.low)), state.sentences[0])
    attrs = {"substance": substance, "reaction": "none", "stated_status": "tolerated"}
    turn_ids = [state.turn.id] + [t.turn.id for t, e in exposures
                                  if t is not state and (e.attributes.get("drug") or e.attributes.get("substance") or e.name) == substance]
    state.mentions.append(Mention(MemoryCategory.ALLERGY, state.turn, sent, sent.start, sent.end, attrs,
                                  confidence=0.55, turn_ids=turn_ids, name=substance))

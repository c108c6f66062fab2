"""The terminology's hits as mentions of their category, and coaching content from sentences with nothing clinical."""
from __future__ import annotations

import re

from reconcile_app.narrative.types import Assertion, MemoryCategory
from reconcile_app.terminology.lexicon import Entry, Hit

from .. import context as ctx
from ..cues import cue_pattern
from .allergy import _ALLERGY_CLAIM, _allergy_claim, _allergy_frame, _s_allergen_eaten
from .care import _CARE_VERBS, _ONGOING_TREATMENTS, _PROC_PAST, _WHERE, _care_action
from .condition import _after_more, _followed_by_service, _stated_status
from .medication import _medication
from .sentences import _clause_around, _event_time
from .state import _KIND_CATEGORY, CLINICAL, Mention, SentenceScope, TurnState


_GOAL = cue_pattern("goal")
_PREFERENCE = cue_pattern("preference")


def _s_lexicon(s: SentenceScope) -> None:
    """The terminology's hits: drugs, classes, conditions, symptoms, allergens, procedures, vaccines, care."""
    named_drug = any(h.best.kind == "drug" for h in s.hits)
    allergy_cue = bool(_ALLERGY_CLAIM.search(s.sent.low))
    for hit in s.hits:
        _s_lexicon_hit(s, hit, named_drug, allergy_cue)


def _s_lexicon_hit(s: SentenceScope, hit: Hit, named_drug: bool, allergy_cue: bool) -> None:
    """One lexicon hit of the sentence as a memory of its category, unless a filter says it is not one."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    entry = hit.best
    kind = entry.kind
    if kind == "allergen" and not allergy_cue:
        _s_allergen_eaten(s, hit)
        return
    if kind == "care" and hit.tok_end < len(words) and words[hit.tok_end] in ("high", "low", "out", "late", "behind", "around", "errands"):
        return  # "running high", "ran out": not exercise
    if kind == "care" and _object_is_drug(s, hit):
        return  # "stretching my eliquis", "walking my pills over": a verb whose object is a medicine, not exercise
    if kind == "care" and entry.canonical == "running" and re.search(r"\b(pressure|bp|sugars?|numbers|glucose|readings?)\b", sent.low[: hit.start]):
        return  # "pressure's been running in the 90s"
    if any(m.category == _KIND_CATEGORY.get(kind, "allergy") and m.name == entry.canonical for m in out):
        return  # one memory per thing per sentence
    if kind == "drug_class" and named_drug and entry.canonical in ("inhaler", "antibiotic"):
        return  # "the flovent inhaler": the named drug carries it
    res = ctx.assess(words, hit.tok_start, hit.tok_end, triggers=triggers, people=people)
    category = MemoryCategory.ALLERGY if kind == "allergen" else _KIND_CATEGORY.get(kind)
    if category is None:
        return
    start, end = sent.start + hit.start, sent.start + hit.end
    mention = Mention(category, state.turn, sent, start, end, {}, res.subject, res.relation, res.assertion,
                      turn_ids=[state.turn.id])
    if entry.source == "record":
        mention.confidence = 0.85
    elif entry.detail == "near match":
        mention.confidence = 0.55
    if not _s_categorised(s, mention, category, hit, res, start, end):
        return
    if entry.record_ref:
        mention.attributes["record_ref"] = f"{entry.record_ref[0]}/{entry.record_ref[1]}"
        mention.attributes["display"] = entry.display
        if entry.code:
            mention.attributes["code_hint"] = entry.code
    mention.attributes["lexicon"] = [{"term": hit.term, "kind": kind, "canonical": entry.canonical, "source": entry.source}]
    mention.event_time = _event_time(state, sent)
    out.append(mention)


def _object_is_drug(s: SentenceScope, hit: Hit) -> bool:
    """A care-activity verb whose direct object (after at most a determiner) is a drug the sentence names."""
    nxt = hit.tok_end + (1 if hit.tok_end < len(s.words) and s.words[hit.tok_end] in _OBJECT_DETERMINERS else 0)
    return any(h.tok_start == nxt and h.best.kind in ("drug", "drug_class") for h in s.hits)


_OBJECT_DETERMINERS = frozenset({"my", "the", "his", "her", "our", "their", "your", "those", "these", "this", "that", "out"})


def _s_categorised(s: SentenceScope, mention: Mention, category: str, hit: Hit, res: ctx.ContextResult,
                   start: int, end: int) -> bool:
    """Fill a lexicon mention by its category; False when it turns out not to be one (a service, no action)."""
    state, sent, words, lex, out = s.state, s.sent, s.words, s.lex, s.out
    entry, kind = hit.best, hit.best.kind
    if category == MemoryCategory.MEDICATION and kind == "drug" and _allergy_frame(sent.low, hit):
        # "my penicillin allergy", "allergic to sulfa drugs": the drug is the allergen, not a medication taken
        category = mention.category = MemoryCategory.ALLERGY
        _allergy_claim(mention, Entry("allergen", entry.canonical, entry.source), sent)
    elif category == MemoryCategory.MEDICATION:
        others = tuple(h.term.lower() for h in s.hits if h is not hit and h.best.kind in ("drug", "drug_class"))
        if not _medication(mention, hit, entry, res, words, sent, lex, state, others):
            return False
    elif category in (MemoryCategory.CONDITION, MemoryCategory.SYMPTOM):
        mention.name = entry.canonical
        mention.attributes = {"name": entry.canonical, "term": hit.term}
        if kind == "condition" and _followed_by_service(words, hit.tok_end):
            return False  # "a diabetes specialist", "the asthma clinic": a service, not a stated condition
        status = _stated_status(_clause_around(sent, hit.start, hit.end), hit)
        if status:
            mention.attributes["stated_status"] = status
        if status == "resolved" and mention.assertion == Assertion.NEGATED:
            mention.assertion = Assertion.AFFIRMED  # "no more X" / "X is gone": a resolved state, stated
        if res.negation_at >= 0 and words[res.negation_at] in ("no", "not") and _after_more(words, res.negation_at):
            mention.attributes["stated_status"] = "resolved"
            mention.assertion = Assertion.NEGATED
    elif category == MemoryCategory.ALLERGY:
        _allergy_claim(mention, entry, sent)
    elif category in (MemoryCategory.PROCEDURE, MemoryCategory.IMMUNIZATION):
        mention.name = entry.canonical
        mention.attributes = {"name": entry.canonical, "term": hit.term}
        where = _WHERE.search(sent.low)
        if where:
            mention.attributes["where"] = where.group(1).strip()
        if category == MemoryCategory.PROCEDURE and mention.assertion == Assertion.AFFIRMED and not _PROC_PAST.search(sent.low):
            mention.confidence = 0.5  # "the surgery" without a verb of having it
        act = _care_action(sent.low) if entry.canonical in _ONGOING_TREATMENTS else ""
        if act:
            # a standing treatment the patient skips or stops is also a care-plan fact
            care = Mention(MemoryCategory.CARE_ACTIVITY, state.turn, sent, start, end,
                           {"name": entry.canonical, "detail": hit.term, "action": act}, res.subject, res.relation,
                           res.assertion, confidence=0.6, turn_ids=[state.turn.id], name=entry.canonical)
            care.event_time = _event_time(state, sent)
            out.append(care)
    else:  # care activity
        mention.name = entry.canonical
        mention.attributes = {"name": entry.canonical, "detail": hit.term}
        act = _care_action(sent.low)
        if res.negation_at >= 0 and (any(w in _CARE_VERBS for w in words[res.negation_at + 1 : hit.tok_start + 1])
                                     or hit.tok_start - res.negation_at <= 2):
            act = "stopped"  # "haven't been to rehab in 3 weeks", "not wearing the brace"
            mention.assertion = Assertion.AFFIRMED
        if act:
            mention.attributes["action"] = act
    return True


def _coaching_mentions(state: TurnState) -> None:
    """Goals, preferences and plain lifestyle content, only from sentences with no clinical mention."""
    clinical_spans = [(m.sentence.start, m.sentence.end) for m in state.mentions if m.category in CLINICAL]
    care_sentences = {m.sentence.start for m in state.mentions}
    for sent in state.sentences:
        if any(s == sent.start for s, _ in clinical_spans):
            continue
        if len(sent.tokens) < 2:
            continue
        words = [t for t, _, _ in sent.tokens]
        category = None
        if _GOAL.search(sent.low):
            category = MemoryCategory.GOAL
        elif _PREFERENCE.search(sent.low):
            category = MemoryCategory.PREFERENCE
        elif sent.start not in care_sentences and len(sent.tokens) >= 3:
            category = MemoryCategory.LIFESTYLE
        if category is None:
            continue
        people = ctx.find_people(words)
        res = ctx.assess(words, 0, 1, people=people)
        text = state.turn.text[sent.start : sent.end].strip()
        mention = Mention(category, state.turn, sent, sent.start, sent.end, {"name": category.value, "detail": text[:200]},
                          res.subject, res.relation, res.assertion, confidence=0.4, turn_ids=[state.turn.id],
                          name=category.value)
        mention.event_time = _event_time(state, sent)
        state.mentions.append(mention)

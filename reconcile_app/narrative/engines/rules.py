"""The offline default extractor: lexicons, ConText-style assertion and subject, measurements and time, per turn in context."""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import (
    Assertion,
    EventTime,
    MemoryCategory,
    MemoryDraft,
    MemoryOp,
    SessionInput,
    Subject,
    TurnInput,
)

from . import context as ctx
from .base import Extractor
from .cues import cue_pattern, cue_rules, cue_text, cue_words
from .clauses import _UNSET, Sentence, split_sentences
from .delta import DeltaDetector, TurnHit
from reconcile_app.terminology.vocabulary import load_vocabulary
from reconcile_app.terminology.lexicon import Entry, Hit, Lexicon, _record_names, default_lexicon, lower_same_length, record_overlay
from .measurements import Measurement, find_measurements
from .temporal import resolve

logger = logging.getLogger(__name__)

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

# ---- medication actions ------------------------------------------------------------------------

_ACTION_RX = [(re.compile(r["pattern"]), r["action"], r["dose_change"]) for r in cue_rules("action_rx")]
_INTAKE = cue_words("intake")
_FREQUENCY = cue_pattern("frequency")
_DOSE = cue_pattern("dose")
_OTC = cue_pattern("otc")
_SOMEONE_ELSE = cue_pattern("someone_else")
_OUTSIDE = cue_pattern("outside")
_OTC_DRUGS = cue_words("otc_drugs")

_GENERIC_MED = cue_pattern("generic_med")
_PRONOUN_MED = cue_pattern("pronoun_med")
_CAUSAL = cue_pattern("causal")
_BACKREF_Q = cue_pattern("backref_q")
_REACTION = cue_words("reaction")
_REACTION_WORDS = cue_pattern("reaction_words")
_ALLERGY_CLAIM = cue_pattern("allergy_claim")
_ALLERGY_RESOLVED = cue_pattern("allergy_resolved")
_EXPOSURE = cue_pattern("exposure")
_NO_REACTION = cue_pattern("no_reaction")
_RELAPSE = cue_pattern("relapse")
# "taking one when my ankles swell", "for the itching": the symptom is why the drug is taken, not a reaction to it
_INDICATION_BEFORE = cue_pattern("indication_before")
_HANDED_TO_ME = cue_pattern("handed_to_me")
_HABITUAL_EATING = cue_pattern("habitual_eating")
_SKIN_ERUPTION = cue_pattern("skin_eruption")
# Drug classes that are a course someone is given (a reaction right after points at them); not devices or rescue drugs.
_EXPOSURE_CLASSES = cue_words("exposure_classes")
_ANTIHISTAMINE = cue_words("antihistamine")
_STATUS_WORDS = [(re.compile(r["pattern"]), r["status"]) for r in cue_rules("status_words")]
_GOAL = cue_pattern("goal")
_PREFERENCE = cue_pattern("preference")
_BODY_PAIN = cue_pattern("body_pain")
_DIAGNOSED = cue_pattern("diagnosed")
_STOP_CONDITION = cue_words("stop_condition")
_PRESCRIBED = cue_pattern("prescribed")
_GENERIC_WORDS = cue_words("generic_words")
_PROC_NOUN = cue_pattern("proc_noun")
_VACCINE_NAMES = cue_text("vaccine_names")
_VACCINE_LIST = cue_pattern("vaccine_list")
_VACCINE_CANON = {"influenza": "influenza vaccine", "zoster": "zoster vaccine", "pneumococcal": "pneumococcal vaccine",
                  "pertussis": "pertussis vaccine", "meningococcal": "meningococcal vaccine", "varicella": "varicella vaccine",
                  "flu": "influenza vaccine", "covid": "covid-19 vaccine", "covid-19": "covid-19 vaccine", "shingles": "zoster vaccine",
                  "pneumonia": "pneumococcal vaccine", "tetanus": "tdap/td vaccine", "tdap": "tdap/td vaccine", "rsv": "rsv vaccine",
                  "hep": "hepatitis vaccine", "hepatitis": "hepatitis vaccine", "hpv": "hpv vaccine", "whooping": "pertussis vaccine",
                  "mmr": "mmr vaccine", "polio": "polio vaccine", "meningitis": "meningococcal vaccine", "chickenpox": "varicella vaccine",
                  "measles": "mmr vaccine"}
_ALLERGIC_TO = cue_pattern("allergic_to")
_REMOVAL = cue_pattern("removal")
# "had my IUD taken out", "got the stitches removed", "getting a port put in": object before the verb.
_HAD_X_DONE = cue_pattern("had_x_done")
_NOT_PROCEDURE_OBJECTS = cue_words("not_procedure_objects")
# Suicidal ideation as people say it (PHQ-9 item 9 and C-SSRS screening wording, passive and active forms).
_SUICIDAL = cue_pattern("suicidal")
_ACTIVE_SI = cue_pattern("active_si")
# A care program named by its form ("the heart class", "my diabetes classes", "the balance program") with a verb of
# joining, attending or leaving it: a care-plan activity even when the program's name is not in the dictionary.
_PROGRAM = cue_pattern("program")
_PROGRAM_STOP = cue_words("program_stop")
_BEHAVIOUR_CARE = {"tobacco_use": "smoking cessation", "alcohol_use": "alcohol use"}
_ONGOING_TREATMENTS = cue_words("ongoing_treatments")
_PROC_PAST = cue_pattern("proc_past")
_WHERE = cue_pattern("where")
_CAPITAL_NOT_NAME = cue_words("capital_not_name")
_PERSON_VERB = cue_pattern("person_verb")
_NOT_A_PERSON = cue_words("not_a_person")
_FINITE_VERBS = cue_words("finite_verbs")
_NAME_NEXT_INITIAL = cue_words("name_next_initial")
_FAMILY_HISTORY = cue_pattern("family_history")
_OWN_CLAIM = cue_pattern("own_claim")
_ADVERBS = cue_words("adverbs")
_PLACE_PREPS = cue_words("place_preps")
_NAME_S_VERBS = cue_words("name_s_verbs")
_NAME_NEXT_PAST = cue_words("name_next_past")
_NAME_NEXT = cue_words("name_next")


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


class RulesExtractor(Extractor):
    """Deterministic, offline; the lexicon is shared per process (see `lexicon.default_lexicon`)."""

    name = "rules"
    base_version = "2.0.0"  # the rules alone; `version` adds the shipped turn detector's fingerprint

    @property
    def version(self) -> str:  # type: ignore[override]
        return self.base_version if self.delta.detector is None else f"{self.base_version}+{self.delta.version}"

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        self._lexicon = lexicon

    @property
    def lexicon(self) -> Lexicon:
        if self._lexicon is None:
            self._lexicon = default_lexicon()
        return self._lexicon

    def extract_session(
        self,
        session: SessionInput,
        *,
        prior: Sequence[MemoryDraft] = (),
        record: ClinicalRecord | None = None,
    ) -> list[MemoryDraft]:
        drafts, hits_of = self.analyse_session(session, prior=prior, record=record)
        return self.delta.annotate(session, drafts, hits_of)

    @property
    def delta(self) -> DeltaDetector:
        detector = self.__dict__.get("_delta")
        if detector is None:
            detector = self.__dict__["_delta"] = DeltaDetector()
        return detector

    def analyse_session(
        self,
        session: SessionInput,
        *,
        prior: Sequence[MemoryDraft] = (),
        record: ClinicalRecord | None = None,
    ) -> tuple[list[MemoryDraft], dict[str, tuple[list[TurnHit], list[TurnHit]]]]:
        """The rules' memories, and each patient turn's terminology hits with the coach's before it (the detector's input)."""
        lex = self.lexicon
        overlay = self._overlay_for(record, lex)
        states: list[TurnState] = []
        for index, turn in enumerate(session.turns):
            try:
                states.append(self._analyse_turn(turn, index, lex, overlay, states))
            except Exception:  # one hostile turn must not lose the session: log ids only, never text
                logger.exception("rules extraction failed on turn %s of session %s", getattr(turn, "id", "?"), session.id)
        try:
            _link_session(states, record, lex)
            _record_allergy_exposures(states, record)
        except Exception:
            logger.exception("rules session linking failed for session %s", session.id)
        drafts: list[MemoryDraft] = []
        for state in states:
            if state.turn.speaker != "patient":
                continue
            for mention in state.mentions:
                if mention.state == "duplicate":
                    continue
                try:
                    drafts.append(self._draft(mention, state))
                except Exception:
                    logger.exception("rules draft failed on turn %s", state.turn.id)
            if state.candidates and drafts and drafts[-1].anchor_turn_id == state.turn.id:
                drafts[-1].attributes.setdefault("lexicon_candidates", state.candidates)
        _link_record(drafts, overlay)
        _assign_ops(drafts, prior)
        return drafts, _turn_hits(states, record)

    def _overlay_for(self, record: ClinicalRecord | None, lex: Lexicon) -> dict:
        """The record's phrases, reused while the same record object is passed (one patient's sessions in a row)."""
        cached = getattr(self, "_overlay_cache", None)
        if cached is not None and cached[0] is record and cached[1] == len(getattr(record, "entries", ()) or ()):
            return cached[2]
        overlay = record_overlay(record, lex)
        self._overlay_cache = (record, len(getattr(record, "entries", ()) or ()), overlay)
        return overlay

    # ---- per turn -----------------------------------------------------------------------------

    def _analyse_turn(self, turn: TurnInput, index: int, lex: Lexicon, overlay: dict, previous: list[TurnState]) -> TurnState:
        text = turn.text if isinstance(turn.text, str) else ""
        low = lower_same_length(text[:MAX_CHARS])
        sentences = split_sentences(low)
        state = TurnState(turn, index, low, sentences)
        if turn.speaker != "patient":
            # Coach turns are read for context (questions, drug names) but never produce memories.
            for sent in sentences:
                sent.hits = lex.match(sent.low, sent.tokens, overlay)
            return state
        clinician_context = _clinician_context(previous)
        prev_other = ""
        prev_other_health = False
        prev_tail = ""
        carry = _asked_about_other(previous)
        if not carry and previous and previous[-1].turn.speaker == "patient":
            carry = previous[-1].carry_out  # the answer about someone else goes on in the next message
        if not carry and len(previous) >= 2 and previous[-1].turn.speaker != "patient" and \
                previous[-2].turn.speaker == "patient" and previous[-2].tail_other and _neutral_follow_up(previous[-1]):
            # "My brother was in the hospital." - "Oh no, what happened?" - "Heart attack. Two stents.": the
            # coach's follow-up does not turn to the patient, so the answer is still about the brother
            carry = previous[-2].tail_other
        asked_other = bool(carry)
        last_relation = ""
        state.context_text = " ".join([low] + [p.low for p in previous[-3:]])
        measurements = find_measurements(low)
        for sent in sentences:
            tokens = sent.tokens
            words = ctx.mark_clause_final([t for t, _, _ in tokens], tokens, sent.low)
            hits = lex.match(sent.low, tokens, overlay)
            hits += lex.match_inverted(sent.low, tokens, hits)
            sent.hits = hits
            matched = {i for h in hits for i in range(h.tok_start, h.tok_end)}
            for cand in lex.near_misses(tokens, matched):
                state.candidates.append({"term": cand.term, "suggestion": cand.suggestion, "kind": cand.kind,
                                         "score": cand.score, "admitted": cand.admitted})
                if cand.admitted:
                    entry = next((e for e in lex.phrases.get(cand.suggestion, ()) if e.kind == "drug"), None)
                    if entry is None:
                        entry = Entry("drug", cand.suggestion, "drug_ner", "near match", drug_class=lex.class_of(cand.suggestion))
                    idx = next(i for i, t in enumerate(tokens) if t[1] == cand.start)
                    hits.append(Hit(cand.start, cand.end, idx, idx + 1, cand.term, (replace(entry, detail="near match"),)))
            hits.sort(key=lambda h: h.start)
            names = _names(text, sent, words)
            triggers = ctx.find_assertion_triggers(words)
            skip = {i for h in hits for i in range(h.tok_start, h.tok_end)}
            people = ctx.find_people(words, names, clinician_context, skip=skip, relation_hint=carry or last_relation)
            last_relation = next((p.relation for p in reversed(people) if p.kind in ("other", "owner")
                                  and p.relation not in ("", "other person")), last_relation)
            if carry and not any(p.kind == "self" for p in people):
                # the coach asked about someone else ("How's your husband?"): the answer is about them
                # until the patient speaks of themself
                people = [ctx.Person(-1, "other", carry)] + people
            elif prev_other and not people and len(words) <= 8 and not (set(words) & _FINITE_VERBS):
                # a verbless fragment right after a sentence about someone else ("Grandma's on hospice. Morphine
                # every few hours.") continues it; fragments with a verb are usually the patient's own
                people = [ctx.Person(-1, "other", prev_other)]
            elif prev_tail and (prev_other_health or asked_other) and not any(p.kind == "self" for p in people) and \
                    not any(p.kind in ("other", "owner") and p.relation not in ("", "other person", prev_tail) for p in people):
                # "Took Dad to his checkup. BP was 170/95 so they added amlodipine.": right after a sentence about
                # someone else's health, a sentence with no experiencer of its own goes on about them
                people = [ctx.Person(-1, "other", prev_other)] + people
            people = _quoted_speakers(sent, people)
            fam = _FAMILY_HISTORY.search(sent.low)
            if fam:
                # "X runs in my family", "family history of X": relatives' conditions unless the patient claims it
                # too; a first-person clause after it ("so I'm due for...") is the patient's again
                own = bool(_OWN_CLAIM.search(sent.low))
                fam_end = next((k for k, t in enumerate(tokens) if t[1] >= fam.end()), len(tokens))
                fam_end = next((k for k in range(fam_end, len(words)) if ctx._is_terminator(words, k)), fam_end)
                people = [ctx.Person(-1, "other", "family")] + [p for p in people if p.kind != "self" or own or p.index >= fam_end]
            if any(p.kind == "self" for p in people):
                carry = ""
            others = [p for p in people if p.kind in ("other", "owner")]
            prev_other = "" if any(p.kind == "self" for p in people) else (others[-1].relation if others else "")
            sent_meas = [m for m in measurements if sent.start <= m.start < sent.end]
            found = self._sentence_mentions(state, sent, words, hits, triggers, people, sent_meas, lex)
            prev_other_health = bool(prev_other) and any(m.subject == Subject.OTHER for m in found)
            # the experiencer the sentence ends on ("I'm so worried about him."): the next sentence may go on about them
            tail = [p for p in people if p.kind in ("self", "other", "owner")]
            prev_tail = tail[-1].relation or "other person" if tail and tail[-1].kind != "self" else ""
            state.mentions.extend(found)
        state.carry_out = carry
        if prev_tail and (_HEALTH_EVENT.search(low) or any(m.subject == Subject.OTHER for m in state.mentions)):
            state.tail_other = prev_tail
        self._coaching_mentions(state)
        return state

    def _sentence_mentions(self, state: TurnState, sent: Sentence, words: list[str], hits: list[Hit],
                           triggers: list, people: list, measurements: list[Measurement], lex: Lexicon) -> list[Mention]:
        """Every rule of SENTENCE_RULES, in order, adds the mentions it reads in the sentence."""
        scope = SentenceScope(state, sent, words, hits, triggers, people, measurements, lex)
        for rule in SENTENCE_RULES:
            rule(self, scope)
        return scope.out

    def _s_lexicon(self, s: SentenceScope) -> None:
        """The terminology's hits: drugs, classes, conditions, symptoms, allergens, procedures, vaccines, care."""
        named_drug = any(h.best.kind == "drug" for h in s.hits)
        allergy_cue = bool(_ALLERGY_CLAIM.search(s.sent.low))
        for hit in s.hits:
            self._s_lexicon_hit(s, hit, named_drug, allergy_cue)

    def _s_lexicon_hit(self, s: SentenceScope, hit: Hit, named_drug: bool, allergy_cue: bool) -> None:
        """One lexicon hit of the sentence as a memory of its category, unless a filter says it is not one."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        entry = hit.best
        kind = entry.kind
        if kind == "allergen" and not allergy_cue:
            self._s_allergen_eaten(s, hit)
            return
        if kind == "care" and hit.tok_end < len(words) and words[hit.tok_end] in ("high", "low", "out", "late", "behind", "around", "errands"):
            return  # "running high", "ran out": not exercise
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
        if not self._s_categorised(s, mention, category, hit, res, start, end):
            return
        if entry.record_ref:
            mention.attributes["record_ref"] = f"{entry.record_ref[0]}/{entry.record_ref[1]}"
            mention.attributes["display"] = entry.display
            if entry.code:
                mention.attributes["code_hint"] = entry.code
        mention.attributes["lexicon"] = [{"term": hit.term, "kind": kind, "canonical": entry.canonical, "source": entry.source}]
        mention.event_time = _event_time(state, sent)
        out.append(mention)

    def _s_allergen_eaten(self, s: SentenceScope, hit: Hit) -> None:
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

    def _s_categorised(self, s: SentenceScope, mention: Mention, category: str, hit: Hit, res: ctx.ContextResult,
                       start: int, end: int) -> bool:
        """Fill a lexicon mention by its category; False when it turns out not to be one (a service, no action)."""
        state, sent, words, lex, out = s.state, s.sent, s.words, s.lex, s.out
        entry, kind = hit.best, hit.best.kind
        if category == MemoryCategory.MEDICATION and kind == "drug" and _allergy_frame(sent.low, hit):
            # "my penicillin allergy", "allergic to sulfa drugs": the drug is the allergen, not a medication taken
            category = mention.category = MemoryCategory.ALLERGY
            self._allergy_claim(mention, Entry("allergen", entry.canonical, entry.source), sent)
        elif category == MemoryCategory.MEDICATION:
            if not self._medication(mention, hit, entry, res, words, sent, lex, state):
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
            self._allergy_claim(mention, entry, sent)
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

    def _s_generic_medications(self, s: SentenceScope) -> None:
        """A medicine named by its form or a pronoun ("my pen", "stopped it"), resolved later from the conversation."""
        s.out.extend(self._generic_medications(s.state, s.sent, s.words, s.hits, s.triggers, s.people, s.lex, s.out))

    def _s_programs(self, s: SentenceScope) -> None:
        """A care program named by its form (a class, a group, rehab) with a verb of joining, skipping or leaving it."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        for m in _PROGRAM.finditer(sent.low):
            a, b = sent.start + m.start(2), sent.start + m.end(2)
            if any(x.category == MemoryCategory.CARE_ACTIVITY and x.start < b and a < x.end for x in out):
                continue  # the dictionary already named it ("cardiac rehab")
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(2)), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            verb = m.group(1).split()[0]
            action = "stopped" if verb in _PROGRAM_STOP else "skipped" if verb in ("skipped", "skipping", "missed") else \
                "started" if verb in ("started", "starting", "signed", "joined", "enrolled") else "attending"
            if verb in ("skipped", "skipping", "missed"):
                action = "skipped"
            name = m.group(2).strip()
            care = Mention(MemoryCategory.CARE_ACTIVITY, state.turn, sent, a, b, {"name": name, "detail": m.group(0), "action": action},
                           res.subject, res.relation, res.assertion, confidence=0.55, turn_ids=[state.turn.id], name=name)
            if action == "stopped" and care.assertion == Assertion.NEGATED:
                care.assertion = Assertion.AFFIRMED
            care.event_time = _event_time(state, sent)
            out.append(care)

    def _s_body_site_pain(self, s: SentenceScope) -> None:
        """Pain, swelling or numbness at a body site ("my knee is killing me"); a generic symptom takes the site."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        covered_spans = [(x.start - sent.start, x.end - sent.start) for x in out]
        for m in _BODY_PAIN.finditer(sent.low):
            part = m.group("part") or m.group("part2") or m.group("part3")
            generic = [x for x in out if x.category == MemoryCategory.SYMPTOM and x.name in ("pain", "swelling", "stiffness")
                       and x.start < sent.start + m.end() and sent.start + m.start() < x.end]
            if generic:
                pname = f"{part} {generic[0].name}"
                generic[0].name = pname
                generic[0].attributes["name"] = pname
                generic[0].attributes["body_site"] = part
                break
            if any(a < m.end() and m.start() < b for a, b in covered_spans) and any(
                    x.category == MemoryCategory.SYMPTOM for x in out):
                continue
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            name = f"{part.rstrip('s') if part not in ('knees', 'hips') else part[:-1]} pain"
            mention = Mention(MemoryCategory.SYMPTOM, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                              {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion,
                              confidence=0.6, turn_ids=[state.turn.id], name=name)
            status = _stated_status(m.group(0), None)
            if status:
                mention.attributes["stated_status"] = status
            mention.event_time = _event_time(state, sent)
            out.append(mention)
            break

    def _s_diagnosis_named(self, s: SentenceScope) -> None:
        """A diagnosis reported in words the terminology lacks ("they said it was X")."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        if not any(x.category == MemoryCategory.CONDITION for x in out):
            for m in _DIAGNOSED.finditer(sent.low):
                name = m.group(2).strip()
                if not name or name.split()[0] in _STOP_CONDITION:
                    continue
                tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(2)), 0)
                res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
                mention = Mention(MemoryCategory.CONDITION, state.turn, sent, sent.start + m.start(2), sent.start + m.end(2),
                                  {"name": name, "term": name, "stated_status": "diagnosed"}, res.subject, res.relation,
                                  res.assertion, confidence=0.5, turn_ids=[state.turn.id], name=name)
                mention.event_time = _event_time(state, sent)
                state.candidates.append({"term": name, "suggestion": "", "kind": "condition", "score": 0.0, "admitted": True})
                out.append(mention)
                break

    def _s_prescribed_unlisted(self, s: SentenceScope) -> None:
        """A drug started by name that the terminology does not know."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        if not any(x.category == MemoryCategory.MEDICATION and not x.unresolved for x in out):
            for m in _PRESCRIBED.finditer(sent.low):
                drug = m.group(2)
                if drug in _GENERIC_WORDS or drug in ctx.SELF_WORDS:
                    continue
                tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(2)), 0)
                res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
                attrs = {"drug": drug, "drug_class": "", "action": "started", "unlisted": True}
                if m.group(3):
                    attrs["dose_text"] = m.group(3)
                source = _source(sent.low, drug, res, state.turn)
                if source:
                    attrs["source"] = source
                mention = Mention(MemoryCategory.MEDICATION, state.turn, sent, sent.start + m.start(2), sent.start + m.end(2),
                                  attrs, res.subject, res.relation, res.assertion, confidence=0.45, turn_ids=[state.turn.id],
                                  name=drug)
                mention.event_time = _event_time(state, sent)
                state.candidates.append({"term": drug, "suggestion": "", "kind": "drug", "score": 0.0, "admitted": False})
                out[:] = [x for x in out if not (x.category == MemoryCategory.MEDICATION and x.unresolved)]
                out.append(mention)
                break

    def _s_had_done(self, s: SentenceScope) -> None:
        """"had my X taken out / put in": a procedure named by its object and verb."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        for m in _HAD_X_DONE.finditer(sent.low):
            obj = m.group(1).strip()
            if any(x.category == MemoryCategory.PROCEDURE for x in out) or obj.split()[-1] in _NOT_PROCEDURE_OBJECTS \
                    or obj.split()[0] in _STOP_CONDITION:
                break
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(1)), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            verb = m.group(2)
            name = f"{'insertion' if verb in ('put in', 'placed', 'inserted', 'implanted') else 'replacement' if verb in ('replaced', 'swapped out', 'changed out') else 'removal'} of {obj}"
            mention = Mention(MemoryCategory.PROCEDURE, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                              {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion,
                              confidence=0.55, turn_ids=[state.turn.id], name=name)
            mention.event_time = _event_time(state, sent)
            out.append(mention)
            break

    def _s_suicidal(self, s: SentenceScope) -> None:
        """Suicidal ideation as people say it (PHQ-9 item 9 and C-SSRS wording)."""
        state, sent, words, people, out = s.state, s.sent, s.words, s.people, s.out
        for m in _SUICIDAL.finditer(sent.low):
            before = sent.low[max(0, m.start() - 14) : m.start()]
            if re.search(r"\b(?:never|not|don'?t|didn'?t|no)\s+(?:\w+\s+)?$", before) and not m.group(0).startswith(("don", "do not", "didn")):
                continue  # "I would never hurt myself", "I don't want to kill myself": a denial, stated
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=[], people=people)  # the wish carries its own negation
            kind = "active" if _ACTIVE_SI.search(sent.low) else "passive"
            if re.search(r"\b(?:i|me|myself|my)\b", m.group(0)) or re.match(r"(?:be |are |is )?better off", m.group(0)):
                # "they'd be better off without me": the people named are not the experiencer, the speaker is
                res = ctx.ContextResult()
            mention = Mention(MemoryCategory.CONDITION, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                              {"name": "suicidal ideation", "term": m.group(0), "stated_status": kind, "safety": "urgent"},
                              res.subject, res.relation, Assertion.AFFIRMED, confidence=0.7, turn_ids=[state.turn.id],
                              name="suicidal ideation")
            mention.event_time = _event_time(state, sent)
            out.append(mention)
            break

    def _s_procedure_noun(self, s: SentenceScope) -> None:
        """A procedure named by its generic noun (surgery, scan, biopsy) when nothing named it yet."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        if not any(x.category == MemoryCategory.PROCEDURE for x in out):
            for m in _PROC_NOUN.finditer(sent.low):
                name = m.group(0).strip()
                if name.split()[0] in _STOP_CONDITION or any(x.start <= sent.start + m.start() < x.end for x in out if x.category == MemoryCategory.IMMUNIZATION):
                    continue
                tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
                res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
                mention = Mention(MemoryCategory.PROCEDURE, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                                  {"name": name, "term": name}, res.subject, res.relation, res.assertion, confidence=0.5,
                                  turn_ids=[state.turn.id], name=name)
                where = _WHERE.search(sent.low)
                if where:
                    mention.attributes["where"] = where.group(1).strip()
                mention.event_time = _event_time(state, sent)
                out.append(mention)
                break

    def _s_vaccine_list(self, s: SentenceScope) -> None:
        """Vaccines listed by disease ("flu and covid shots"), one memory each."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        for m in _VACCINE_LIST.finditer(sent.low):
            for part in re.findall(_VACCINE_NAMES, m.group(1)):
                name = _VACCINE_CANON.get(part.split()[0], part) if part else part
                if any(x.category == MemoryCategory.IMMUNIZATION and x.name == name for x in out):
                    continue
                tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
                res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
                mention = Mention(MemoryCategory.IMMUNIZATION, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                                  {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion, confidence=0.6,
                                  turn_ids=[state.turn.id], name=name)
                where = _WHERE.search(sent.low)
                if where:
                    mention.attributes["where"] = where.group(1).strip()
                mention.event_time = _event_time(state, sent)
                out[:] = [x for x in out if not ((x.category == MemoryCategory.CONDITION and x.name in ("influenza", "covid-19", "herpes zoster", "pneumonia")
                                               or x.category == MemoryCategory.IMMUNIZATION and x.name == "vaccine")
                                              and x.start >= sent.start + m.start() and x.end <= sent.start + m.end())]
                out.append(mention)

    def _s_allergic_to(self, s: SentenceScope) -> None:
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
                    self._allergy_claim(mention, Entry("allergen", substance, "rules"), sent)
                    mention.event_time = _event_time(state, sent)
                    out.append(mention)

    def _s_removal(self, s: SentenceScope) -> None:
        """Something removed (polyps, a mole, a cyst): a procedure."""
        state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
        for m in _REMOVAL.finditer(sent.low):
            if any(x.category == MemoryCategory.PROCEDURE for x in out):
                break
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            name = f"removal of {m.group(2)}"
            mention = Mention(MemoryCategory.PROCEDURE, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                              {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion,
                              confidence=0.6, turn_ids=[state.turn.id], name=name)
            mention.event_time = _event_time(state, sent)
            out.append(mention)

    def _s_measurements(self, s: SentenceScope) -> None:
        """Readings and amounts (blood pressure, glucose, weight, smoking, drinking) as measurements."""
        state, sent, words, triggers, people, measurements, out = s.state, s.sent, s.words, s.triggers, s.people, s.measurements, s.out
        for meas in measurements:
            tok_start = next((i for i, t in enumerate(sent.tokens) if sent.start + t[1] >= meas.start), 0)
            tok_end = next((i for i, t in enumerate(sent.tokens) if sent.start + t[1] >= meas.end), len(words))
            res = ctx.assess(words, tok_start, max(tok_end, tok_start + 1), triggers=triggers, people=people)
            attrs = meas.attributes()
            mention = Mention(MemoryCategory.MEASUREMENT, state.turn, sent, meas.start, meas.end, attrs, res.subject,
                              res.relation, res.assertion, confidence=0.8, turn_ids=[state.turn.id], name=meas.kind)
            if mention.assertion == Assertion.UNCERTAIN and re.search(r"\b(?:maybe|probably|guess)\s+(?:like\s+|about\s+|around\s+)?$",
                                                                  state.low[max(0, meas.start - 22) : meas.start]):
                mention.assertion = res.assertion = Assertion.AFFIRMED  # "maybe half a pack a day": the amount is hedged, not the fact
            if meas.qualifier == "usual" and mention.assertion == Assertion.AFFIRMED:
                mention.assertion = Assertion.HISTORICAL  # "I'm usually in the 120s" is a baseline, not a reading
            mention.event_time = _event_time(state, sent)
            out.append(mention)
            if meas.kind in _BEHAVIOUR_CARE and not any(x.category == MemoryCategory.CARE_ACTIVITY and x.name == _BEHAVIOUR_CARE[meas.kind] for x in out):
                # smoking and drinking are also care-plan behaviours (cessation, limits)
                name = _BEHAVIOUR_CARE[meas.kind]
                care = Mention(MemoryCategory.CARE_ACTIVITY, state.turn, sent, meas.start, meas.end,
                               {"name": name, "detail": state.low[meas.start:meas.end],
                                "action": "stopped" if meas.qualifier == "former" else "using" if meas.kind == "tobacco_use" else ""},
                               res.subject, res.relation, res.assertion, confidence=0.5, turn_ids=[state.turn.id], name=name)
                if not care.attributes["action"]:
                    del care.attributes["action"]
                care.event_time = mention.event_time
                out.append(care)
            if meas.kind == "tobacco_use" and meas.qualifier != "former" and mention.assertion == Assertion.AFFIRMED \
                    and state.low[meas.start:meas.end] not in ("dip", "tobacco", "nicotine") \
                    and not any(x.category == MemoryCategory.CONDITION and x.name == "tobacco use" for x in out):
                # current smoking is also a condition (tobacco use, a smoker finding): a record that says
                # "ex-smoker" or "never smoked" is contradicted by it
                relapse = bool(_RELAPSE.search(sent.low))
                cond = Mention(MemoryCategory.CONDITION, state.turn, sent, meas.start, meas.end,
                               {"name": "tobacco use", "term": state.low[meas.start:meas.end],
                                "stated_status": "relapsed" if relapse else "active"},
                               res.subject, res.relation, res.assertion, confidence=0.6, turn_ids=[state.turn.id],
                               name="tobacco use")
                cond.event_time = mention.event_time
                out.append(cond)


    def _medication(self, mention: Mention, hit: Hit, entry: Entry, res: ctx.ContextResult, words: list[str],
                    sent: Sentence, lex: Lexicon, state: TurnState) -> bool:
        attrs: dict[str, Any] = {}
        if entry.kind == "drug":
            attrs["drug"] = entry.canonical
            attrs["drug_class"] = entry.drug_class or lex.class_of(entry.canonical)
        else:
            attrs["drug"] = ""
            attrs["drug_class"] = entry.canonical
            mention.unresolved = True
        clause = _clause_around(sent, hit.start, hit.end)
        action, dose_change = _action(clause, sent.low, hit, words, res)
        switch = re.search(r"\b(switch\w*|chang\w*|mov\w*|went)\b[^.!?]{0,20}\bfrom\b", sent.low)
        if switch:
            before = sent.low[max(0, hit.start - 12) : hit.start]
            if re.search(r"\bfrom\s+(?:my |the )?$", before):
                action, dose_change = "stopped", ""  # "switched me from Lantus to Tresiba": the old one stops
            elif re.search(r"\bto\s+(?:my |the )?$", before):
                action, dose_change = "started", ""
        if mention.unresolved and entry.canonical in ("inhaler", "vitamin supplement", "antibiotic") and action is None:
            return False  # a bare generic class with no action is not a statement about a medication
        if res.assertion == Assertion.NEGATED and action in ("stopped", "skipped"):
            mention.assertion = Assertion.AFFIRMED  # "haven't taken my X", "no more X": an action, not a denial
        attrs["action"] = action or "taking"
        if dose_change:
            attrs["dose_change"] = dose_change
        dose = _DOSE.search(sent.low)
        if dose:
            attrs["dose_text"] = dose.group(1)
        freq = _FREQUENCY.search(sent.low)
        if freq:
            attrs["frequency"] = freq.group(1)
            if attrs["action"] == "took_once":
                attrs["action"] = "taking"
        if mention.subject == Subject.OTHER and _HANDED_TO_ME.search(sent.low, hit.end):
            # "she had some extra pills so she gave me a few and I've been taking one": the other person owned
            # them, the patient takes them
            attrs["owner"] = mention.relation or "other person"
            attrs["source"] = "someone_else"
            mention.subject, mention.relation = Subject.PATIENT, ""
            if attrs["action"] == "taking" and re.search(r"\b(?:gave|giving|handed|lent)\s+me\b", sent.low[hit.end:]):
                attrs["action"] = "started"
            mention.attributes = attrs
            mention.name = attrs["drug"] or attrs["drug_class"]
            if entry.display:
                attrs["display"] = entry.display
                if entry.code:
                    attrs["rxnorm_hint"] = entry.code
            return True
        source = _source(sent.low, attrs["drug"], res, mention.turn)
        if not source and attrs["action"] in ("started", "changed_dose") and _OUTSIDE.search(state.context_text):
            source = "outside_clinician"  # "she added a pill" after "I saw a specialist"
        if source:
            attrs["source"] = source
        if res.owner:
            attrs["owner"] = res.owner
        mention.attributes = attrs
        mention.name = attrs["drug"] or attrs["drug_class"]
        if entry.display:
            attrs["display"] = entry.display
            if entry.code:
                attrs["rxnorm_hint"] = entry.code
        return True

    def _generic_medications(self, state: TurnState, sent: Sentence, words: list[str], hits: list[Hit], triggers: list,
                             people: list, lex: Lexicon, found: list[Mention]) -> list[Mention]:
        """"haven't done my pen", "stopped it": a medication action whose drug comes from the conversation."""
        has_med = any(m.category == MemoryCategory.MEDICATION for m in found)
        out: list[Mention] = []
        covered = [(h.start, h.end) for h in hits]
        for rx in ((_PRONOUN_MED,) if has_med else (_GENERIC_MED, _PRONOUN_MED)):
            for m in rx.finditer(sent.low):
                g = 1 if rx is _GENERIC_MED else 2
                start, end = m.start(g), m.end(g)
                if any(s <= start < e for s, e in covered):
                    continue
                tok_start = next((i for i, t in enumerate(sent.tokens) if t[1] >= start), len(words) - 1)
                pseudo = Hit(start, end, tok_start, tok_start + 1, m.group(g), (Entry("drug_class", "", "rules"),))
                res = ctx.assess(words, tok_start, tok_start + 1, triggers=triggers, people=people)
                clause = _clause_around(sent, start, end)
                action, dose_change = _action(clause, sent.low, pseudo, words, res)
                if action in (None, "taking") and rx is _GENERIC_MED:
                    continue  # "my pills" with no change is too vague to be a memory on its own
                word = m.group(g)
                cls = "injectable" if word.startswith(("pen", "shot", "inject")) else "inhaler" if word == "inhaler" else ""
                attrs: dict[str, Any] = {"drug": "", "drug_class": cls, "action": action or "taking", "reference": word}
                if rx is _PRONOUN_MED:
                    attrs["anaphora"] = True
                if dose_change:
                    attrs["dose_change"] = dose_change
                if res.assertion == Assertion.NEGATED and action in ("stopped", "skipped"):
                    res.assertion = Assertion.AFFIRMED
                source = _source(sent.low, "", res, state.turn)
                if source:
                    attrs["source"] = source
                mention = Mention(MemoryCategory.MEDICATION, state.turn, sent, sent.start + start, sent.start + end, attrs,
                                  res.subject, res.relation, res.assertion, confidence=0.5, turn_ids=[state.turn.id],
                                  name=cls or word, unresolved=True)
                mention.event_time = _event_time(state, sent)
                out.append(mention)
                covered.append((start, end))
        return out

    def _allergy_claim(self, mention: Mention, entry: Entry, sent: Sentence) -> None:
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

    def _coaching_mentions(self, state: TurnState) -> None:
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

    # ---- drafts -------------------------------------------------------------------------------

    def _draft(self, mention: Mention, state: TurnState) -> MemoryDraft:
        text = state.turn.text
        start, end = _quote_span(mention, text)
        quote = text[start:end]
        category = str(mention.category)
        chain_name = mention.name or category
        chain_key = f"{category}:{chain_name}"[:120]
        attrs = dict(mention.attributes)
        return MemoryDraft(
            category=category,
            content=_content(mention),
            anchor_turn_id=state.turn.id,
            turn_ids=tuple(dict.fromkeys(mention.turn_ids or [state.turn.id])),
            quote=quote,
            quote_start=start,
            quote_end=end,
            speaker=state.turn.speaker,
            mention_time=state.turn.at,
            subject=str(mention.subject),
            subject_relation=mention.relation[:40],
            assertion=str(mention.assertion),
            attributes=attrs,
            event_time=mention.event_time,
            confidence=round(mention.confidence, 2),
            chain_key=chain_key,
            op=MemoryOp.INSERT,
            engine=self.name,
            engine_version=self.version,
        )



# The sentence rules, in order: each adds what it reads; later rules see (and defer to) what earlier ones found.
SENTENCE_RULES = (
    RulesExtractor._s_lexicon,
    RulesExtractor._s_generic_medications,
    RulesExtractor._s_programs,
    RulesExtractor._s_body_site_pain,
    RulesExtractor._s_diagnosis_named,
    RulesExtractor._s_prescribed_unlisted,
    RulesExtractor._s_had_done,
    RulesExtractor._s_suicidal,
    RulesExtractor._s_procedure_noun,
    RulesExtractor._s_vaccine_list,
    RulesExtractor._s_allergic_to,
    RulesExtractor._s_removal,
    RulesExtractor._s_measurements,
)


# ---- helpers ----------------------------------------------------------------------------------


def _clinician_context(previous: list[TurnState]) -> bool:
    for state in reversed(previous[-2:]):
        if any(w in ctx.CLINICIANS for s in state.sentences for w, _, _ in s.tokens):
            return True
    return False


_YOUR_RELATION = re.compile(r"\b(?:your|ur)\s+(" + "|".join(sorted(ctx.RELATIONS, key=len, reverse=True)) + r")\b")


def _asked_about_other(previous: list[TurnState]) -> str:
    """The coach's last question was about someone else ("How's your husband doing?"): the answer starts there."""
    if not previous or previous[-1].turn.speaker == "patient":
        return ""
    m = _YOUR_RELATION.search(previous[-1].low)
    if m and "?" in previous[-1].low:
        return m.group(1)
    # "How is Maria doing after her surgery?", "Did Tom's scan come back?": a question about a named third person
    text = previous[-1].turn.text if isinstance(previous[-1].turn.text, str) else ""
    for q in re.findall(r"[^.!?]*\?", text):
        if re.search(r"\b(?:you|your|ur|u)\b", q, re.I):
            continue
        m = _ASKED_NAME.search(q)
        name = (m.group(1) or m.group(2)).lower() if m else ""
        if name and name not in _CAPITAL_NOT_NAME and name not in ctx.CLINICIANS and name not in _NOT_A_PERSON:
            return "named person"
    # "Is he doing okay?", "How is she feeling?": a question about a third person and not about "you"
    for sent in previous[-1].sentences:
        if not sent.low.rstrip().endswith("?"):
            continue
        words = {w for w, _, _ in sent.tokens}
        if words & _THIRD_PERSON_SUBJECT and not words & {"you", "your", "ur", "u", "you're", "youre", "yourself"}:
            return "other person"
    return ""


_ASKED_NAME = cue_pattern("asked_name")
_HEALTH_EVENT = cue_pattern("health_event")


def _neutral_follow_up(coach: TurnState) -> bool:
    """A coach reply that asks on without turning to the patient ("Oh no, what happened?", "Is everything ok?")."""
    if "?" not in coach.low:
        return False
    return not re.search(r"\b(you|your|ur|u|you're|youre|yourself)\b", coach.low)


_THIRD_PERSON_SUBJECT = cue_words("third_person_subject")


def _carry_after(people: list, carry: str) -> str:
    """The experiencer a following fragment inherits: the last other person, unless the patient spoke of themself."""
    if not people:
        return carry
    last = [p for p in people if p.kind in ("self", "other", "owner")]
    if not last:
        return carry
    if any(p.kind == "self" for p in last):
        return ""
    return last[-1].relation or carry


def _names(text: str, sent: Sentence, words: list[str]) -> set[int]:
    """Token indexes of capitalised person names ("Gary wants...", "Hector's", "my sister Deb")."""
    out: set[int] = set()
    third_person_later = any(w in ctx.OTHER_PRONOUNS for w in words[2:])
    for i, (word, s, _) in enumerate(sent.tokens):
        pos = sent.start + s
        base = word[:-2] if word.endswith("'s") else word
        if pos >= len(text) or not text[pos].isupper() or word in _CAPITAL_NOT_NAME or word in ctx.OTHER_PRONOUNS \
                or word in ctx.SELF_WORDS or base in _NOT_A_PERSON or base in _CAPITAL_NOT_NAME:
            continue
        raw = text[pos : pos + len(word)]
        if not word.replace("'", "").replace("-", "").isalpha():
            continue  # "A1c", "B12": lab and vitamin names, not people
        if raw.isupper() and len(raw) > 1:
            continue  # acronyms and shouting, not names
        prev = words[i - 1] if i > 0 else ""
        if prev in ("dr", "doctor", "nurse", "at", "the", "to", "from", "in", "dr."):
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        # sentence-initial capitals are ordinary words ("Better, started on...") unless a present-tense
        # third-person verb follows ("Gary wants...", "Deb has...")
        verbs = _NAME_NEXT_INITIAL if i == 0 else _NAME_NEXT
        if word.endswith("'s") or nxt in verbs or prev in ctx.RELATIONS:
            out.add(i)
        elif i > 0 and prev == "for" and raw[0].isupper() and not raw.isupper():
            out.add(i)  # "the new inhaler for Timmy": a named beneficiary (drug and place names are lexicon hits)
        elif i == 0 and nxt in _PLACE_PREPS and any(words[k] in _NAME_S_VERBS and words[k + 1 : k + 2] != ["been"] for k in range(i + 2, min(i + 7, len(words)))) and not word.endswith("ly"):
            # "Ellen from church takes Ozempic", "Raj next door has gout": a name qualified by where the person is from
            out.add(i)
        elif i == 0 and nxt in _PLACE_PREPS and third_person_later and not word.endswith("ly") and \
                any(w in _NAME_NEXT_PAST or w in ("got", "was", "is") for w in words[i + 2 : i + 6]):
            out.add(i)  # "Bob from work got diagnosed with diabetes, he's on metformin"
        elif i == 0 and not word.endswith("ly") and third_person_later and (
                nxt in _NAME_NEXT_PAST or (nxt in _ADVERBS and i + 2 < len(words) and words[i + 2] in _NAME_NEXT_PAST)):
            # "Marco had a seizure at school, his mom...": a sentence-initial capital with a past-tense verb is a
            # name when the sentence goes on about "he"/"she"; without that it is chat dropping "I" ("Finally had...")
            out.add(i)
    # chat often skips capitals: "darlene is on blood thinners", "bob takes metformin"
    for i in range(len(words) - 1):
        word = words[i]
        if i in out or not word.isalpha() or len(word) < 3 or word in _NOT_A_PERSON or word in ctx.SELF_WORDS \
                or word in ctx.OTHER_PRONOUNS or word in ctx.RELATIONS or word in ctx.CLINICIANS:
            continue
        tail = " ".join(words[i + 1 : i + 4])
        if _PERSON_VERB.match(tail):
            out.add(i)
    return out


_QUOTE = cue_pattern("quote")
_SPEECH_BEFORE_QUOTE = cue_pattern("speech_before_quote")


def _quoted_speakers(sent: Sentence, people: list) -> list:
    """'My sister said "I have been on Lexapro for years"': first person inside another person's quoted words is them."""
    if '"' not in sent.low and "\u201c" not in sent.low:
        return people
    for m in _QUOTE.finditer(sent.low):
        if not _SPEECH_BEFORE_QUOTE.search(sent.low[: m.start()]):
            continue
        first = next((k for k, t in enumerate(sent.tokens) if t[1] >= m.start(1)), len(sent.tokens))
        last = next((k for k, t in enumerate(sent.tokens) if t[1] >= m.end(1)), len(sent.tokens))
        speaker = next((p for p in reversed(people) if p.index < first), None)
        if speaker is None or speaker.kind not in ("other", "owner"):
            continue
        people = [ctx.Person(p.index, "other", speaker.relation) if p.kind == "self" and first <= p.index < last else p
                  for p in people]
    return people


def _clause_around(sent: Sentence, start: int, end: int) -> str:
    """The clause of the sentence holding [start, end): split on commas, semicolons and 'but'."""
    low = sent.low
    bounds = [0] + [m.end() for m in re.finditer(r"[,;:]|\bbut\b|\band\b|\bthen\b|\bso\b|\bbecause\b", low)] + [len(low)]
    lo = max(b for b in bounds if b <= start) if any(b <= start for b in bounds) else 0
    hi = min((b for b in bounds if b >= end), default=len(low))
    clause = low[lo:hi]
    if len(clause.split()) <= 2:  # "the lisinipril," as an apposition: use the whole sentence
        return low
    return clause


def _action(clause: str, sentence: str, hit: Hit, words: list[str], res: ctx.ContextResult) -> tuple[str | None, str]:
    if res.negation_at >= 0 and words[res.negation_at] in ("without", "no") and 0 <= hit.tok_start - res.negation_at <= 3:
        return "stopped", ""  # "without my januvia", "no more advil"
    if res.negation_at >= 0 and re.search(r"\b(?:anymore|any more|no longer)\b", sentence) and \
            re.search(r"\b(?:have|got|use|using|on|take|taking|need)\b", sentence):
        return "stopped", ""  # "I don't even have Lantus anymore", "not on it any more"
    if res.negation_at >= 0:
        after = words[res.negation_at + 1 : res.negation_at + 4]
        if any(w in _INTAKE for w in after) or any(w in ("on", "been") for w in after):
            if re.search(r"\b(in|for|since)\b[^.!?]*\b(days?|weeks?|months?|years?|wks?)\b|\banymore\b|\bsince\b", sentence):
                return "stopped", ""
            if re.search(r"\b(today|yesterday|last night|this morning|dose|once|couple of times|few times)\b", sentence):
                return "skipped", ""
            return "stopped", ""
    instead = _INSTEAD_OF.search(sentence)
    if instead and instead.group(1) in _AMOUNT and instead.group(2) in _AMOUNT and \
            _AMOUNT[instead.group(1)] != _AMOUNT[instead.group(2)]:
        # "taking two every morning instead of one", "half a pill instead of a whole one": a self-made dose change
        return "changed_dose", "more" if _AMOUNT[instead.group(1)] > _AMOUNT[instead.group(2)] else "less"
    found = _nearest_action(clause, hit.term)
    if found is None and clause != sentence:
        found = _nearest_action(sentence, hit.term)
    return found if found is not None else (None, "")


_AMOUNT = {"half": 0.5, "one": 1, "1": 1, "a": 1, "two": 2, "2": 2, "three": 3, "3": 3, "four": 4, "4": 4, "double": 2,
           "whole": 1, "single": 1}
_INSTEAD_OF = cue_pattern("instead_of")


def _nearest_action(text: str, term: str) -> tuple[str, str] | None:
    """The action verb nearest the mention; a specific action (stopped, changed dose) beats a generic one
    ("taking", "took") unless the generic verb is much closer."""
    found = re.search(r"(?<![a-z0-9])" + re.escape(term) + r"(?![a-z0-9])", text) if term else None
    center = found.start() if found else -1
    best: tuple[float, str, str] | None = None
    for rx, action, dose_change in _ACTION_RX:
        for m in rx.finditer(text):
            if center >= 0 and m.start() <= center < m.end():
                continue  # the mention's own words ("pill" in "pill")
            distance = float(abs(m.start() - center) if center >= 0 else m.start())
            if action not in ("taking", "took_once"):
                distance -= 12
            if best is None or distance < best[0]:
                best = (distance, action, dose_change)
    return None if best is None else (best[1], best[2])


def _source(sentence: str, drug: str, res: ctx.ContextResult, turn: TurnInput) -> str:
    if res.owner or _SOMEONE_ELSE.search(sentence):
        return "someone_else"
    if _OUTSIDE.search(sentence):
        return "outside_clinician"
    if drug in _OTC_DRUGS or _OTC.search(sentence):
        return "otc"
    return ""


_SERVICE_WORDS = cue_words("service_words")


def _followed_by_service(words: list[str], idx: int) -> bool:
    return idx < len(words) and words[idx] in _SERVICE_WORDS


def _allergy_frame(low: str, hit: Hit) -> bool:
    after = low[hit.end : hit.end + 25]
    before = low[max(0, hit.start - 30) : hit.start]
    return bool(re.match(r"\s*(?:drugs?\s+|meds?\s+|antibiotics?\s+)?(allerg\w*|intoleran\w*|sensitivity)", after)
                or re.search(r"(allergic|allergy|allergies|reaction|react|sensitive|intolerant)\s+(?:to|from|with)\s+(?:the |my |any |all )?$", before))


def _after_more(words: list[str], idx: int) -> bool:
    return idx + 1 < len(words) and words[idx + 1] in ("more", "longer")


def _stated_status(sentence: str, hit: Hit | None) -> str:
    for rx, status in _STATUS_WORDS:
        if rx.search(sentence):
            return status
    return ""


_CARE_VERBS = cue_words("care_verbs")


def _care_action(sentence: str) -> str:
    if re.search(r"\b(quit|stopped|stop|gave up|give up|giving up|haven't|havent|not using|don't use|dont use|cant stand|"
                 r"can't stand|fell off|off the|cheating on|skipping|skipped|dropped out|ditched|no longer|abandoned|"
                 r"discontinued|not following|stopped following|not sticking|slacking|slacked)\b", sentence):
        return "stopped"
    if re.search(r"\b(done with|finished with|through with|over with)\b", sentence):
        return "stopped"
    if re.search(r"\b(started|start|began|signed up|joined|bought|new)\b", sentence):
        return "started"
    return ""


def _sentence_time(state: TurnState, sent: Sentence) -> EventTime | None:
    """The first time expression of a sentence, resolved once per sentence."""
    if sent.when is _UNSET:
        at = state.turn.at
        sent.when = resolve(state.turn.text[sent.start : sent.end], at) if isinstance(at, datetime) else None
    return sent.when


def _event_time(state: TurnState, sent: Sentence) -> EventTime | None:
    found = _sentence_time(state, sent)
    if found is None and len(state.sentences) <= 4:
        # a short answer often gives the time in its own sentence ("Couple weeks. So I started...")
        for other in state.sentences:
            if other is sent or other.start > sent.start:
                continue
            found = _sentence_time(state, other)
            if found is not None:
                break
    return found


def _quote_span(mention: Mention, text: str) -> tuple[int, int]:
    """The sentence holding the mention, trimmed; always a valid slice of the turn text."""
    start = max(0, min(mention.sentence.start, len(text)))
    end = max(start, min(mention.sentence.end, len(text)))
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end - start > 500:  # a giant run-on sentence: quote a window around the mention
        start = max(start, mention.start - 200)
        end = min(end, mention.end + 200)
    return start, end


def _content(m: Mention) -> str:
    a = m.attributes
    who = "" if m.subject == Subject.PATIENT else f"[{m.relation or 'other person'}] "
    flag = "" if m.assertion == Assertion.AFFIRMED else f" ({m.assertion})"
    if m.category == MemoryCategory.MEDICATION:
        drug = a.get("drug") or a.get("drug_class") or a.get("reference") or "medication"
        action = a.get("action", "taking").replace("_", " ")
        extra = ""
        if a.get("dose_change"):
            extra += f", dose {a['dose_change']}"
        if a.get("frequency"):
            extra += f", {a['frequency']}"
        if a.get("source"):
            extra += f", source {a['source'].replace('_', ' ')}"
        return f"{who}Medication {drug}: {action}{extra}{flag}"
    if m.category == MemoryCategory.MEASUREMENT:
        v = a.get("value")
        value = f"{v}/{a['value2']}" if a.get("value2") is not None else str(v)
        if a.get("values") and len(a["values"]) > 1:
            value = ", ".join(str(x) for x in a["values"])
        return f"{who}{a.get('kind', 'measurement').replace('_', ' ')} {value} {a.get('unit', '')}".rstrip() + flag
    if m.category == MemoryCategory.ALLERGY:
        status = f" ({a['stated_status']})" if a.get("stated_status") else ""
        reaction = f": {a['reaction']}" if a.get("reaction") else ""
        return f"{who}Allergy {a.get('substance', '')}{reaction}{status}{flag}"
    if m.category in (MemoryCategory.CONDITION, MemoryCategory.SYMPTOM):
        status = f" ({a['stated_status']})" if a.get("stated_status") else ""
        return f"{who}{m.category.value.capitalize()} {a.get('name', '')}{status}{flag}"
    if m.category in (MemoryCategory.PROCEDURE, MemoryCategory.IMMUNIZATION):
        where = f" at {a['where']}" if a.get("where") else ""
        return f"{who}{m.category.value.capitalize()} {a.get('name', '')}{where}{flag}"
    detail = a.get("detail") or a.get("name") or ""
    return f"{who}{m.category.value.replace('_', ' ').capitalize()}: {detail}{flag}"[:300]


# ---- the conversation around a turn --------------------------------------------------------------


def _patient_neighbours(states: list[TurnState], i: int, before: int, after: int) -> list[TurnState]:
    """Patient turns near position i (same session), nearest first, backwards then forwards."""
    out: list[TurnState] = []
    back = [s for s in states[:i] if s.turn.speaker == "patient"][-before:] if before else []
    fwd = [s for s in states[i + 1 :] if s.turn.speaker == "patient"][:after] if after else []
    out.extend(fwd)
    out.extend(reversed(back))
    return out


def _compatible(unresolved_class: str, entry_class: str) -> bool:
    """A drug of entry_class can be what a mention of unresolved_class ("my blood pressure pill") refers to."""
    if not unresolved_class or unresolved_class == entry_class:
        return True
    vocab = load_vocabulary()
    family, member = vocab.class_named(unresolved_class), vocab.class_named(entry_class)
    return family is not None and member is not None and vocab.is_a(member.id, family.id)


def _record_class_drugs(record: ClinicalRecord | None, lex: Lexicon, lay_class: str) -> list[tuple[str, Any]]:
    if record is None or not lay_class:
        return []
    out = []
    try:
        meds = record.active_medications
    except Exception:
        return []
    for med in meds:
        names = _record_names(med.display or "", "drug", lex)
        canonical = names[0][1] if names else _head(med.display)
        cls = lex.class_of(canonical)
        if _compatible(lay_class, cls) and cls:
            out.append((canonical, med))
    return out


def _head(display: str) -> str:
    words = re.findall(r"[a-z]+", display.lower())
    return words[0] if words else ""


def _link_session(states: list[TurnState], record: ClinicalRecord | None, lex: Lexicon) -> None:
    for i, state in enumerate(states):
        if state.turn.speaker != "patient":
            continue
        coach_before = states[i - 1] if i > 0 and states[i - 1].turn.speaker != "patient" else None
        for mention in list(state.mentions):
            if mention.category != MemoryCategory.MEDICATION or not mention.unresolved:
                continue
            _resolve_medication(mention, state, states, i, coach_before, record, lex)
        _answer_fills_action(state, states, i, coach_before)
        _answer_about_coach_entity(state, coach_before, lex)
        _reason_links(state, states, i, coach_before)
        _allergy_inference(state, states, i)
        _continuations(state, states, i, coach_before)
    _burst_links(states)


_ALLERGY_SYNONYMS = {
    "sulfonamide": ("sulfa", "sulfonamide", "sulfamethoxazole"), "penicillin": ("penicillin", "amoxicillin", "ampicillin"),
    "insect venom": ("bee", "wasp", "venom", "sting", "hornet", "yellow jacket"), "tree nut": ("nut", "cashew", "almond", "walnut", "pecan"),
    "shellfish": ("shellfish", "shrimp", "crab", "lobster", "crustacean"), "nsaid": ("nsaid", "ibuprofen", "naproxen", "aspirin"),
    "latex": ("latex", "rubber"), "peanut": ("peanut",), "cephalosporin": ("cephalosporin", "cephalexin", "cefdinir"),
}


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


def _burst_links(states: list[TurnState]) -> None:
    """Consecutive patient messages are one utterance split by the send button: a message with nothing
    clinical of its own ("ugh", "anyway the doc said to call") joins the clinical memories of its neighbour."""
    bursts: list[list[TurnState]] = []
    for state in states:
        if state.turn.speaker == "patient" and bursts and bursts[-1][-1].turn.speaker == "patient" \
                and states.index(bursts[-1][-1]) == states.index(state) - 1:
            bursts[-1].append(state)
        elif state.turn.speaker == "patient":
            bursts.append([state])
    for burst in bursts:
        if len(burst) < 2:
            continue
        for k, state in enumerate(burst):
            if any(m.category != MemoryCategory.LIFESTYLE for m in state.mentions):
                continue
            for other in [burst[j] for j in range(k - 1, -1, -1)] + burst[k + 1 :]:
                targets = [m for m in other.mentions if m.category in CLINICAL | {"care_activity"}
                           and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
                if targets:
                    for m in targets:
                        if state.turn.id not in m.turn_ids:
                            m.turn_ids.append(state.turn.id)
                    break


def _resolve_medication(mention: Mention, state: TurnState, states: list[TurnState], i: int,
                        coach_before: TurnState | None, record: ClinicalRecord | None, lex: Lexicon) -> None:
    cls = mention.attributes.get("drug_class", "")
    # 1. a named drug earlier in this turn, then in the neighbouring patient turns: a pronoun ("stopped it")
    #    looks back first, a noun ("my pen") looks at the answer that follows first.
    same_turn = [m for m in state.mentions if m.start < mention.start]
    neighbours = (_patient_neighbours(states, i, 2, 0) + _patient_neighbours(states, i, 0, 2)
                  if mention.attributes.get("anaphora") else _patient_neighbours(states, i, 2, 2))
    pools: list[tuple[TurnState, list[Mention]]] = [(state, same_turn)] + [(s, s.mentions) for s in neighbours]
    for other_state, mentions in pools:
        for other in mentions:
            if other is mention or other.category != MemoryCategory.MEDICATION or other.unresolved:
                continue
            if other.subject != Subject.PATIENT or not _compatible(cls, other.attributes.get("drug_class", "")):
                continue
            if mention.attributes.get("anaphora") and other.attributes.get("drug") in _ANTIHISTAMINE:
                continue
            _merge(mention, other, other_state)
            return
    # 2. the coach's question named it ("Are you still taking your metformin?")
    if coach_before is not None:
        for sent in coach_before.sentences:
            for hit in getattr(sent, "hits", []):
                if hit.best.kind == "drug" and _compatible(cls, hit.best.drug_class or lex.class_of(hit.best.canonical)):
                    mention.attributes["drug"] = hit.best.canonical
                    mention.attributes.setdefault("drug_class", hit.best.drug_class)
                    mention.name = hit.best.canonical
                    mention.unresolved = False
                    mention.turn_ids.append(coach_before.turn.id)
                    return
    # 3. the record holds exactly one active drug of that class
    candidates = _record_class_drugs(record, lex, cls)
    if len({c for c, _ in candidates}) == 1:
        canonical, med = candidates[0]
        mention.attributes["drug"] = canonical
        mention.attributes["display"] = med.display
        if med.primary_coding:
            mention.attributes["rxnorm_hint"] = med.primary_coding.code
        mention.attributes["record_ref"] = f"{med.resource_type}/{med.id}"
        mention.name = canonical
        mention.unresolved = False
        mention.confidence = min(mention.confidence, 0.6)


def _merge(unresolved: Mention, named: Mention, named_state: TurnState) -> None:
    """The unresolved action takes the drug; the named mention takes the action if it had none."""
    for key in ("drug", "drug_class", "display", "rxnorm_hint", "record_ref"):
        if named.attributes.get(key):
            unresolved.attributes[key] = named.attributes[key]
    unresolved.name = named.name
    unresolved.unresolved = False
    unresolved.confidence = max(unresolved.confidence, 0.6)
    if named.turn.id not in unresolved.turn_ids:
        unresolved.turn_ids.append(named.turn.id)
    if named.attributes.get("action") in (None, "taking") and unresolved.attributes.get("action") not in (None, "taking"):
        # "it's the water pill. so I quit it": the named mention carries the action stated about it
        named.attributes["action"] = unresolved.attributes["action"]
        if unresolved.attributes.get("dose_change"):
            named.attributes["dose_change"] = unresolved.attributes["dose_change"]
        if named.event_time is None:
            named.event_time = unresolved.event_time
    if unresolved.turn.id not in named.turn_ids:
        named.turn_ids.append(unresolved.turn.id)
    if named.turn.id == unresolved.turn.id:
        unresolved.state = "duplicate"  # same turn: the named mention already carries it


_Q_ACTION = [(re.compile(r["pattern"]), r["action"]) for r in cue_rules("q_action")]


def _answer_fills_action(state: TurnState, states: list[TurnState], i: int, coach_before: TurnState | None) -> None:
    """A short answer naming a drug takes the action from the question or the previous patient turn."""
    meds = [m for m in state.mentions if m.category == MemoryCategory.MEDICATION and not m.unresolved]
    if not meds or coach_before is None:
        return
    if len(state.low.split()) > 25:
        return
    qlow = coach_before.low
    for m in meds:
        if m.attributes.get("action") not in ("taking", None):
            continue
        for rx, action in _Q_ACTION:
            if rx.search(qlow) and re.search(r"\b(which|what|the one|that one)\b", qlow):
                m.attributes["action"] = action
                m.turn_ids.append(coach_before.turn.id)
                break


_BARE_ACTION = cue_pattern("bare_action")


def _answer_about_coach_entity(state: TurnState, coach_before: TurnState | None, lex: Lexicon) -> None:
    """"Are you still using the CPAP?" - "only a couple hours a night": the answer is about the question's subject."""
    if coach_before is None or "?" not in coach_before.low:
        return
    if any(m.category in (MemoryCategory.MEDICATION, MemoryCategory.CARE_ACTIVITY) for m in state.mentions):
        return
    entities = [h for sent in coach_before.sentences for h in getattr(sent, "hits", [])
                if h.best.kind in ("drug", "care") or (h.best.kind == "drug_class" and h.best.canonical)]
    if len(entities) != 1 or not state.sentences:
        return
    sent = state.sentences[0]
    m = _BARE_ACTION.search(sent.low)
    if m is None and not re.search(r"\b(it|them|that one|those|the one|yes|yeah|ya|yep|no|nope)\b", sent.low):
        return
    entry = entities[0].best
    words = [t for t, _, _ in sent.tokens]
    triggers = ctx.find_assertion_triggers(words)
    res = ctx.assess(words, 0, 1, triggers=triggers, people=ctx.find_people(words))
    if res.subject != Subject.PATIENT:
        return
    if entry.kind == "care":
        action = _care_action(sent.low)
        if res.negation_at >= 0 or re.search(r"\b(only|barely|hardly|rarely|not much|keep pulling)\b", sent.low):
            action = action or "partial"
        attrs: dict[str, Any] = {"name": entry.canonical, "detail": entities[0].term, "from_question": coach_before.turn.id}
        if action:
            attrs["action"] = action
        category = MemoryCategory.CARE_ACTIVITY
    else:
        found = _nearest_action(sent.low, "")
        action = found[0] if found else "taking"
        if res.negation_at >= 0 and action in ("taking", "took_once", None):
            action = "stopped"
        attrs = {"drug": entry.canonical if entry.kind == "drug" else "", "drug_class": entry.drug_class or
                 (entry.canonical if entry.kind == "drug_class" else lex.class_of(entry.canonical)),
                 "action": action or "taking", "from_question": coach_before.turn.id}
        if found and found[1]:
            attrs["dose_change"] = found[1]
        category = MemoryCategory.MEDICATION
    assertion = Assertion.HYPOTHETICAL if res.assertion == Assertion.HYPOTHETICAL else Assertion.AFFIRMED
    mention = Mention(category, state.turn, sent, sent.start, sent.end, attrs, Subject.PATIENT, "", assertion,
                      confidence=0.45, turn_ids=[state.turn.id, coach_before.turn.id],
                      name=attrs.get("drug") or attrs.get("name") or attrs.get("drug_class", ""))
    mention.event_time = _event_time(state, sent)
    state.mentions.append(mention)


def _reason_links(state: TurnState, states: list[TurnState], i: int, coach_before: TurnState | None) -> None:
    """Symptoms reported right before a change ("so I cut it in half") or right after it, in answer to the
    coach's follow-up, stay linked to the change as its reason or its effects."""
    changes = [m for m in state.mentions if m.category in (MemoryCategory.MEDICATION, MemoryCategory.CARE_ACTIVITY)
               and m.attributes.get("action") in ("stopped", "changed_dose", "skipped", "started", "resumed")
               and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
    if not changes:
        return
    prev = _patient_neighbours(states, i, 1, 0)
    if prev and states[i - 1] is not prev[0] and (coach_before is not None and "?" in coach_before.low):
        before = prev[0]
        causal = _CAUSAL.search(state.low) or _BACKREF_Q.search(coach_before.low)
        symptoms = [m for m in before.mentions if m.category in (MemoryCategory.SYMPTOM, MemoryCategory.CONDITION)
                    and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
        silent = not any(m.category in CLINICAL for m in before.mentions)
        if (symptoms or silent) and causal:
            for change in changes:
                if symptoms:
                    change.attributes.setdefault("reason", ", ".join(sorted({s.name for s in symptoms})))
                if before.turn.id not in change.turn_ids:
                    change.turn_ids.append(before.turn.id)
            for s in symptoms:
                if state.turn.id not in s.turn_ids:
                    s.turn_ids.append(state.turn.id)
    nxt = _patient_neighbours(states, i, 0, 1)
    if nxt:
        after = nxt[0]
        j = states.index(after)
        question = states[j - 1] if j - 1 > i and states[j - 1].turn.speaker != "patient" else None
        follow_on = j == i + 1  # the patient's next message straight after, no coach turn between
        if not follow_on and (question is None or "?" not in question.low):
            return
        effects = [m for m in after.mentions if m.category in (MemoryCategory.SYMPTOM, MemoryCategory.MEASUREMENT)
                   and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
        if not effects or any(m.category == MemoryCategory.MEDICATION for m in after.mentions):
            return
        for change in changes:
            change.attributes.setdefault("effects", ", ".join(sorted({e.name for e in effects})))
            if after.turn.id not in change.turn_ids:
                change.turn_ids.append(after.turn.id)
        for e in effects:
            if state.turn.id not in e.turn_ids:
                e.turn_ids.append(state.turn.id)


def _allergy_inference(state: TurnState, states: list[TurnState], i: int) -> None:
    """Reaction after an exposure -> an allergy memory; exposure with no reaction -> a tolerance memory."""
    reactions = [m for m in state.mentions if m.category == MemoryCategory.SYMPTOM and m.name in _REACTION
                 and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED
                 and not _INDICATION_BEFORE.search(state.low[max(0, m.start - 30) : m.start])]
    lips = bool(re.search(r"\b(lips?|tongue|face|throat|eyes?|eyelids?)\b[^.!?]{0,30}\b(puff\w*|swell|swelled|swollen|swelling|"
                          r"blew up|tingl\w*|tight|itchy)\b", state.low))
    # "broke out in welts/bumps" after a new drug: a skin reaction even when no symptom term matched
    eruption = not reactions and bool(_SKIN_ERUPTION.search(state.low))
    no_reaction = _NO_REACTION.search(state.low)
    if not reactions and not lips and not eruption and not no_reaction:
        return
    exposures: list[tuple[TurnState, Mention]] = []
    class_exposures: list[tuple[TurnState, Mention]] = []
    for s in [state] + _patient_neighbours(states, i, 2, 0):
        for m in s.mentions:
            if m.subject != Subject.PATIENT:
                continue
            if m.category == MemoryCategory.MEDICATION and m.attributes.get("drug") and m.attributes["drug"] not in _ANTIHISTAMINE \
                    and m.assertion == Assertion.AFFIRMED:
                exposures.append((s, m))
            elif m.category == MemoryCategory.MEDICATION and not m.attributes.get("drug") and m.assertion == Assertion.AFFIRMED \
                    and m.attributes.get("drug_class") in _EXPOSURE_CLASSES:
                # "they gave me an antibiotic" with no name: the class is the suspected substance (named drugs first)
                class_exposures.append((s, m))
            elif m.category == MemoryCategory.ALLERGY:
                exposures.append((s, m))
        for sent in s.sentences:
            for hit in getattr(sent, "hits", []):
                if hit.best.kind == "allergen" and _EXPOSURE.search(sent.low):
                    exposures.append((s, Mention(MemoryCategory.ALLERGY, s.turn, sent, sent.start + hit.start,
                                                 sent.start + hit.end, {"substance": hit.best.canonical}, name=hit.best.canonical)))
        if exposures and not (s is state and no_reaction):
            break  # a tolerance statement looks one turn further back for the exposure itself
    exposures = exposures or class_exposures
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
        if reactions or lips or eruption:  # the claim is already there: enrich it with the reaction and the exposure turn
            names = sorted({m.name for m in reactions} | ({"lip/face swelling"} if lips else set())
                           | ({"hives"} if eruption else set()))
            existing.attributes["reaction"] = ", ".join(names)
        if exp_state is not state and exp_state.turn.id not in existing.turn_ids:
            existing.turn_ids.append(exp_state.turn.id)
        return
    if reactions or lips or eruption:
        names = sorted({m.name for m in reactions} | ({"lip/face swelling"} if lips else set())
                           | ({"hives"} if eruption else set()))
        attrs = {"substance": substance, "reaction": ", ".join(names), "stated_status": "new", "inferred": True}
        anchor_sent = reactions[0].sentence if reactions else state.sentences[0]
        turn_ids = [state.turn.id] + ([exp_state.turn.id] if exp_state is not state else [])
        allergy = Mention(MemoryCategory.ALLERGY, state.turn, anchor_sent, anchor_sent.start, anchor_sent.end, attrs,
                          confidence=0.6, turn_ids=turn_ids, name=substance)
        allergy.event_time = reactions[0].event_time if reactions else None
        # later patient turns that stop the drug or treat the reaction belong to the same episode
        for later in _patient_neighbours(states, i, 0, 2):
            for m in later.mentions:
                if m.category == MemoryCategory.MEDICATION and (
                        m.attributes.get("drug") in _ANTIHISTAMINE or m.attributes.get("drug") == substance):
                    if later.turn.id not in allergy.turn_ids:
                        allergy.turn_ids.append(later.turn.id)
        # the exposure began earlier in the session ("she gave me some of her water pills" ... "Lasix I think?"):
        # the turns where the patient took the same drug or class belong to the episode
        drug_class = exposure.attributes.get("drug_class", "")
        for earlier in _patient_neighbours(states, i, 3, 0):
            if earlier is state or earlier.turn.id in allergy.turn_ids:
                continue
            if any(m.category == MemoryCategory.MEDICATION and m.subject == Subject.PATIENT
                   and m.assertion == Assertion.AFFIRMED and (m.attributes.get("drug") == substance or
                                                              (drug_class and m.attributes.get("drug_class") == drug_class))
                   for m in earlier.mentions):
                allergy.turn_ids.append(earlier.turn.id)
        state.mentions.append(allergy)
        if exp_state is not state and state.turn.id not in exposure.turn_ids and exposure in exp_state.mentions:
            exposure.turn_ids.append(state.turn.id)
    elif no_reaction:
        sent = next((s for s in state.sentences if _NO_REACTION.search(s.low)), state.sentences[0])
        attrs = {"substance": substance, "reaction": "none", "stated_status": "tolerated"}
        turn_ids = [state.turn.id] + [t.turn.id for t, e in exposures
                                      if t is not state and (e.attributes.get("drug") or e.attributes.get("substance") or e.name) == substance]
        state.mentions.append(Mention(MemoryCategory.ALLERGY, state.turn, sent, sent.start, sent.end, attrs,
                                      confidence=0.55, turn_ids=turn_ids, name=substance))


_FOLLOW_UP_Q = cue_pattern("follow_up_q")
_ANSWER = cue_pattern("answer")


def _continuations(state: TurnState, states: list[TurnState], i: int, coach_before: TurnState | None) -> None:
    """An answer to a follow-up question ("has that happened before?", "does your doctor know?") belongs to the
    previous patient turn's clinical memories: it joins their turns, and lends them its time if they had none."""
    if coach_before is None:
        return
    follow_up = _FOLLOW_UP_Q.search(coach_before.low) or (
        "?" in coach_before.low and re.search(r"\b(that|it|this|those|they|them)\b", coach_before.low))
    if not follow_up and "?" not in coach_before.low:
        return
    prev = _patient_neighbours(states, i, 1, 0)
    if not prev:
        return
    before = prev[0]
    own_clinical = [m for m in state.mentions if m.category in CLINICAL]
    earlier = [m for m in before.mentions if m.category in CLINICAL and m.subject == Subject.PATIENT
               and m.assertion == Assertion.AFFIRMED]
    if own_clinical and not earlier:
        # the previous turn set up what this one explains ("had to stop twice" -> "chest got tight")
        if not any(m.category != MemoryCategory.LIFESTYLE for m in before.mentions) and len(before.low.split()) <= 40:
            for m in own_clinical:
                if m.subject == Subject.PATIENT and before.turn.id not in m.turn_ids:
                    m.turn_ids.append(before.turn.id)
        return
    if own_clinical or not earlier or not follow_up:
        return
    when = next((t for s in state.sentences if (t := _sentence_time(state, s))), None)
    if when is None and not _ANSWER.search(state.low) and len(state.low.split()) > 20:
        return
    for m in earlier:
        if state.turn.id not in m.turn_ids:
            m.turn_ids.append(state.turn.id)
        if m.event_time is None and when is not None:
            m.event_time = when
            m.attributes.setdefault("time_from_turn", state.turn.id)


def _turn_hits(states: list[TurnState], record: ClinicalRecord | None) -> dict[str, tuple[list[TurnHit], list[TurnHit]]]:
    """Per patient turn: its hits and those of the coach turn before it, with the record state of what they name."""

    def hits(state: TurnState) -> list[TurnHit]:
        out = []
        for sent in state.sentences:
            for h in sent.hits:
                ref = next((e.record_ref for e in h.entries if e.record_ref), None)
                entry = record.get(*ref) if (record is not None and ref) else None
                out.append(TurnHit(h.best.kind, entry.state if entry is not None else ""))
        return out

    result: dict[str, tuple[list[TurnHit], list[TurnHit]]] = {}
    coach: list[TurnHit] = []
    for state in states:
        if state.turn.speaker != "patient":
            coach = hits(state)
            continue
        result[state.turn.id] = (hits(state), coach)
    return result


def _link_record(drafts: list[MemoryDraft], overlay: dict) -> None:
    """A drug named by brand ("Victoza") still points at the record's entry for its generic."""
    by_drug: dict[str, Entry] = {}
    for entries in overlay.values():
        for e in entries:
            if e.kind == "drug" and e.record_ref and e.canonical not in by_drug:
                by_drug[e.canonical] = e
    for d in drafts:
        if d.category not in (MemoryCategory.MEDICATION, MemoryCategory.ALLERGY) or "record_ref" in d.attributes:
            continue
        e = by_drug.get(d.attributes.get("drug") or d.attributes.get("substance") or "")
        if e is None:
            continue
        d.attributes["record_ref"] = f"{e.record_ref[0]}/{e.record_ref[1]}"
        d.attributes.setdefault("display", e.display)
        if e.code and d.category == MemoryCategory.MEDICATION:
            d.attributes.setdefault("rxnorm_hint", e.code)


# ---- delta ops against the patient's current memory ---------------------------------------------


def _state_of(d: MemoryDraft) -> tuple:
    a = d.attributes
    if d.category == MemoryCategory.MEDICATION:
        return (a.get("action"), a.get("dose_change"))
    if d.category == MemoryCategory.MEASUREMENT:
        return (a.get("value"), a.get("value2"))
    if d.category in (MemoryCategory.CONDITION, MemoryCategory.SYMPTOM, MemoryCategory.ALLERGY):
        return (a.get("stated_status"),)
    return (a.get("action"), a.get("detail"))


def _assign_ops(drafts: list[MemoryDraft], prior: Sequence[MemoryDraft]) -> None:
    current: dict[str, MemoryDraft] = {}
    for p in prior:
        if p.chain_key and p.subject == Subject.PATIENT and p.assertion == Assertion.AFFIRMED:
            current[p.chain_key] = p
    for d in drafts:
        if not d.chain_key or not d.is_patient_affirmed or d.category in ("lifestyle",):
            continue
        earlier = current.get(d.chain_key)
        if earlier is not None:
            d.op = MemoryOp.UPDATE if _state_of(earlier) == _state_of(d) else MemoryOp.SUPERSEDE
        current[d.chain_key] = d

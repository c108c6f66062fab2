"""The offline default extractor: lexicons, ConText-style assertion and subject, measurements and time, per turn in context.

One module per concern, in this decision order:
  per turn (`_analyse_turn`): the text lowered at the same length and split into sentences; each sentence's terminology
    hits (phrases, inverted phrases, admitted near misses); the people it speaks of (subject.py: names, the coach's
    question about someone else, the sentence before, quotes, family history); then SENTENCE_RULES, in order, each
    adding the mentions it reads (mentions.py, medication.py, care.py, condition.py, allergy.py, measurement.py);
    then coaching content from sentences with nothing clinical (mentions.py);
  per session (`_link_session`): for each patient turn, unresolved medicines resolved, answers filled from the coach's
    question, reasons and effects, allergy inference, continuations (linking.py, allergy.py); message bursts; then
    exposures to the record's allergies (allergy.py);
  drafts with their quotes and record links (drafts.py), delta ops against prior memory (chains.py), and each patient
    turn's hits for the turn detector (drafts.py, ../delta.py).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import MemoryCategory, MemoryDraft, SessionInput, Subject, TurnInput
from reconcile_app.terminology.lexicon import Entry, Hit, Lexicon, default_lexicon, lower_same_length, record_overlay

from .. import context as ctx
from ..base import Extractor
from ..clauses import Sentence, split_sentences
from ..delta import DeltaDetector, TurnHit
from ..measurements import Measurement, find_measurements
from .allergy import _allergy_inference, _record_allergy_exposures, _s_allergic_to
from .care import _s_had_done, _s_procedure_noun, _s_programs, _s_removal, _s_vaccine_list
from .chains import _assign_ops
from .condition import _s_body_site_pain, _s_diagnosis_named, _s_suicidal
from .drafts import _draft, _link_record, _turn_hits
from .linking import _answer_about_coach_entity, _answer_fills_action, _burst_links, _continuations, _reason_links, _resolve_medication
from .measurement import _s_measurements
from .medication import _s_generic_medications, _s_prescribed_unlisted
from .mentions import _coaching_mentions, _s_lexicon
from .state import MAX_CHARS, Mention, SentenceScope, TurnState
from .subject import (
    _FAMILY_HISTORY, _FINITE_VERBS, _HEALTH_EVENT, _OWN_CLAIM, _asked_about_other, _clinician_context, _names,
    _neutral_follow_up, _quoted_speakers,
)

logger = logging.getLogger(__name__)


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
                states.append(_analyse_turn(turn, index, lex, overlay, states))
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
                    drafts.append(_draft(mention, state, engine=self.name, engine_version=self.version))
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


def _analyse_turn(turn: TurnInput, index: int, lex: Lexicon, overlay: dict, previous: list[TurnState]) -> TurnState:
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
    # the previous two turns (a coach's question and the patient's message before it) let bare numbers answer them
    measurements = find_measurements(low, context=" ".join(p.low for p in previous[-2:]))
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
        found = _sentence_mentions(state, sent, words, hits, triggers, people, sent_meas, lex)
        prev_other_health = bool(prev_other) and any(m.subject == Subject.OTHER for m in found)
        # the experiencer the sentence ends on ("I'm so worried about him."): the next sentence may go on about them
        tail = [p for p in people if p.kind in ("self", "other", "owner")]
        prev_tail = tail[-1].relation or "other person" if tail and tail[-1].kind != "self" else ""
        state.mentions.extend(found)
    state.carry_out = carry
    if prev_tail and (_HEALTH_EVENT.search(low) or any(m.subject == Subject.OTHER for m in state.mentions)):
        state.tail_other = prev_tail
    _coaching_mentions(state)
    return state


def _sentence_mentions(state: TurnState, sent: Sentence, words: list[str], hits: list[Hit],
                       triggers: list, people: list, measurements: list[Measurement], lex: Lexicon) -> list[Mention]:
    """Every rule of SENTENCE_RULES, in order, adds the mentions it reads in the sentence."""
    scope = SentenceScope(state, sent, words, hits, triggers, people, measurements, lex)
    for rule in SENTENCE_RULES:
        rule(scope)
    return scope.out


# The sentence rules, in order: each adds what it reads; later rules see (and defer to) what earlier ones found.
SENTENCE_RULES = (
    _s_lexicon,
    _s_generic_medications,
    _s_programs,
    _s_body_site_pain,
    _s_diagnosis_named,
    _s_prescribed_unlisted,
    _s_had_done,
    _s_suicidal,
    _s_procedure_noun,
    _s_vaccine_list,
    _s_allergic_to,
    _s_removal,
    _s_measurements,
)


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

"""The offline default extractor: lexicons, ConText-style assertion and subject, measurements and time, per turn in context.

One module per concern, in this decision order:
  per turn (`_analyse_turn`): the text lowered at the same length and split into sentences; each sentence's terminology
    hits (phrases, inverted phrases, admitted near misses); the people it speaks of (subject.py: names, the coach's
    question about someone else, the sentence before, quotes, family history); its assertion judge (assertion.py:
    the own engine's triggers, or one medspaCy ConText run by EXTRACTION_ASSERTION); then SENTENCE_RULES, in order, each
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
from typing import Any

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import MemoryCategory, MemoryDraft, SessionInput, TurnInput
from reconcile_app.terminology.lexicon import Hit, Lexicon, default_lexicon, lower_same_length, record_overlay

from .. import context as ctx
from ..base import Extractor
from ..clauses import Sentence, split_sentences
from ..delta import DeltaDetector, TurnHit
from ..measurements import Measurement, find_measurements, open_question_context
from .allergy import _allergy_inference, _record_allergy_exposures, _s_allergic_to
from .assertion import ContextAssertions, Speakers, assertion_engine
from .care import _s_had_done, _s_procedure_noun, _s_programs, _s_removal, _s_vaccine_list, _s_vaccine_one
from .chains import _assign_ops
from .condition import _s_body_site_pain, _s_diagnosis_named, _s_suicidal
from .drafts import _draft, _link_record, _turn_hits
from .linking import (
    _accepted_offers, _answer_about_coach_entity, _answer_fills_action, _borrowed_from_other, _burst_links, _continuations, _errands_for_others,
    _reason_links, _resolve_medication, _schedule_follow_ons,
)
from .measurement import _s_measurements
from .medication import _s_generic_medications, _s_prescribed_unlisted
from .mentions import _coaching_mentions, _s_lexicon
from .sentences import _sentence_hits
from .state import MAX_CHARS, Mention, SentenceScope, TurnState
from .subject import _FINITE_VERBS, _after_sentence, _close_turn, _discourse_at, _names, _sentence_people

logger = logging.getLogger(__name__)


class RulesExtractor(Extractor):
    """Deterministic, offline; the lexicon is shared per process (see `lexicon.default_lexicon`)."""

    name = "rules"
    base_version = "2.4.0"  # the rules alone; `version` adds the shipped turn detector's fingerprint

    @property
    def version(self) -> str:  # type: ignore[override]
        # memories differ by assertion engine, so stored runs of one are not reused for the other
        base = self.base_version if self.assertion == "own" else f"{self.base_version}-{self.assertion}"
        return base if self.delta.detector is None else f"{base}+{self.delta.version}"

    def __init__(self, lexicon: Lexicon | None = None, assertion: str | None = None) -> None:
        self._lexicon = lexicon
        # "own" (engines/context.py) or "context" (medspaCy ConText); None: the EXTRACTION_ASSERTION setting
        self.assertion = assertion_engine(assertion)
        self.assertions = None if self.assertion == "own" else \
            ContextAssertions(own_subject=self.assertion == "context-assertion")

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

    @delta.setter
    def delta(self, detector: DeltaDetector) -> None:
        """Another turn detector (a rules-only engine: DeltaDetector.from_models(None, None))."""
        self.__dict__["_delta"] = detector

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
        first_coach = next((t.text for t in session.turns if t.speaker != "patient" and isinstance(t.text, str)), "")
        speakers = Speakers.of(record, first_coach) if self.assertions is not None else None
        for index, turn in enumerate(session.turns):
            try:
                states.append(_analyse_turn(turn, index, lex, overlay, states, self.assertions, speakers))
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


def _analyse_turn(turn: TurnInput, index: int, lex: Lexicon, overlay: dict, previous: list[TurnState],
                  assertions: ContextAssertions | None = None, speakers: Speakers | None = None) -> TurnState:
    """One turn: a coach's is read for its hits only; a patient's sentence by sentence, in the decision order above."""
    text = turn.text if isinstance(turn.text, str) else ""
    low = lower_same_length(text[:MAX_CHARS])
    state = TurnState(turn, index, low, split_sentences(low))
    if turn.speaker != "patient":
        # Coach turns are read for context (questions, drug names) but never produce memories.
        for sent in state.sentences:
            sent.hits = lex.match(sent.low, sent.tokens, overlay)
        return state
    discourse = _discourse_at(previous, speakers.is_patient if speakers is not None else None)
    state.context_text = " ".join([low] + [p.low for p in previous[-3:]])
    # bare numbers answer the coach's question still open (across holding turns), else the previous two turns
    measurements = find_measurements(low, context=open_question_context([(p.turn.speaker, p.low) for p in previous]))
    parsed = [(sent, words, _names(text, sent, words)) for sent in state.sentences
              for words in [ctx.mark_clause_final([t for t, _, _ in sent.tokens], sent.tokens, sent.low)]]
    previous_frame = speakers.frame if speakers is not None else None  # carried from the turn before
    frames = _sentence_frames(text[:MAX_CHARS], parsed, previous, assertions, speakers)
    antecedent = ""  # the last kin word of another person in this turn: whom a later 'she' may mean in a frame
    previous_judge = None
    for k, ((sent, words, names), frame) in enumerate(zip(parsed, frames)):
        if speakers is not None:
            names = _not_the_patient(names, words, speakers)
        hits = _sentence_hits(state, sent, lex, overlay)
        people = _sentence_people(discourse, sent, words, names, hits)
        # one ConText judge per sentence (EXTRACTION_ASSERTION = "context"), else the own engine's triggers
        continues = _neighbours(previous_judge, parsed, k, text, assertions) if _fragment(words) else ()
        triggers = assertions.sentence(text, sent, hits, names, people, frame, words, antecedent, continues) \
            if assertions is not None else ctx.find_assertion_triggers(words)
        previous_judge = getattr(triggers, "judge", None)
        sent_meas = [m for m in measurements if sent.start <= m.start < sent.end]
        found = _sentence_mentions(state, sent, words, hits, triggers, people, sent_meas, lex)
        _after_sentence(discourse, people, found)
        kin = [p.relation for p in people if p.kind in ("other", "owner") and p.relation not in _NOT_KIN]
        antecedent = kin[-1] if kin else antecedent
        if frame is not None and frame is not previous_frame:
            antecedent = ""  # "Pa is resting, I'm texting for him": him is Pa, the patient
        previous_frame = frame
        state.mentions.extend(found)
    _close_turn(discourse, state)
    _coaching_mentions(state)
    return state


_NOT_KIN = frozenset({"", "other person", "named person"})
_TOPIC_NOT_BARE = frozenset({"now", "today", "daily", "still", "again", "anymore", "twice", "once", "nightly"})
_HEDGE = frozenset({"i", "think", "guess", "believe", "maybe", "probably"})


def _neighbours(previous_judge: Any, parsed: list, k: int, text: str, assertions: ContextAssertions | None) -> tuple:
    """The sentences a verbless fragment goes on with: the one before it, and the one after it when a plan follows."""
    out = (previous_judge,) if previous_judge is not None else ()
    if assertions is not None and k + 1 < len(parsed) and _bare_topic(parsed[k][1]):
        out += (assertions.plan_after(text, parsed[k + 1][0]),)
    return out


_FILLERS = frozenset({"yes", "yeah", "yep", "ya", "actually", "so", "well", "oh", "um", "hmm", "the", "a", "my", "and",
                      "about", "honestly", "also", "ok", "okay"})


def _bare_topic(words: list[str]) -> bool:
    """A fragment that only names a topic ("Yes, actually, birth control."): no number, no time, no state."""
    core = [w for w in words if w.isalnum() and w not in _FILLERS]
    return 0 < len(core) <= 3 and all(w.isalpha() for w in core) and not set(core) & _TOPIC_NOT_BARE


def _fragment(words: list[str]) -> bool:
    """A short verbless sentence ("Brand X, I think.", "The blue ones."): it goes on with the sentence before it."""
    core = [w for w in words if w.isalpha() and w not in _HEDGE]
    return 0 < len(core) <= 5 and not set(core) & _FINITE_VERBS


def _sentence_frames(text: str, parsed: list, previous: list[TurnState], assertions: ContextAssertions | None,
                     speakers: Speakers | None) -> list:
    """Each sentence's caregiver frame (None: the patient types), carried through the session by `speakers`."""
    if assertions is None:
        return [None] * len(parsed)
    if speakers is None:
        return [assertions.turn_frame(text, parsed)] * len(parsed)
    coach = previous[-1].turn.text if previous and previous[-1].turn.speaker != "patient" else ""
    return assertions.sentence_frames(text, parsed, speakers, coach if isinstance(coach, str) else "")


def _not_the_patient(names: set[int], words: list[str], speakers: Speakers) -> set[int]:
    """The patient's own name is not another person ("Walt's been skipping it", typed by his wife)."""
    return {i for i in names if not speakers.is_patient(words[i].removesuffix("'s"))}


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
    _s_vaccine_one,
    _s_allergic_to,
    _s_removal,
    _s_measurements,
)


def _link_session(states: list[TurnState], record: ClinicalRecord | None, lex: Lexicon) -> None:
    for i, state in enumerate(states):
        if state.turn.speaker != "patient":
            continue
        coach_before = states[i - 1] if i > 0 and states[i - 1].turn.speaker != "patient" else None
        _borrowed_from_other(state, states, i)
        _errands_for_others(state)
        _accepted_offers(state)
        for mention in list(state.mentions):
            if mention.category != MemoryCategory.MEDICATION or not mention.unresolved:
                continue
            _resolve_medication(mention, state, states, i, coach_before, record, lex)
        _answer_fills_action(state, states, i, coach_before)
        _answer_about_coach_entity(state, coach_before, lex)
        _reason_links(state, states, i, coach_before)
        _allergy_inference(state, states, i)
        _continuations(state, states, i, coach_before)
        _schedule_follow_ons(state)
    _burst_links(states)

"""Assertion and subject for the sentence rules: the engine's own ConText-style code or medspaCy's ConText, by setting.

EXTRACTION_ASSERTION = "own": `ctx.assess` reads the sentence's own triggers and people (engines/context.py).
EXTRACTION_ASSERTION = "context": each patient sentence gets one medspaCy ConText run (narrative/assertion) the first
time a rule asks about it, and every target of the sentence is judged against that run. The extractor's discourse
layer stays (subject.py: the person the coach asked about, a verbless fragment after another person's sentence, family
history): the person it puts before the sentence is ConText's default subject, which applies only where the sentence
itself names nobody before the target. A caregiver frame ("this is her son") belongs to the turn that shows it.

The sentence rules do not change: they hand the scope's `triggers` to `ctx.assess`, and in "context" mode that list
carries the sentence's judge (`SentenceTriggers.judge`). A rule that passes triggers of its own (an empty list: "the
wish carries its own negation") keeps the own engine.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import context as ctx
from ..clauses import Sentence

ENGINES = ("own", "context", "context-assertion")
DEFAULT_ENGINE = "context"  # what config/settings/base.py EXTRACTION_ASSERTION ships; used where Django is not set up


def assertion_engine(name: str | None = None) -> str:
    """The engine asked for, else the EXTRACTION_ASSERTION setting (the environment when Django is not set up)."""
    if name is None:
        name = _setting()
    if name not in ENGINES:
        raise ValueError(f"unknown assertion engine {name!r}; choose from {list(ENGINES)}")
    return name


def _setting() -> str:
    try:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured

        try:
            return str(getattr(settings, "EXTRACTION_ASSERTION", DEFAULT_ENGINE))
        except ImproperlyConfigured:  # a bench without Django settings
            pass
    except ImportError:  # pragma: no cover - Django is a dependency
        pass
    return os.environ.get("EXTRACTION_ASSERTION", DEFAULT_ENGINE)


def name_spans(sent: Sentence, names: set[int]) -> list[tuple[int, int]]:
    """The name finder's token indexes as character spans of the sentence, without a possessive "'s"."""
    out = []
    for i in sorted(names):
        word, start, end = sent.tokens[i]
        out.append((start, end - 2 if word.endswith("'s") else end))
    return out


class SentenceTriggers(list):
    """The triggers a sentence rule hands to `ctx.assess`; in "context" mode empty, with the sentence's judge."""

    def __init__(self, triggers: Sequence[Any] = (), judge: "SentenceJudge | None" = None) -> None:
        super().__init__(triggers)
        self.judge = judge


class SentenceJudge:
    """One sentence's ConText run, made the first time a rule asks, and its verdicts as the own engine's results."""

    def __init__(self, engine: Any, text: str, sent: Sentence, hit_spans: list[tuple[int, int]],
                 names: list[tuple[int, int]], people: list[ctx.Person], frame: Any,
                 own_subject: list[str] | None = None, antecedent: str = "",
                 continues: "Sequence[SentenceJudge]" = ()) -> None:
        self._engine = engine
        self._own_subject = own_subject  # "context-assertion": the sentence's words, whose subject the own engine reads
        self._people = people
        self._text = text  # the sentence in its original case: a capitalised name tag needs it
        self._tokens = sent.tokens
        self._hit_spans = hit_spans  # the terminology's targets, which no name may overlap
        self._names = names
        self._frame = frame
        self._antecedent = antecedent  # the last other person the turn named before this sentence
        # a verbless fragment goes on with the sentence around it ("Brand X, I think." after hearsay; "Birth
        # control. Thinking of asking about an IUD.": the topic of the plan that follows)
        self._continues = tuple(continues)
        self._hypothetical: bool | None = None
        inherited = [p for p in people if p.index < 0]  # the discourse's person before the sentence (subject.py)
        self._default = ("other", inherited[-1].relation) if inherited else ("patient", "")
        self._run: Any = None
        self._cache: dict[tuple[int, int], ctx.ContextResult] = {}

    def __call__(self, start: int, end: int) -> ctx.ContextResult:
        """The verdict on the engine's tokens [start, end) of the sentence."""
        key = (start, end)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._judge(start, max(end, start + 1))
        return found

    def is_hypothetical(self, opening: bool = False) -> bool:
        """Whether a plan, conditional or hearsay cue of the sentence reaches its last word (opening: whether the
        sentence opens as one), from one run."""
        if self._run is None:
            self._run = self._engine.analyse(self._text, self._hit_spans, names=self._names)
        if opening:
            return self._run.opens_hypothetical()
        if self._hypothetical is None:
            text = self._text.rstrip(" .!?")
            self._hypothetical = bool(text) and self._run.verdicts([(len(text) - 1, len(text))])[0].hypothetical
        return self._hypothetical

    def _judge(self, start: int, end: int) -> ctx.ContextResult:
        tokens = self._tokens
        if not 0 <= start < len(tokens):
            return ctx.ContextResult(subject=self._default[0], relation=self._default[1])
        if self._run is None:
            self._run = self._engine.analyse(self._text, self._hit_spans, names=self._names)
        span = (tokens[start][1], tokens[min(end, len(tokens)) - 1][2])
        verdict = self._run.verdicts([span], frame=self._frame, default_subject=self._default[0],
                                     default_relation=self._default[1], antecedent=self._antecedent)[0]
        label = verdict.label
        if label == ctx.AFFIRMED and any(judge.is_hypothetical() for judge in self._continues):
            label = ctx.HYPOTHETICAL  # "I saw on a forum there's a new shot. Brand X, I think.": still the hearsay
        result = ctx.ContextResult(assertion=label, subject=verdict.subject, relation=verdict.relation,
                                   owner=verdict.owner, triggers=list(verdict.cues))
        if self._own_subject is not None:
            result.subject, result.relation, result.owner = ctx.subject_for(self._own_subject, start, end, self._people)
        if verdict.label == ctx.NEGATED and verdict.negation_start >= 0:
            # the own engine's negation_at: the token holding the cue ("don't" holds spaCy's "n't")
            result.negation_at = next((i for i, t in enumerate(tokens) if t[2] > verdict.negation_start), -1)
        return result


class _PlanAhead(SentenceJudge):
    """The sentence after a topic fragment: when it opens as a plan or hearsay, the fragment is its topic."""

    def is_hypothetical(self, opening: bool = True) -> bool:
        return super().is_hypothetical(opening=True)


class ContextAssertions:
    """medspaCy ConText for the extractor's patient turns, the component built once per process."""

    def __init__(self, engine: Any = None, *, own_subject: bool = False) -> None:
        self._engine = engine
        self.own_subject = own_subject  # "context-assertion": ConText's assertion, the own engine's subject

    @property
    def engine(self) -> Any:
        if self._engine is None:
            from reconcile_app.narrative.assertion import default_context

            self._engine = default_context()
        return self._engine

    def turn_frame(self, text: str, parsed: list[tuple[Sentence, list[str], set[int]]]) -> Any:
        """The caregiver frame the turn opens ("this is her son"), or None."""
        names = [(sent.start + s, sent.start + e) for sent, _, found in parsed for s, e in name_spans(sent, found)]
        return self.engine.speaker_frame(text, None, names=names)

    def sentence_frames(self, text: str, parsed: list[tuple[Sentence, list[str], set[int]]], speakers: "Speakers",
                        coach_before: str) -> list[Any]:
        """The caregiver frame of each sentence of a patient turn; `speakers` carries it on to the next turn.

        FORMAT.md keeps the speaker "patient" whoever types; the text says who does. A frame opens where the turn
        says so ("this is her son", "Son here", "-- his wife"), holds for the rest of the turn and the session's
        following patient turns, and ends where the patient is back: a hand-back ("it's me again"), the patient's own
        name as a sign-in, or the coach turning to the patient by name (MedGraph-style per-person attribution)."""
        frame = speakers.frame
        if frame is not None and speakers.coach_turns_to_patient(coach_before):
            frame = None
        names = [(sent.start + s, sent.start + e) for sent, _, found in parsed for s, e in name_spans(sent, found)]
        if not hasattr(self.engine, "speaker_events"):  # an engine without typist changes: the turn's own frame
            return [self.engine.speaker_frame(text, None, names=names)] * len(parsed)
        events = list(self.engine.speaker_events(text, names=names))
        tag = speakers.sign_in(text, frame)
        if tag is not _KEEP:
            events.insert(0, _SignIn(0, tag))
        out = []
        for sent, _, _ in parsed:
            for event in [e for e in events if e.start < sent.end]:
                frame = speakers.opened(event, text)
            events = [e for e in events if e.start >= sent.end]
            out.append(frame)
        speakers.frame = frame
        return out

    def plan_after(self, text: str, sent: Sentence) -> "SentenceJudge":
        """The sentence after a topic fragment, judged only for whether it is a plan (nothing else is asked of it)."""
        return _PlanAhead(self.engine, text[sent.start : sent.end], sent, [], [], [], None)

    def sentence(self, text: str, sent: Sentence, hits: list, names: set[int], people: list[ctx.Person],
                 frame: Any, words: list[str], antecedent: str = "", continues: Sequence[Any] = ()) -> SentenceTriggers:
        """The triggers the sentence rules hand to ctx.assess: none of the own engine's, the sentence's judge."""
        spans = [(h.start, h.end) for h in hits]
        judge = SentenceJudge(self.engine, text[sent.start : sent.end], sent, spans, name_spans(sent, names), people, frame,
                              words if self.own_subject else None, antecedent, continues)
        return SentenceTriggers((), judge)


_KEEP = object()  # sign_in: the turn's opening says nothing about who types


def _either_pronoun_frame() -> Any:
    """A frame whose typist's relation is not said: either third-person pronoun is the patient."""
    from reconcile_app.narrative.assertion.medspacy_context import SELF_PRONOUNS, SpeakerFrame

    return SpeakerFrame("caregiver", SELF_PRONOUNS["she"] | SELF_PRONOUNS["he"])


@dataclass(frozen=True)
class _SignIn:
    """A name tag at the start of a turn, as a speaker event (frame None: the patient)."""

    start: int
    frame: Any
    text: str = ""


_BARE_SIGN_IN = re.compile(r"^(?:(?:hi|hello|hey),?\s*)?this is [A-Z][a-z]+\W*$", re.I)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_THIRD_PERSON = re.compile(r"\b(?:he|she|him|her|his|he's|she's|hes|shes)\b", re.I)
_ME_AGAIN = re.compile(r"\s*(?:it'?s\s+)?me\s+(?:again|now|here)\b", re.I)
_NAME_TAG = re.compile(r"\s*\(?([A-Z][a-z]+)\)?(?:\s+(again|here|now|typing|writing))?\s*(?:[.,:!)\-]|$)")
_SIGNED_NAME = re.compile(r"\b([A-Z][a-z]+)\b(?!'s)")
_OWNER_NAME = re.compile(r"\b([A-Z][a-z]+)'s\b")
_GREETING = re.compile(r"^\s*(?i:hi|hello|hey|good (?:morning|afternoon|evening))[, ]+([A-Z][a-z]+)\b")
# a name the coach addresses: "Lorine, how are..." / "..., Irv?" / "Thanks, Mike!" (not "How is Irv doing?")
_VOCATIVE = re.compile(r"(?:^|[.!?,]\s*)([A-Z][a-z]+)\s*[,!?]|,\s*([A-Z][a-z]+)\s*(?:[.!?]|$)")
_NOT_NAMES = frozenset("this is hi hello hey mr mrs ms miss dr it its mom dad".split())


@dataclass
class Speakers:
    """Who types one session's patient turns: the patient's names (the record's Patient, the coach's greeting, a
    frame's "Neely's son"), the caregiver frame in force and the typist's name."""

    patient_names: set[str] = field(default_factory=set)
    frame: Any = None
    typist: str = ""
    last_frame: Any = None  # the typist's frame, kept while the patient has the keyboard back

    @classmethod
    def of(cls, record: Any, first_coach_text: str = "") -> "Speakers":
        names: set[str] = set()
        patient = getattr(record, "patient", None)
        for part in re.findall(r"[^\W\d_]+", getattr(patient, "name", "") or ""):
            if len(part) > 1:
                names.add(part.lower())
        m = _GREETING.match(first_coach_text or "")
        if m and m.group(1).lower() not in _NOT_NAMES:
            names.add(m.group(1).lower())  # the coach greets the patient by name ("Hi Neely!")
        return cls(names)

    def coach_turns_to_patient(self, coach_text: str) -> bool:
        """The coach's last words address the patient by name ("Lorine, how are your hands?"), not the typist."""
        last = ""
        for m in _VOCATIVE.finditer(coach_text or ""):
            word = (m.group(1) or m.group(2)).lower()
            if self.is_patient(word) or (self.typist and word == self.typist):
                last = word
        return bool(last) and self.is_patient(last) and last != self.typist

    def is_patient(self, name: str) -> bool:
        """The patient's name or a short form of it ("Irv" for Irvin)."""
        return name in self.patient_names or (len(name) >= 3 and any(p.startswith(name) for p in self.patient_names))

    def _names_patient(self, text: str) -> bool:
        """Whether the text speaks of the patient by name ("Ann keeps me on track"): after a bare "This is X." from
        someone else, the patient named in the third person shows another person has the keyboard, as a third-person
        pronoun does (reference by name is third person; Quirk et al. 1985, 6.3)."""
        return any(self.is_patient(w.lower()) for w in _CAPITALISED.findall(text) if w.lower() not in _NOT_NAMES)

    def sign_in(self, text: str, frame: Any) -> Any:
        """A name tag opening the turn ("Carol.", "(Camila)", "Irv here."): the typist's keeps the frame, the
        patient's ends it; anything else says nothing (_KEEP)."""
        if frame is not None and _ME_AGAIN.match(text):
            return None  # "Me again, ...": the patient has the keyboard back
        m = _NAME_TAG.match(text)
        if not m:
            return _KEEP
        name = m.group(1).lower()
        if self.is_patient(name):
            return None
        if self.typist and name == self.typist:
            return frame or self.last_frame  # the typist signs in again, after the coach turned to the patient
        if frame is None and m.group(2) in ("here", "typing", "writing") and self.patient_names \
                and name not in _NOT_NAMES and name not in ctx.RELATIONS:
            self.typist = name  # "Carol here.": someone whose name is not the patient's signs in
            return self.last_frame or _either_pronoun_frame()
        if frame is not None and m.group(2) in ("here", "now", "again") and name not in _NOT_NAMES:
            return None  # another name signs in while a typist held the keyboard: the patient, back
        return _KEEP

    def opened(self, event: Any, turn_text: str = "") -> Any:
        """The frame after one speaker event; a frame that names the patient signing in is no frame, and a bare
        "This is X." opens one only when the message goes on about someone in the third person ("This is Great!
        I walked daily" is no sign-in)."""
        if isinstance(event, _SignIn):
            return event.frame
        if event.frame is None:
            return None
        if _BARE_SIGN_IN.match(event.text) and not _THIRD_PERSON.search(turn_text[event.end:]) \
                and not self._names_patient(turn_text[event.end:]):
            return self.frame
        owner = _OWNER_NAME.search(event.text)
        if owner:
            self.patient_names.add(owner.group(1).lower())  # "Mike, Neely's son": Neely is the patient
        signed = [w.lower() for w in _SIGNED_NAME.findall(event.text)
                  if w.lower() not in _NOT_NAMES and w.lower() not in ctx.RELATIONS]
        signed = [w for w in signed if not owner or w != owner.group(1).lower()]
        if signed and self.is_patient(signed[0]):
            return None  # "This is Gary." from Gary himself
        if signed:
            self.typist = signed[0]
        self.last_frame = event.frame
        return event.frame

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
from collections.abc import Sequence
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
                 own_subject: list[str] | None = None) -> None:
        self._engine = engine
        self._own_subject = own_subject  # "context-assertion": the sentence's words, whose subject the own engine reads
        self._people = people
        self._text = text  # the sentence in its original case: a capitalised name tag needs it
        self._tokens = sent.tokens
        self._hit_spans = hit_spans  # the terminology's targets, which no name may overlap
        self._names = names
        self._frame = frame
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

    def _judge(self, start: int, end: int) -> ctx.ContextResult:
        tokens = self._tokens
        if not 0 <= start < len(tokens):
            return ctx.ContextResult(subject=self._default[0], relation=self._default[1])
        if self._run is None:
            self._run = self._engine.analyse(self._text, self._hit_spans, names=self._names)
        span = (tokens[start][1], tokens[min(end, len(tokens)) - 1][2])
        verdict = self._run.verdicts([span], frame=self._frame, default_subject=self._default[0],
                                     default_relation=self._default[1])[0]
        result = ctx.ContextResult(assertion=verdict.label, subject=verdict.subject, relation=verdict.relation,
                                   owner=verdict.owner, triggers=list(verdict.cues))
        if self._own_subject is not None:
            result.subject, result.relation, result.owner = ctx.subject_for(self._own_subject, start, end, self._people)
        if verdict.label == ctx.NEGATED and verdict.negation_start >= 0:
            # the own engine's negation_at: the token holding the cue ("don't" holds spaCy's "n't")
            result.negation_at = next((i for i, t in enumerate(tokens) if t[2] > verdict.negation_start), -1)
        return result


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

    def sentence(self, text: str, sent: Sentence, hits: list, names: set[int], people: list[ctx.Person],
                 frame: Any, words: list[str]) -> SentenceTriggers:
        """The triggers the sentence rules hand to ctx.assess: none of the own engine's, the sentence's judge."""
        spans = [(h.start, h.end) for h in hits]
        judge = SentenceJudge(self.engine, text[sent.start : sent.end], sent, spans, name_spans(sent, names), people, frame,
                              words if self.own_subject else None)
        return SentenceTriggers((), judge)

"""A turn's sentences: the clause around a mention and the time a sentence gives."""
from __future__ import annotations

import re
from datetime import datetime

from reconcile_app.narrative.types import EventTime

from ..clauses import _UNSET, Sentence
from ..temporal import resolve
from .state import TurnState


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

"""A turn's sentences: the terminology's hits in each, the clause around a mention and the time a sentence gives."""
from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from reconcile_app.narrative.types import EventTime
from reconcile_app.terminology.lexicon import Entry, Hit, Lexicon

from ..clauses import _UNSET, Sentence
from ..temporal import resolve
from .state import TurnState


def _sentence_hits(state: TurnState, sent: Sentence, lex: Lexicon, overlay: dict) -> list[Hit]:
    """The terminology's hits in a sentence, in text order: phrases (the record's first), a symptom before its site
    ("pressure in my chest"), and words one edit from a drug name; every near miss is kept as a candidate of the turn."""
    tokens = sent.tokens
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
    return hits


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

"""Sentence splitting for chat text with exact offsets (no tokenizer model: punctuation, newlines and emoji)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from reconcile_app.terminology.lexicon import tokenize

# A sentence ends at . ! ? (runs of them), a newline, a semicolon-free emoji run, or " - " dashes;
# decimal points ("7.1", "Dr. Patel") do not end one.
_BOUNDARY = re.compile(
    r"(?<!\bdr)(?<!\bmr)(?<!\bmrs)(?<!\bms)(?<!\bst)(?<!\bvs)(?<!\bapprox)(?<!\bi\.e)(?<!\be\.g)"
    r"(?:(?<!\d)[.!?]+|[.!?]{2,}|[!?]+|\.(?!\d)|\n+|\s[-\u2013\u2014]{1,2}\s|[\U0001F300-\U0001FAFF\u2600-\u27BF]+)"
)
MAX_SENTENCE = 2_000
_UNSET: Any = object()  # marks a sentence whose time expression has not been resolved yet


@dataclass
class Sentence:
    start: int  # offsets into the (lowered) turn text
    end: int
    low: str
    tokens: list[tuple[str, int, int]]  # offsets relative to `start`
    hits: list[Any] = field(default_factory=list)
    when: Any = _UNSET  # the resolved EventTime (or None), filled lazily by the extractor


def split_sentences(low: str) -> list[Sentence]:
    out: list[Sentence] = []
    pos = 0
    for m in _BOUNDARY.finditer(low):
        _emit(low, pos, m.end(), out)
        pos = m.end()
    _emit(low, pos, len(low), out)
    return out


def _emit(low: str, start: int, end: int, out: list[Sentence]) -> None:
    # very long runs without punctuation are cut so every scope stays local
    while end - start > MAX_SENTENCE:
        cut = low.rfind(" ", start, start + MAX_SENTENCE)
        cut = cut if cut > start else start + MAX_SENTENCE
        _emit(low, start, cut, out)
        start = cut
    chunk = low[start:end]
    if not chunk.strip():
        return
    tokens = tokenize(chunk)
    if not tokens:
        return
    out.append(Sentence(start, end, chunk, tokens))

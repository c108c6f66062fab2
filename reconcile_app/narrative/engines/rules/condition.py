"""Conditions and symptoms: stated status, pain at a body site, diagnoses the terminology lacks, suicidal ideation."""
from __future__ import annotations

import re

from reconcile_app.narrative.types import Assertion, MemoryCategory
from reconcile_app.terminology.lexicon import Hit

from .. import context as ctx
from ..cues import cue_pattern, cue_rules, cue_words
from .sentences import _event_time
from .state import Mention, SentenceScope


_STATUS_WORDS = [(re.compile(r["pattern"]), r["status"]) for r in cue_rules("status_words")]
_BODY_PAIN = cue_pattern("body_pain")
_DIAGNOSED = cue_pattern("diagnosed")
_STOP_CONDITION = cue_words("stop_condition")
_DIAGNOSIS_WORD = cue_pattern("diagnosis_word")
# Suicidal ideation as people say it (PHQ-9 item 9 and C-SSRS screening wording, passive and active forms).
_SUICIDAL = cue_pattern("suicidal")
_ACTIVE_SI = cue_pattern("active_si")


def _s_body_site_pain(s: SentenceScope) -> None:
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


def _s_diagnosis_named(s: SentenceScope) -> None:
    """A diagnosis reported in words the terminology lacks ("they said it was X")."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    if not any(x.category == MemoryCategory.CONDITION for x in out):
        for m in _DIAGNOSED.finditer(sent.low):
            name = m.group(2).strip()
            if not name or name.split()[0] in _STOP_CONDITION or not _DIAGNOSIS_WORD.search(name):
                continue  # "said it was the best thing I've cooked": no disease word, no diagnosis
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(2)), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            mention = Mention(MemoryCategory.CONDITION, state.turn, sent, sent.start + m.start(2), sent.start + m.end(2),
                              {"name": name, "term": name, "stated_status": "diagnosed"}, res.subject, res.relation,
                              res.assertion, confidence=0.5, turn_ids=[state.turn.id], name=name)
            mention.event_time = _event_time(state, sent)
            state.candidates.append({"term": name, "suggestion": "", "kind": "condition", "score": 0.0, "admitted": True})
            out.append(mention)
            break


def _s_suicidal(s: SentenceScope) -> None:
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


_SERVICE_WORDS = cue_words("service_words")


def _followed_by_service(words: list[str], idx: int) -> bool:
    return idx < len(words) and words[idx] in _SERVICE_WORDS


def _after_more(words: list[str], idx: int) -> bool:
    return idx + 1 < len(words) and words[idx + 1] in ("more", "longer")


def _stated_status(sentence: str, hit: Hit | None) -> str:
    for rx, status in _STATUS_WORDS:
        if rx.search(sentence):
            return status
    return ""

"""The LLM extraction engine: the dual-stream paper's MemoryDelta design over any OpenAI-compatible endpoint.

One structured-output call per window of turns gives insert / update / supersede operations; everything
the model says is then checked here, deterministically: the anchor must be a non-coach turn of the window,
the quote must occur in that turn (offsets are computed here, never taken from the model), a time
expression must be words of the turn and is resolved by the rules engine's temporal resolver, typed
attributes are kept only with their documented keys and values, and refs must name a prior memory.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from django.conf import settings

from reconcile_app.core.llm import LlmEngine, neutralize
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

from .base import Extractor

logger = logging.getLogger(__name__)

PROMPT_PATH = Path(__file__).resolve().parent.parent / "prompts" / "memory-delta.v1.txt"
ENGINE_VERSION = "1.0.0"

# The typed attribute keys of narrative/types.py, and the closed vocabularies among them.
ATTRIBUTE_KEYS = (
    "drug", "drug_class", "dose_text", "frequency", "action", "dose_change", "reason", "source",
    "name", "stated_status", "substance", "reaction", "kind", "value", "value2", "unit", "setting", "where", "detail",
)
CATEGORY_KEYS: dict[str, set[str]] = {
    MemoryCategory.MEDICATION: {"drug", "drug_class", "dose_text", "frequency", "action", "dose_change", "reason", "source"},
    MemoryCategory.CONDITION: {"name", "stated_status"},
    MemoryCategory.SYMPTOM: {"name", "stated_status"},
    MemoryCategory.ALLERGY: {"substance", "reaction"},
    MemoryCategory.MEASUREMENT: {"kind", "value", "value2", "unit", "setting"},
    MemoryCategory.PROCEDURE: {"name", "where"},
    MemoryCategory.IMMUNIZATION: {"name", "where"},
    MemoryCategory.CARE_ACTIVITY: {"name", "detail"},
    MemoryCategory.GOAL: {"name", "detail"},
    MemoryCategory.PREFERENCE: {"name", "detail"},
    MemoryCategory.LIFESTYLE: {"name", "detail"},
}
CLOSED_VALUES: dict[str, set[str]] = {
    "action": {"started", "stopped", "skipped", "changed_dose", "took_once", "taking", "resumed"},
    "dose_change": {"half", "double", "more", "less"},
    "source": {"prescribed", "otc", "someone_else", "outside_clinician"},
    "stated_status": {"new", "ongoing", "resolved", "worse", "better", "diagnosed"},
    "kind": {"blood_pressure", "glucose", "a1c", "inr", "weight", "heart_rate", "spo2", "temperature"},
    "setting": {"home", "outside", "clinic"},
}
NUMERIC_KEYS = {"value", "value2"}
# Evolving states form chains; a second "insert" into a live chain of these is a new state of it.
# (adherence, doses, readings, goals); stable facts such as a condition or an allergy keep their own records.
CHAINED = {MemoryCategory.MEDICATION, MemoryCategory.MEASUREMENT, MemoryCategory.GOAL, MemoryCategory.CARE_ACTIVITY}
CONFIDENCE = {"high": 0.9, "medium": 0.6, "low": 0.3}
CHAIN_NAME_KEYS = ("drug", "substance", "kind", "name")

MAX_QUOTE = 200
MAX_PRIOR_IN_PROMPT = 40


def delta_schema(*, anchors: Sequence[str], turn_ids: Sequence[str], refs: Sequence[str], max_operations: int) -> dict[str, Any]:
    """The MemoryDelta output schema for one window. Every string and array is bounded: an unbounded
    field lets a small model loop until max_tokens. Enums keep ids to the window's own turns."""
    text = lambda n: {"type": "string", "maxLength": n}  # noqa: E731
    operation = {
        "type": "object",
        "properties": {
            "anchor_turn_id": {"type": "string", "enum": list(anchors)},
            "quote": text(MAX_QUOTE),
            "category": {"type": "string", "enum": [c.value for c in MemoryCategory]},
            "subject": {"type": "string", "enum": [s.value for s in Subject]},
            "relation": text(30),
            "assertion": {"type": "string", "enum": [a.value for a in Assertion]},
            "op": {"type": "string", "enum": [o.value for o in MemoryOp]},
            "ref": {"type": "string", "enum": ["", *refs]},
            "content": text(160),
            "attributes": {
                "type": "array",
                "maxItems": 6,
                "items": {
                    "type": "object",
                    "properties": {"key": {"type": "string", "enum": list(ATTRIBUTE_KEYS)}, "value": text(60)},
                    "required": ["key", "value"],
                    "additionalProperties": False,
                },
            },
            "time_expression": text(40),
            "turn_ids": {"type": "array", "maxItems": 4, "items": {"type": "string", "enum": list(turn_ids)}},
            "confidence": {"type": "string", "enum": list(CONFIDENCE)},
        },
        "additionalProperties": False,
    }
    operation["required"] = list(operation["properties"])  # type: ignore[index]
    return {
        "type": "object",
        "properties": {"operations": {"type": "array", "maxItems": max_operations, "items": operation}},
        "required": ["operations"],
        "additionalProperties": False,
    }


# --- deterministic checks on what the model said -------------------------------------------------------


def locate_quote(quote: str, text: str) -> tuple[int, int] | None:
    """Where the model's quote sits in the turn: exact, then case- and space-insensitive, then the
    sentence holding a long common run (a model that paraphrased a word). None: not the turn's words."""
    quote = quote.strip().strip('"\u201c\u201d').strip()
    if not quote:
        return None
    at = text.find(quote)
    if at >= 0:
        return at, at + len(quote)
    # Case and runs of spaces: match on a folded copy that keeps a map back to the original offsets.
    folded, index = [], []
    for i, ch in enumerate(text):
        if ch.isspace() and folded and folded[-1] == " ":
            continue
        folded.append(" " if ch.isspace() else ch.lower())
        index.append(i)
    wanted = re.sub(r"\s+", " ", quote.lower())
    at = "".join(folded).find(wanted)
    if at >= 0:
        return index[at], index[at + len(wanted) - 1] + 1
    matcher = SequenceMatcher(None, text.lower(), quote.lower(), autojunk=False)
    match = matcher.find_longest_match(0, len(text), 0, len(quote))
    if match.size >= max(12, int(0.6 * len(quote))):
        # Widen to the sentence around the common run, so the quote is whole words of the turn.
        start = max((text.rfind(p, 0, match.a) + len(p) for p in (". ", "! ", "? ", "\n") if text.rfind(p, 0, match.a) >= 0), default=0)
        ends = [e for e in (text.find(p, match.a + match.size) for p in (".", "!", "?", "\n")) if e >= 0]
        end = min(ends) + 1 if ends else len(text)
        return start, min(end, len(text))
    return None


def clean_attributes(category: str, pairs: list[dict[str, str]]) -> dict[str, Any]:
    allowed = CATEGORY_KEYS.get(category, set())
    out: dict[str, Any] = {}
    for pair in pairs:
        key, value = pair.get("key", ""), str(pair.get("value", "")).strip()
        if key not in allowed or key in out or not value:
            continue
        if key in CLOSED_VALUES:
            value = value.lower().replace(" ", "_")
            if value not in CLOSED_VALUES[key]:
                continue
        if key in NUMERIC_KEYS:
            number = re.search(r"-?\d+(?:\.\d+)?", value.replace(",", ""))
            if not number:
                continue
            out[key] = float(number.group())
            continue
        out[key] = value.lower() if key in ("drug", "substance", "drug_class") else value
    return out


def chain_key_for(category: str, attributes: dict[str, Any]) -> str:
    for key in CHAIN_NAME_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value.strip():
            return f"{category}:{re.sub(r'[^a-z0-9]+', ' ', value.lower()).strip()}"[:120]
    return ""


def event_time_for(expression: str, turn: TurnInput) -> EventTime | None:
    """Only words of the turn itself, resolved by the rules engine's resolver against the turn's time."""
    expression = expression.strip()
    if not expression or expression.lower() not in turn.text.lower():
        return None
    try:
        from .temporal import resolve
    except ImportError:  # the resolver ships with the rules engine; without it, keep the words only
        return EventTime(text=expression)
    resolved = resolve(expression, turn.at)
    if resolved is None:
        return EventTime(text=expression)
    return EventTime(text=expression, start=resolved.start, end=resolved.end)


@dataclass
class _Window:
    turns: tuple[TurnInput, ...]  # shown to the model
    anchors: tuple[TurnInput, ...]  # the ones it may anchor on (context turns before the window are not)


def _windows(session: SessionInput, size: int, overlap: int) -> list[_Window]:
    turns = session.turns
    out = []
    for start in range(0, len(turns), size):
        own = turns[start : start + size]
        shown = turns[max(0, start - overlap) : start + size]
        anchors = tuple(t for t in own if t.speaker != "coach")
        if anchors:
            out.append(_Window(turns=tuple(shown), anchors=anchors))
    return out


class LlmExtractor(LlmEngine, Extractor):
    name = "llm"
    prompt_path = PROMPT_PATH
    engine_version = ENGINE_VERSION

    def extract_session(
        self,
        session: SessionInput,
        *,
        prior: Sequence[MemoryDraft] = (),
        record: ClinicalRecord | None = None,
    ) -> list[MemoryDraft]:
        size = int(getattr(settings, "LLM_TURNS_PER_CALL", 14))
        per_turn = int(getattr(settings, "LLM_OPERATIONS_PER_TURN", 2))
        cap = int(getattr(settings, "LLM_MAX_OPERATIONS", 16))
        max_tokens = int(getattr(settings, "LLM_MAX_TOKENS", 2048))
        prior_shown = list(prior)[-MAX_PRIOR_IN_PROMPT:]
        refs = {f"m{i + 1}": p for i, p in enumerate(prior_shown)}
        memory_text = "\n".join(
            f"[{ref}] {p.category} ({p.subject}{'/' + p.subject_relation if p.subject_relation else ''}, {p.assertion}): "
            f"{neutralize(p.content[:160])}"
            for ref, p in refs.items()
        ) or "(none yet)"
        client = self.client()
        usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "operations": 0, "dropped": 0}
        drafts: list[MemoryDraft] = []
        for window in _windows(session, size, overlap=2):
            max_ops = max(1, min(cap, per_turn * len(window.anchors)))
            schema = delta_schema(
                anchors=[t.id for t in window.anchors], turn_ids=[t.id for t in window.turns],
                refs=list(refs), max_operations=max_ops,
            )
            messages = self.prompt.messages(
                memory=memory_text,
                session_id=neutralize(session.id),
                transcript="\n".join(f"[{t.id}] {neutralize(t.speaker)} @ {t.at.isoformat()}: {neutralize(t.text)}" for t in window.turns),
                anchors=", ".join(t.id for t in window.anchors),
            )
            result = client.complete_json(messages=messages, schema_name="memory_delta", schema=schema, max_tokens=max_tokens)
            usage["calls"] += result.usage()["calls"]
            usage["prompt_tokens"] += result.prompt_tokens
            usage["completion_tokens"] += result.completion_tokens
            llm_meta = {"prompt": self.prompt.version, "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
            for op in result.data["operations"]:
                usage["operations"] += 1
                draft = self._draft(op, window, refs, llm_meta)
                if draft is None:
                    usage["dropped"] += 1
                    continue
                drafts.append(draft)
        drafts = self._finish(drafts, session, prior)
        self.last_usage = usage
        logger.info("llm extraction: session=%s %s", session.id, usage)  # session external id and counts only
        return drafts

    def _draft(self, op: dict[str, Any], window: _Window, refs: dict[str, MemoryDraft], llm_meta: dict[str, Any]) -> MemoryDraft | None:
        by_id = {t.id: t for t in window.turns}
        anchor = by_id.get(op["anchor_turn_id"])
        if anchor is None or anchor.speaker == "coach":
            return None
        # The model saw neutralized text; neutralize() maps one character to one, so offsets carry over.
        span = locate_quote(op["quote"], neutralize(anchor.text))
        if span is None:
            # The quote may come from another listed turn of the same speaker side: re-anchor on it.
            for turn_id in op["turn_ids"]:
                other = by_id.get(turn_id)
                if other is not None and other.speaker != "coach" and other.id in {a.id for a in window.anchors}:
                    span = locate_quote(op["quote"], neutralize(other.text))
                    if span is not None:
                        anchor = other
                        break
        if span is None:
            return None
        start, end = span
        category = op["category"]
        attributes = clean_attributes(category, op["attributes"])
        attributes["llm"] = llm_meta
        subject = op["subject"]
        relation = (op["relation"].strip().lower() or "other") if subject == Subject.OTHER else ""
        kind = op["op"]
        parent = refs.get(op["ref"]) if op["ref"] else None
        if kind != MemoryOp.INSERT and parent is None:
            kind = MemoryOp.INSERT  # an update or supersede must name a prior memory
        chain_key = (parent.chain_key or chain_key_for(parent.category, parent.attributes)) if parent else chain_key_for(category, attributes)
        turn_ids = tuple(dict.fromkeys([anchor.id, *(t for t in op["turn_ids"] if t in by_id)]))
        content = " ".join(op["content"].split()) or anchor.text[start:end]
        return MemoryDraft(
            category=category,
            content=content,
            anchor_turn_id=anchor.id,
            turn_ids=turn_ids,
            quote=anchor.text[start:end],
            quote_start=start,
            quote_end=end,
            speaker=anchor.speaker,
            mention_time=anchor.at,
            subject=subject,
            subject_relation=relation[:30],
            assertion=op["assertion"],
            attributes=attributes,
            event_time=event_time_for(op["time_expression"], anchor),
            confidence=CONFIDENCE.get(op["confidence"], 0.5),
            chain_key=chain_key,
            op=kind,
            engine=self.name,
            engine_version=self.version,
        )

    def _finish(self, drafts: list[MemoryDraft], session: SessionInput, prior: Sequence[MemoryDraft]) -> list[MemoryDraft]:
        """Turn order, exact duplicates out (window overlap repeats them), inserts into live chains made supersedes."""
        order = {t.id: i for i, t in enumerate(session.turns)}
        live = {p.chain_key for p in prior if p.chain_key}
        seen: set[tuple] = set()
        out = []
        for d in sorted(drafts, key=lambda d: (order.get(d.anchor_turn_id, 0), d.quote_start, d.quote_end)):
            key = (d.anchor_turn_id, d.category, d.quote_start, d.quote_end, d.subject, d.assertion)
            if key in seen:
                continue
            seen.add(key)
            if d.op == MemoryOp.INSERT and d.chain_key and d.category in CHAINED and d.subject == Subject.PATIENT:
                if d.chain_key in live:
                    d.op = MemoryOp.SUPERSEDE
                live.add(d.chain_key)
            out.append(d)
        return out

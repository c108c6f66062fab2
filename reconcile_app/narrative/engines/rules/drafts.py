"""What a session hands on: mentions as memory drafts with their quote and content, record links, the detector's hits."""
from __future__ import annotations

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import Assertion, MemoryCategory, MemoryDraft, MemoryOp, Subject
from reconcile_app.terminology.lexicon import Entry

from ..delta import TurnHit
from .state import Mention, TurnState


def _draft(mention: Mention, state: TurnState, *, engine: str, engine_version: str) -> MemoryDraft:
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
        engine=engine,
        engine_version=engine_version,
    )


def _quote_span(mention: Mention, text: str) -> tuple[int, int]:
    """The sentence holding the mention, trimmed; always a valid slice of the turn text."""
    start = max(0, min(mention.sentence.start, len(text)))
    end = max(start, min(max(mention.sentence.end, mention.quote_end), len(text)))
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

"""The context pack as plain data: safety first, then what not to suggest, open discrepancies and memories (no ORM)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from reconcile_app.fhir.clinical import ClinicalRecord, safety_context
from reconcile_app.narrative.types import MemoryCategory
from reconcile_app.reconciliation.knowledge import Knowledge
from reconcile_app.reconciliation.matching import RecordIndex
from reconcile_app.triage.summaries import SEPARATOR, SaidFacts, patient_says

from .avoid import avoid_lines
from .safety import safety_section

SCHEMA = "reconcile.context-pack/1"
CATEGORY_ORDER = [c.value for c in MemoryCategory]
QUOTE_CHARS = 200
# What a coach may tell the patient about a discrepancy's state: never who, never their notes.
REVIEW_WORDS = {
    "new": "Waiting for the care team to review it.",
    "in_review": "A nurse is reviewing it.",
    "escalated": "A clinician is reviewing it.",
}


@dataclass(frozen=True)
class RecordPart:
    """Everything the pack takes from one record snapshot (immutable, so it can be cached per snapshot)."""

    version: int
    fetched_at: datetime
    safety: dict[str, Any]
    do_not_suggest: list[dict[str, Any]]


@dataclass(frozen=True)
class MemoryFacts:
    """One current memory of a session the platform may see."""

    category: str
    subject: str
    subject_relation: str
    assertion: str
    content: str
    quote: str
    mention_time: datetime
    session_id: str
    session_started_at: datetime
    created_at: datetime
    attributes: dict[str, Any] = field(default_factory=dict)
    event_time_text: str = ""
    event_start: datetime | None = None
    event_end: datetime | None = None


@dataclass(frozen=True)
class DiscrepancyFacts:
    """One open triage item, as the summary of its newest quote the platform may see."""

    kind: str
    category: str
    severity: str
    safety_critical: bool
    status: str
    summary: str  # "Says stopped metoprolol 10 days ago · record: metoprolol tartrate 25 mg active"
    since: datetime
    updated_at: datetime  # the newest visible quote's arrival: what the pack's as_of counts


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def record_part(record: ClinicalRecord, *, snapshot_version: int, fetched_at: datetime, today: date,
                kb: Knowledge | None = None) -> RecordPart:
    """The safety section of one snapshot and the lines derived from it."""
    safety = safety_context(record, today=today)
    section = safety_section(record, safety, snapshot_at=fetched_at.isoformat())
    lines = avoid_lines(section.groups, section.data["allergies"], RecordIndex(record, kb), age=safety.age, kb=kb)
    return RecordPart(version=snapshot_version, fetched_at=fetched_at, safety=section.data, do_not_suggest=lines)


def _statement(memory: MemoryFacts) -> str:
    said = patient_says(SaidFacts(
        category=memory.category, attributes=memory.attributes, content=memory.content, subject=memory.subject,
        subject_relation=memory.subject_relation, assertion=memory.assertion, event_time_text=memory.event_time_text,
        event_start=memory.event_start, mention_time=memory.mention_time,
    ))
    if said.startswith("Says "):
        return said.removeprefix("Says ")
    return said.partition(": ")[2] or said  # "About their mother: has diabetes" -> "has diabetes"


def memory_item(memory: MemoryFacts) -> dict[str, Any]:
    item: dict[str, Any] = {
        "statement": _statement(memory),
        "quote": memory.quote[:QUOTE_CHARS],
        "event_time": {"text": memory.event_time_text, "start": _iso(memory.event_start), "end": _iso(memory.event_end)},
        "said_at": _iso(memory.mention_time),
        "session": {"id": memory.session_id, "started_at": _iso(memory.session_started_at)},
    }
    if memory.subject != "patient":
        item = {"about": memory.subject_relation or "someone else", "category": memory.category, **item}
    return item


def _newest_first(memories: Sequence[MemoryFacts]) -> list[MemoryFacts]:
    return sorted(memories, key=lambda m: (m.mention_time, m.created_at), reverse=True)


def memory_sections(memories: Sequence[MemoryFacts]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """(the patient's own affirmed memories by category, other people's facts): never one in the other."""
    own: dict[str, list[dict[str, Any]]] = {}
    others: list[dict[str, Any]] = []
    for memory in _newest_first(memories):
        if memory.subject == "patient":
            if memory.assertion == "affirmed":
                own.setdefault(memory.category, []).append(memory_item(memory))
        elif memory.assertion == "affirmed":
            others.append(memory_item(memory))
    order = {c: n for n, c in enumerate(CATEGORY_ORDER)}
    return {c: own[c] for c in sorted(own, key=lambda c: (order.get(c, len(order)), c))}, others


def discrepancy_text(d: DiscrepancyFacts) -> str:
    """"Patient said: stopped metoprolol 10 days ago. Record: metoprolol tartrate 25 mg active. A nurse is reviewing it."."""
    said, _, record = d.summary.partition(SEPARATOR)
    if said.startswith("Says "):
        said = "Patient said: " + said.removeprefix("Says ")
    elif said.startswith("About their "):
        said = "Patient said about their " + said.removeprefix("About their ")
    parts = [said.rstrip(".") + "."]
    if record:
        parts.append("Record: " + record.removeprefix("record: ").rstrip(".") + ".")
    parts.append(REVIEW_WORDS.get(d.status, "The care team is reviewing it."))
    return " ".join(parts)


def discrepancy_item(d: DiscrepancyFacts) -> dict[str, Any]:
    return {"text": discrepancy_text(d), "kind": d.kind, "category": d.category, "severity": d.severity,
            "safety_critical": d.safety_critical, "since": _iso(d.since)}


def _unavailable_safety() -> dict[str, Any]:
    return {"age": None, "sex": "", "no_known_allergies": False, "allergies": [], "medications": [], "conditions": [],
            "unreadable": []}


def pack_version(pack: dict[str, Any]) -> str:
    """A content hash: the same facts give the same version (and ETag), any change a new one."""
    body = {k: v for k, v in pack.items() if k != "version"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()[:32]


def build_pack(*, patient_ref: str, record: RecordPart | None, memories: Sequence[MemoryFacts],
               discrepancies: Sequence[DiscrepancyFacts]) -> dict[str, Any]:
    """The versioned pack. `as_of` is the newest fact in it (snapshot, memory or review state), so an unchanged
    pack keeps its version."""
    own, others = memory_sections(memories)
    open_items = sorted(discrepancies, key=lambda d: (not d.safety_critical, -{"high": 3, "medium": 2, "low": 1}.get(d.severity, 0), d.since))
    times = [t for t in ([record.fetched_at] if record else []) + [m.created_at for m in memories]
             + [d.updated_at for d in discrepancies] if t is not None]
    pack: dict[str, Any] = {
        "schema": SCHEMA,
        "version": "",
        "as_of": _iso(max(times)) if times else None,
        "patient": {"reference": patient_ref},
        "record": ({"available": True, "snapshot_version": record.version, "snapshot_at": _iso(record.fetched_at)}
                   if record else {"available": False, "snapshot_version": None, "snapshot_at": None}),
        "safety": record.safety if record else _unavailable_safety(),
        "do_not_suggest": record.do_not_suggest if record else [],
        "open_discrepancies": [discrepancy_item(d) for d in open_items],
        "memories": own,
        "about_others": others,
    }
    pack["version"] = pack_version(pack)
    return pack

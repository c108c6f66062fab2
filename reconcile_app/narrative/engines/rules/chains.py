"""Delta ops against the patient's current memory: a draft inserts, updates or supersedes its chain."""
from __future__ import annotations

from collections.abc import Sequence

from reconcile_app.narrative.types import Assertion, MemoryCategory, MemoryDraft, MemoryOp, Subject


def _state_of(d: MemoryDraft) -> tuple:
    a = d.attributes
    if d.category == MemoryCategory.MEDICATION:
        return (a.get("action"), a.get("dose_change"))
    if d.category == MemoryCategory.MEASUREMENT:
        return (a.get("value"), a.get("value2"))
    if d.category in (MemoryCategory.CONDITION, MemoryCategory.SYMPTOM, MemoryCategory.ALLERGY):
        return (a.get("stated_status"),)
    return (a.get("action"), a.get("detail"))


def _assign_ops(drafts: list[MemoryDraft], prior: Sequence[MemoryDraft]) -> None:
    current: dict[str, MemoryDraft] = {}
    for p in prior:
        if p.chain_key and p.subject == Subject.PATIENT and p.assertion == Assertion.AFFIRMED:
            current[p.chain_key] = p
    for d in drafts:
        if not d.chain_key or not d.is_patient_affirmed or d.category in ("lifestyle",):
            continue
        earlier = current.get(d.chain_key)
        if earlier is not None:
            d.op = MemoryOp.UPDATE if _state_of(earlier) == _state_of(d) else MemoryOp.SUPERSEDE
        current[d.chain_key] = d

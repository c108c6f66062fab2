"""The pack's safety section: every active allergy, medication and condition of a snapshot as plain data (no ORM)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconcile_app.fhir.clinical import NO_KNOWN_ALLERGY_CODES, ClinicalEntry, ClinicalRecord, SafetyContext, SafetyItem

SAFETY_TYPES = ("AllergyIntolerance", "MedicationRequest", "MedicationStatement", "Condition")
PERIOD_WORDS = {"s": "second", "min": "minute", "h": "hour", "d": "day", "wk": "week", "mo": "month", "a": "year"}
PER_PERIOD = {"d": "daily", "wk": "weekly", "mo": "monthly", "a": "yearly", "h": "hourly"}
TIMES = {1: "once", 2: "twice"}


@dataclass
class SafetyGroup:
    """One line of the safety context and every active record entry it stands for (same code)."""

    item: SafetyItem
    members: list[ClinicalEntry]

    @property
    def refs(self) -> list[str]:
        return [f"{e.resource_type}/{e.id}" for e in self.members]


def _keys(entry: ClinicalEntry) -> set[tuple[str, str]]:
    return {(c.system, c.code) for c in entry.codings} or {("text", " ".join(entry.display.lower().split()))}


def safety_groups(items: list[SafetyItem], entries: list[ClinicalEntry]) -> list[SafetyGroup]:
    """Each safety line with the active entries of the same concept. An entry no line claims becomes a line of
    its own: the pack may repeat a fact, never drop one."""
    groups = [SafetyGroup(item=i, members=[]) for i in items]
    keys = [_keys(i.entry) for i in items]
    pending = list(entries)
    changed = True
    while pending and changed:  # codes spread through members: a line coded A and B claims an entry coded B only
        changed = False
        for entry in list(pending):
            mine = _keys(entry)
            hit = next((n for n, k in enumerate(keys) if k & mine), None)
            if hit is not None:
                groups[hit].members.append(entry)
                keys[hit] |= mine
                pending.remove(entry)
                changed = True
    for entry in pending:
        groups.append(SafetyGroup(item=SafetyItem(entry=entry), members=[entry]))
    for group in groups:
        # The line's own entry first, then the newest.
        group.members.sort(key=lambda e: e.date, reverse=True)
        group.members.sort(key=lambda e: e is not group.item.entry)
    return groups


def _code(entry: ClinicalEntry) -> str:
    coding = entry.primary_coding
    return coding.tag if coding else ""


def _concept_text(concept: Any) -> str:
    if not isinstance(concept, dict):
        return ""
    if concept.get("text"):
        return str(concept["text"])
    for coding in concept.get("coding") or []:
        if isinstance(coding, dict) and coding.get("display"):
            return str(coding["display"])
    return ""


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _dosages(raw: dict[str, Any]) -> list[dict[str, Any]]:
    found = raw.get("dosageInstruction") or raw.get("dosage") or []
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def _dose(dosage: dict[str, Any]) -> str:
    for rate in dosage.get("doseAndRate") or []:
        if not isinstance(rate, dict):
            continue
        quantity = rate.get("doseQuantity")
        if isinstance(quantity, dict) and isinstance(quantity.get("value"), (int, float)):
            return f"{_number(quantity['value'])} {quantity.get('unit') or quantity.get('code') or ''}".strip()
        low, high = (rate.get("doseRange") or {}).get("low"), (rate.get("doseRange") or {}).get("high")
        if isinstance(low, dict) and isinstance(high, dict) and "value" in low and "value" in high:
            return f"{_number(low['value'])}-{_number(high['value'])} {high.get('unit') or ''}".strip()
    return ""


def _frequency(dosage: dict[str, Any]) -> str:
    """"twice daily", "every 8 hours", "3 times weekly"; the timing's code text when no repeat is given."""
    timing = dosage.get("timing") if isinstance(dosage.get("timing"), dict) else {}
    repeat = timing.get("repeat") if isinstance(timing.get("repeat"), dict) else {}
    as_needed = " as needed" if dosage.get("asNeededBoolean") or dosage.get("asNeededCodeableConcept") else ""
    frequency, period, unit = repeat.get("frequency"), repeat.get("period"), str(repeat.get("periodUnit") or "")
    if isinstance(frequency, int) and isinstance(period, (int, float)) and unit in PERIOD_WORDS:
        if period == 1 and unit in PER_PERIOD:
            return f"{TIMES.get(frequency, f'{frequency} times')} {PER_PERIOD[unit]}{as_needed}"
        if frequency == 1:
            return f"every {_number(period)} {PERIOD_WORDS[unit]}{'s' if period != 1 else ''}{as_needed}"
        return f"{TIMES.get(frequency, f'{frequency} times')} every {_number(period)} {PERIOD_WORDS[unit]}s{as_needed}"
    code_text = _concept_text(timing.get("code"))
    return (code_text + as_needed).strip() if code_text else as_needed.strip()


def medication_dosing(members: list[ClinicalEntry]) -> dict[str, str]:
    """Dose, frequency and the instruction text, from the first member that states them (a statement often
    carries none while the order beside it does)."""
    out = {"dose": "", "frequency": "", "instructions": ""}
    for entry in members:
        for dosage in _dosages(entry.raw):
            out["dose"] = out["dose"] or _dose(dosage)
            out["frequency"] = out["frequency"] or _frequency(dosage)
            out["instructions"] = out["instructions"] or str(dosage.get("text") or "")[:200]
    return out


def allergy_reactions(entry: ClinicalEntry) -> tuple[list[str], str]:
    """(manifestations, the worst reaction severity stated) of an AllergyIntolerance."""
    manifestations: list[str] = []
    severities: set[str] = set()
    for reaction in entry.raw.get("reaction") or []:
        if not isinstance(reaction, dict):
            continue
        if reaction.get("severity"):
            severities.add(str(reaction["severity"]))
        for concept in reaction.get("manifestation") or []:
            text = _concept_text(concept.get("concept") if isinstance(concept, dict) and "concept" in concept else concept)
            if text and text not in manifestations:
                manifestations.append(text)
    worst = next((s for s in ("severe", "moderate", "mild") if s in severities), "")
    return manifestations, worst


def _common(group: SafetyGroup, snapshot_at: str) -> dict[str, Any]:
    entry = group.item.entry
    return {
        "display": entry.display,
        "code": _code(entry),
        "reference": group.refs[0],
        "references": group.refs,
        "status": entry.status,
        "verification": group.item.verification,
        "snapshot_at": snapshot_at,
    }


def allergy_line(group: SafetyGroup, snapshot_at: str) -> dict[str, Any]:
    entry = group.item.entry
    reactions, severity = allergy_reactions(entry)
    for other in group.members[1:]:  # a repeated entry may name a reaction the newest one left out
        reactions += [r for r in allergy_reactions(other)[0] if r not in reactions]
    return {**_common(group, snapshot_at), "criticality": str(entry.raw.get("criticality") or ""), "reactions": reactions,
            "reaction_severity": severity, "type": str(entry.raw.get("type") or ""),
            "category": [str(c) for c in entry.raw.get("category") or [] if isinstance(c, str)]}


def medication_line(group: SafetyGroup, snapshot_at: str) -> dict[str, Any]:
    return {**_common(group, snapshot_at), **medication_dosing(group.members), "since": group.item.entry.date[:10]}


def condition_line(group: SafetyGroup, snapshot_at: str) -> dict[str, Any]:
    categories: list[str] = []
    for member in group.members:
        categories += [c for c in member.category if c not in categories]
    return {**_common(group, snapshot_at), "categories": categories, "onset": group.item.entry.date[:10]}


@dataclass
class SafetySection:
    groups: dict[str, list[SafetyGroup]]
    data: dict[str, Any]


def safety_section(record: ClinicalRecord, safety: SafetyContext, *, snapshot_at: str) -> SafetySection:
    """Every active allergy, medication and condition (every category), one line per concept with every entry's
    reference, and the safety entries the snapshot holds but could not read."""
    # "No known allergy" entries are a statement about the list, not an allergy (safety_context drops them too).
    allergies = safety_groups(safety.allergies, [e for e in record.active_allergies
                                                 if not any(c.code in NO_KNOWN_ALLERGY_CODES for c in e.codings)])
    medications = safety_groups(safety.medications, record.active_medications)
    conditions = safety_groups(safety.conditions, record.active_conditions)
    unreadable = [{"resourceType": w.get("resourceType", "?"), "id": w.get("id", "?")} for w in record.warnings
                  if w.get("resourceType") in SAFETY_TYPES]
    data = {
        "age": safety.age,
        "sex": safety.sex,
        "no_known_allergies": safety.no_known_allergies,
        "allergies": [allergy_line(g, snapshot_at) for g in allergies],
        "medications": [medication_line(g, snapshot_at) for g in medications],
        "conditions": [condition_line(g, snapshot_at) for g in conditions],
        "unreadable": unreadable,
    }
    return SafetySection(groups={"allergies": allergies, "medications": medications, "conditions": conditions}, data=data)

"""Pure helpers that turn cited FHIR entries into what a reviewer reads (no ORM)."""
from __future__ import annotations

from typing import Any

from reconcile_app.fhir.clinical import SYSTEM_LABELS, ClinicalEntry

from .summaries import RecordFacts, SaidFacts

AUTHOR_KEYS = ("recorder", "requester", "asserter", "informationSource", "author")


def _reference_display(value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict):
        if "actor" in value and isinstance(value["actor"], dict):  # Procedure.performer / Immunization.performer
            value = value["actor"]
        return str(value.get("display") or value.get("reference") or "")
    return ""


def entry_author(raw: dict[str, Any]) -> str:
    for key in (*AUTHOR_KEYS, "performer"):
        text = _reference_display(raw.get(key))
        if text:
            return text
    return ""


def entry_value(entry: ClinicalEntry) -> str:
    """Dose for medications, value for observations, reaction for allergies."""
    if entry.quantities:
        parts = []
        for q in entry.quantities:
            label = (q.code.display or q.code.code) + " " if q.code else ""
            parts.append(f"{label}{q.value:g} {q.unit}".strip())
        return " / ".join(parts)
    return entry.detail


def entry_view(*, citation: dict[str, Any], entry: ClinicalEntry | None) -> dict[str, Any]:
    """One cited resource as the detail page shows it; a citation missing from the snapshot says so."""
    system = str(citation.get("system") or "")
    view: dict[str, Any] = {
        "resource_type": str(citation.get("resourceType") or ""),
        "id": str(citation.get("id") or ""),
        "display": str(citation.get("display") or ""),
        "system": system,
        "system_label": SYSTEM_LABELS.get(system, system),
        "code": str(citation.get("code") or ""),
        "found": entry is not None,
    }
    if entry is None:
        return view
    coding = entry.primary_coding
    view.update(
        display=entry.display or view["display"],
        system=coding.system if coding else system,
        system_label=SYSTEM_LABELS.get(coding.system, coding.system) if coding else view["system_label"],
        code=coding.code if coding else view["code"],
        status=entry.status,
        state=entry.state,
        date=entry.date[:10],
        end_date=entry.end_date[:10],
        value=entry_value(entry),
        author=entry_author(entry.raw),
        status_reason=entry.status_reason,
    )
    return view


# --- facts for the one-line summary -----------------------------------------------------------

UNIT_TEXT = {"mm[Hg]": "mmHg", "[lb_av]": "lb", "Cel": "°C", "[degF]": "°F"}


def quantity_text(entry: ClinicalEntry) -> str:
    """"123/84 mmHg" for a blood pressure panel, "7.2 %" for a single value."""
    quantities = list(entry.quantities)
    if not quantities:
        return ""
    if len(quantities) == 2 and len({q.unit for q in quantities}) == 1:
        # Systolic before diastolic, whatever order the EHR sent the components in.
        quantities.sort(key=lambda q: 0 if q.code and "systolic" in (q.code.display or "").lower() else 1)
        unit = UNIT_TEXT.get(quantities[0].unit, quantities[0].unit)
        return f"{quantities[0].value:g}/{quantities[1].value:g} {unit}".strip()
    return " / ".join(f"{q.value:g} {UNIT_TEXT.get(q.unit, q.unit)}".strip() for q in quantities)


def record_facts(*, citation: dict[str, Any], entry: ClinicalEntry | None) -> RecordFacts:
    """A cited resource as the summary needs it; a citation the snapshot lacks says so."""
    resource_type = str(citation.get("resourceType") or "")
    if entry is None:
        return RecordFacts(resource_type=resource_type, id=str(citation.get("id") or ""),
                           display=str(citation.get("display") or ""), found=False)
    value = quantity_text(entry) if entry.resource_type == "Observation" else ""
    if entry.resource_type == "AllergyIntolerance" and entry.detail:
        value = f"({entry.detail})"
    return RecordFacts(resource_type=entry.resource_type, id=entry.id, display=entry.display or str(citation.get("display") or ""),
                       status=entry.status, value=value, date=entry.date)


def said_facts(memory: Any) -> SaidFacts:
    """The memory row (or any object with its fields) as the summary's plain input."""
    return SaidFacts(
        category=memory.category, attributes=dict(memory.attributes or {}), content=memory.content, subject=memory.subject,
        subject_relation=memory.subject_relation, assertion=memory.assertion, event_time_text=memory.event_time_text,
        event_start=memory.event_start, mention_time=memory.mention_time,
    )

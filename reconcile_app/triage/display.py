"""Pure helpers that turn cited FHIR entries into what a reviewer reads (no ORM)."""
from __future__ import annotations

from typing import Any

from reconcile_app.fhir.clinical import SYSTEM_LABELS, ClinicalEntry

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

"""The deterministic citation gate: a finding may only cite resources that exist and are not in error."""
from __future__ import annotations

from reconcile_app.fhir.clinical import ClinicalRecord, State

from .types import Citation, FindingDraft


def citation_gate(draft: FindingDraft, record: ClinicalRecord) -> FindingDraft:
    """Drop citations to unknown or entered-in-error resources; fill system/code/display from the record."""
    kept: list[Citation] = []
    for citation in draft.citations:
        entry = record.get(citation.resource_type, citation.id)
        if entry is None:
            draft.gate_notes.append(f"dropped citation to unknown {citation.resource_type}/{citation.id}"[:200])
            continue
        if entry.state == State.ERROR and not draft.rule.startswith("error-"):
            draft.gate_notes.append(f"dropped citation to entered-in-error {citation.resource_type}/{citation.id}"[:200])
            continue
        coding = entry.primary_coding
        kept.append(
            Citation(
                resource_type=entry.resource_type,
                id=entry.id,
                system=coding.system if coding else "",
                code=coding.code if coding else "",
                display=entry.display,
            )
        )
    draft.citations = kept
    return draft

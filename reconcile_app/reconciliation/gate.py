"""The deterministic citation gate: a finding may only cite resources that exist and are not in error."""
from __future__ import annotations

from reconcile_app.fhir.clinical import ClinicalRecord, State

from .types import Citation, FindingDraft, FindingKind

# The one exception to "never cite entered-in-error": a gap *about* a voided entry. When the patient really
# takes (or has) what the record's only entry marks entered-in-error, the reviewer must see that voided entry
# to reinstate it. Only rules named with this prefix, and only on a gap, may cite one; every other finding
# (an LLM's included) loses such a citation, with a note.
ERROR_RULE_PREFIX = "error-"


def may_cite_entered_in_error(draft: FindingDraft) -> bool:
    return draft.kind == FindingKind.GAP and draft.rule.startswith(ERROR_RULE_PREFIX)


def citation_gate(draft: FindingDraft, record: ClinicalRecord) -> FindingDraft:
    """Drop citations to unknown or entered-in-error resources (noting each); fill system/code/display from the record."""
    kept: list[Citation] = []
    seen: set[tuple[str, str]] = set()
    for citation in draft.citations:
        key = (citation.resource_type, citation.id)
        if key in seen:
            continue
        seen.add(key)
        entry = record.get(citation.resource_type, citation.id)
        if entry is None:
            draft.gate_notes.append(f"dropped citation to unknown {citation.resource_type}/{citation.id}"[:200])
            continue
        if entry.state == State.ERROR and not may_cite_entered_in_error(draft):
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
    if draft.citations and not kept:
        draft.gate_notes.append("no verifiable citation left")
    draft.citations = kept
    return draft

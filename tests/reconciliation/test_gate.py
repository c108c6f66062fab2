"""The citation gate: fabricated and entered-in-error citations are dropped and noted; a gap about a voided entry keeps it."""
from __future__ import annotations

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.gate import citation_gate
from reconcile_app.reconciliation.types import Citation, FindingDraft


def test_fabricated_citation_is_dropped_and_noted(record: ClinicalRecord) -> None:
    draft = FindingDraft(kind="contradiction", rule="llm-v1", citations=[
        Citation("MedicationRequest", "medrx-lisinopril"),
        Citation("MedicationRequest", "medrx-made-up", "http://www.nlm.nih.gov/research/umls/rxnorm", "999", "invented"),
    ])
    gated = citation_gate(draft, record)
    assert [c.id for c in gated.citations] == ["medrx-lisinopril"]
    assert any("unknown MedicationRequest/medrx-made-up" in n for n in gated.gate_notes)


def test_citations_are_filled_from_the_record_not_the_engine(record: ClinicalRecord) -> None:
    draft = FindingDraft(kind="gap", rule="x", citations=[Citation("Condition", "cond-htn", "sys", "123", "made-up display")])
    [citation] = citation_gate(draft, record).citations
    assert (citation.system, citation.code, citation.display) == ("http://snomed.info/sct", "59621000", "Essential hypertension (disorder)")


def test_entered_in_error_citation_is_dropped_from_an_ordinary_finding(record: ClinicalRecord) -> None:
    draft = FindingDraft(kind="contradiction", rule="med-stopped-active", citations=[Citation("MedicationRequest", "medrx-glipizide-eie")])
    gated = citation_gate(draft, record)
    assert gated.citations == []
    assert any("entered-in-error" in n for n in gated.gate_notes)
    assert "no verifiable citation left" in gated.gate_notes


def test_a_gap_about_the_voided_entry_may_cite_it(record: ClinicalRecord) -> None:
    draft = FindingDraft(kind="gap", rule="error-med-only-entry", citations=[Citation("MedicationRequest", "medrx-glipizide-eie")])
    assert [c.id for c in citation_gate(draft, record).citations] == ["medrx-glipizide-eie"]
    assert draft.gate_notes == []


def test_the_error_exception_needs_both_the_rule_and_a_gap(record: ClinicalRecord) -> None:
    draft = FindingDraft(kind="agreement", rule="error-med-only-entry", citations=[Citation("MedicationRequest", "medrx-glipizide-eie")])
    assert citation_gate(draft, record).citations == []


def test_duplicate_citations_collapse(record: ClinicalRecord) -> None:
    draft = FindingDraft(kind="gap", rule="x", citations=[Citation("Condition", "cond-htn"), Citation("Condition", "cond-htn")])
    assert len(citation_gate(draft, record).citations) == 1

"""The learned judge: vetoes unlikely discrepancies, raises likely ones, and says why on the finding."""
from __future__ import annotations

from datetime import datetime, timezone

from reconcile_app.core.linear import LinearModel
from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.narrative.types import MemoryDraft
from reconcile_app.reconciliation.engines.judge import Judge, finding_dense
from reconcile_app.reconciliation.types import Citation, FindingDraft

AT = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
RECORD = build_clinical_record([
    {"resourceType": "Patient", "id": "p1"},
    {"resourceType": "MedicationRequest", "id": "m1", "status": "active", "subject": {"reference": "Patient/p1"},
     "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "1", "display": "Omeprazole 20 MG"}]}},
])


def _judge(weight: float) -> Judge:
    model = LinearModel("j", "1", ["no", "yes"], {"yes": {"f:cat:medication": weight}}, {"yes": 0.0})
    return Judge(model, veto=0.3, promote=0.7)


def _memory(category: str = "medication") -> MemoryDraft:
    return MemoryDraft(category=category, content="Medication omeprazole: stopped", anchor_turn_id="t1", turn_ids=("t1",),
                       quote="q", quote_start=0, quote_end=1, speaker="patient", mention_time=AT)


def test_an_unlikely_discrepancy_is_kept_as_no_clinical_relevance_with_a_note() -> None:
    draft = FindingDraft(kind="gap", severity="medium", safety_critical=True, rule="med-undocumented")
    out = _judge(-5.0).decide(_memory(), draft, RECORD)
    assert (out.kind, out.severity, out.safety_critical) == ("no_clinical_relevance", "low", False)
    assert out.rule == "judge-veto:med-undocumented" and "below 0.30" in out.gate_notes[-1]


def test_a_likely_agreement_on_an_active_order_is_raised_as_a_contradiction_citing_it() -> None:
    draft = FindingDraft(kind="agreement", rule="med-active-agrees", citations=[Citation("MedicationRequest", "m1")])
    out = _judge(5.0).decide(_memory(), draft, RECORD)
    assert out.kind == "contradiction" and out.severity == "medium" and out.rule.startswith("judge-raise:")
    assert "Omeprazole" not in out.explanation or out.explanation.endswith(".")


def test_a_likely_statement_with_nothing_cited_is_raised_as_a_gap() -> None:
    draft = FindingDraft(kind="no_clinical_relevance", rule="med-unnamed")
    assert _judge(5.0).decide(_memory(), draft, RECORD).kind == "gap"


def test_someone_elses_statement_is_never_raised() -> None:
    memory = _memory()
    memory.subject = "other"
    draft = FindingDraft(kind="no_clinical_relevance", rule="subject-other")
    assert _judge(5.0).decide(memory, draft, RECORD).kind == "no_clinical_relevance"


def test_dense_features_describe_the_verdict_and_what_it_cites() -> None:
    draft = FindingDraft(kind="contradiction", severity="high", safety_critical=True, rule="med-stopped-active",
                         citations=[Citation("MedicationRequest", "m1")])
    memory = _memory()
    memory.attributes.update({"action": "stopped", "delta": {"score": 0.9}})
    dense = finding_dense(memory, draft, RECORD)
    for key in ("kind:contradiction", "rulefam:med-stopped", "sev:high", "safety", "action:medication:stopped",
                "cite:MedicationRequest:active", "cite_own:active", "delta_band:4"):
        assert dense.get(key) == 1.0, key

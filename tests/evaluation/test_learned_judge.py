"""Outcome models on the judge: severity where it beat the rules (its scope), and every learned change names its features."""
from __future__ import annotations

from datetime import datetime, timezone

from reconcile_app.core.linear import LinearModel
from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.narrative.types import MemoryDraft
from reconcile_app.reconciliation.engines.judge import Judge
from reconcile_app.reconciliation.types import FindingDraft

AT = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
RECORD = build_clinical_record([{"resourceType": "Patient", "id": "p1"}])
FEATURE = "f:m:mem:medication:self:affirmed"


def _memory() -> MemoryDraft:
    return MemoryDraft(category="medication", content="Medication x: stopped", anchor_turn_id="t1", turn_ids=("t1",),
                       quote="q", quote_start=0, quote_end=1, speaker="patient", mention_time=AT)


def _severity(scope: str) -> LinearModel:
    model = LinearModel("judge-severity", "1", ["high", "low", "medium"], {"high": {FEATURE: 5.0}, "low": {}, "medium": {}},
                        {"high": 0.0, "low": 0.0, "medium": 0.0})
    model.meta["scope"] = scope
    return model


def _off_judge(**outcomes: LinearModel) -> Judge:
    return Judge(LinearModel("j", "2", ["no", "yes"], {"yes": {}}, {"yes": 0.0}, threshold=1.01), 1.01, dict(outcomes))


def test_a_severity_model_that_beat_the_rules_everywhere_rates_every_discrepancy_and_says_why() -> None:
    [out] = _off_judge(severity=_severity("all")).apply([_memory()], [FindingDraft(kind="gap", severity="medium", rule="r")], RECORD)
    assert out.severity == "high" and "severity medium -> high" in out.gate_notes[-1] and FEATURE in out.gate_notes[-1]


def test_a_severity_model_for_unrated_turns_leaves_the_rules_severity_alone() -> None:
    [out] = _off_judge(severity=_severity("unrated")).apply([_memory()], [FindingDraft(kind="gap", severity="medium", rule="r")], RECORD)
    assert out.severity == "medium" and not out.gate_notes


def test_a_learned_safety_flag_names_the_features_that_raised_it() -> None:
    safety = LinearModel("judge-safety_critical", "1", ["False", "True"], {"True": {FEATURE: 5.0}}, {"True": 0.0}, threshold=0.5)
    [out] = _off_judge(safety=safety).apply([_memory()], [FindingDraft(kind="gap", severity="medium", rule="r")], RECORD)
    assert out.safety_critical and FEATURE in out.gate_notes[-1]

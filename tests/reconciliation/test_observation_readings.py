"""Home readings reconciled against the record's own values and the patient's earlier readings: a weight compared
with the last clinic weight, a daily weight log, a stated change, a pulse from a watch, a viral load from a letter."""
from __future__ import annotations

from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.types import FindingDraft

from .conftest import load_record, memory, rules_reconciler

ENGINE = rules_reconciler()
QUEUED = ("contradiction", "gap")


@pytest.fixture(scope="module")
def plan_record() -> ClinicalRecord:
    return load_record("careplan_text_patient.json")  # 80 kg on 2025-12-01, heart failure, HIV suppressed


def reading(record: ClinicalRecord, quote: str, history: tuple = (), **attributes: Any) -> FindingDraft:
    [finding] = ENGINE.reconcile([memory("measurement", quote, attributes=attributes)], record, history=history)
    return finding


def test_a_home_weight_well_below_the_last_clinic_weight_is_an_unintended_loss(plan_record: ClinicalRecord) -> None:
    finding = reading(plan_record, "the scale said 160 this morning and I'm not trying to lose anything", kind="weight", value=160, unit="[lb_av]")
    assert finding.kind == "gap" and finding.rule.startswith("reading-weight-unintended-loss")
    assert "obs-weight" in {c.id for c in finding.citations}


def test_a_loss_the_patient_set_out_to_make_is_not_a_finding(plan_record: ClinicalRecord) -> None:
    goal = memory("goal", "I want to lose twenty pounds before my daughter's wedding", turn_id="s00-t02")
    finding = reading(plan_record, "the scale said 160 this morning", history=(goal,), kind="weight", value=160, unit="[lb_av]")
    assert finding.kind not in QUEUED


def test_a_daily_log_rising_fast_in_heart_failure_is_a_safety_gap(plan_record: ClinicalRecord) -> None:
    finding = reading(plan_record, "weights: 176 saturday, 178 sunday, 181 today", kind="weight", value=181, unit="[lb_av]",
                      values=[176, 178, 181], baseline=176, daily=True)
    assert (finding.kind, finding.severity, finding.safety_critical) == ("gap", "high", True)
    assert {"obs-weight", "cond-hf"} <= {c.id for c in finding.citations}


@pytest.mark.parametrize(("quote", "queued"), [
    ("I'm down 12 pounds since the holidays", False),
    ("I'm down 12 pounds since the holidays without even trying", True),
])
def test_a_stated_loss_is_unintended_only_when_the_patient_says_so(plan_record: ClinicalRecord, quote: str, queued: bool) -> None:
    assert (reading(plan_record, quote, kind="weight", value=-12, unit="[lb_av]", change=True).kind in QUEUED) is queued


def test_a_watch_pulse_over_130_at_rest_is_a_safety_gap(plan_record: ClinicalRecord) -> None:
    finding = reading(plan_record, "my watch showed 124 and 131 while I sat reading", kind="heart_rate", value=131, values=[124, 131])
    assert (finding.kind, finding.severity, finding.safety_critical) == ("gap", "high", True)
    assert "cond-af" in {c.id for c in finding.citations}


def test_a_detectable_viral_load_after_suppression_is_a_high_gap(plan_record: ClinicalRecord) -> None:
    finding = reading(plan_record, "the letter says my viral load came back 15,600", kind="viral_load", value=15600)
    assert (finding.kind, finding.severity) == ("gap", "high")
    assert {"obs-vl", "cond-hiv"} <= {c.id for c in finding.citations}

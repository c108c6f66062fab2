"""Class-level interaction rows reach drugs a patient names that the record does not list: a new drug from an outside
prescriber or the pharmacy shelf is judged against what the record already holds (antithrombotics, calcineurin
inhibitors, potassium raisers, opioids). Each case has trap twins (not taken, someone else's, only considered).
Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.gate import citation_gate
from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.narrative.types import SessionInput, TurnInput
from reconcile_app.reconciliation.types import FindingDraft
from reconcile_app.terminology.vocabulary import load_vocabulary
from tests.narrative.conftest import rules_extractor

from .conftest import load_record, rules_reconciler

AT = datetime(2026, 5, 12, 15, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def engines():
    return rules_extractor(), rules_reconciler()


@pytest.fixture(scope="module")
def warfarin_record() -> ClinicalRecord:
    return load_record("reconcile_rules_patient.json")  # warfarin, lisinopril, metformin; CKD, OA knee


@pytest.fixture(scope="module")
def transplant_record() -> ClinicalRecord:
    return load_record("reconcile_medication_patient.json")  # apixaban, alendronate weekly, lithium, metformin, tacrolimus


def discrepancies(engines, record: ClinicalRecord, answer: str) -> list[FindingDraft]:
    extractor, reconciler = engines
    turns = (TurnInput("t1", "coach", AT, "Anything new since we last talked?"),
             TurnInput("t2", "patient", AT + timedelta(minutes=1), answer))
    memories = extractor.extract_session(SessionInput("s1", AT, turns), record=record)
    found = [citation_gate(d, record) for d in reconciler.reconcile(memories, record, history=())]
    return [f for f in found if f.kind in ("contradiction", "gap")]


@pytest.mark.parametrize(("name", "cls"), [
    ("Pletal", "antiplatelet"), ("Arixtra", "anticoagulant"), ("Relafen", "nsaid"), ("Nucynta", "opioid"),
    ("Restoril", "benzodiazepine"), ("Lunesta", "sleep_aid"), ("Imbruvica", "antineoplastic"), ("Xeljanz", "immunosuppressant"),
    ("trimethoprim", "antibiotic"), ("cipro", "qt_prolonging"),
])
def test_added_members_reach_the_class_the_rows_name(name: str, cls: str) -> None:
    drug = load_vocabulary().drug_named(name)
    assert drug is not None
    assert cls in load_knowledge().drug_classes(drug)


@pytest.mark.parametrize("answer", [
    "The dentist started me on erythromycin for an abscess, I'm three days into it.",
    "My rheumatologist's office had me start etodolac for the arthritis flare, one every evening.",
])
def test_a_new_drug_that_meets_warfarin_is_safety_critical(engines, warfarin_record, answer: str) -> None:
    found = discrepancies(engines, warfarin_record, answer)
    assert any(f.safety_critical for f in found), [(f.rule, f.severity, f.explanation) for f in found]


@pytest.mark.parametrize("answer", [
    "The walk-in clinic started me on trimethoprim for a bladder infection, I take it twice a day since Monday.",
])
def test_trimethoprim_with_an_ace_inhibitor_is_flagged_for_potassium(engines, warfarin_record, answer: str) -> None:
    found = discrepancies(engines, warfarin_record, answer)
    assert any(f.safety_critical and "potassium" in f.explanation for f in found), [(f.rule, f.explanation) for f in found]


@pytest.mark.parametrize("answer", [
    "The urgent care doc brought up erythromycin but I never filled it, the tooth settled down.",
    "My husband is the one taking etodolac, his knees are worse than mine.",
    "If the bladder thing comes back they might try trimethoprim, we'll see.",
])
def test_trap_twins_raise_no_safety_finding(engines, warfarin_record, answer: str) -> None:
    found = discrepancies(engines, warfarin_record, answer)
    assert not any(f.safety_critical for f in found), [(f.rule, f.explanation) for f in found]


def test_fluconazole_with_tacrolimus_is_high_and_safety_critical(engines, transplant_record) -> None:
    found = discrepancies(engines, transplant_record, "Urgent care gave me fluconazole for a yeast infection, I took the first pill this morning.")
    assert any(f.safety_critical and f.severity == "high" for f in found), [(f.rule, f.severity, f.explanation) for f in found]


def test_ibrutinib_on_an_anticoagulant_is_high_and_safety_critical(engines, transplant_record) -> None:
    found = discrepancies(engines, transplant_record, "The oncologist put me on ibrutinib last week, I take it every morning now.")
    assert any(f.safety_critical and f.severity == "high" for f in found), [(f.rule, f.severity, f.explanation) for f in found]

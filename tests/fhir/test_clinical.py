"""The safety context is complete (every category), one line per code, and never shows what is not active."""
from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from reconcile_app.fhir.clinical import build_clinical_record, resources_from_bundle, safety_context

ENCOUNTER_DIAGNOSES = Path(__file__).resolve().parent.parent / "data" / "fhir" / "encounter_diagnosis_patient.json"


def _safety():  # type: ignore[no-untyped-def]
    record = build_clinical_record(resources_from_bundle(json.loads(ENCOUNTER_DIAGNOSES.read_text())))
    return safety_context(record, today=date(2026, 1, 15))


def test_active_encounter_diagnoses_are_in_the_safety_context() -> None:
    conditions = {c.display: c for c in _safety().conditions}
    # Coded encounter-diagnosis only (no problem-list entry): the reasons for the anticoagulant.
    assert "Atrial fibrillation" in conditions
    assert "Deep venous thrombosis" in conditions


def test_health_concerns_and_problem_list_items_are_there_too_labelled_when_not_confirmed() -> None:
    conditions = {c.display: c for c in _safety().conditions}
    assert conditions["At risk for falls"].verification == ""  # health-concern, no verification stated
    assert conditions["Chronic kidney disease stage 1"].verification == "provisional"


def test_repeated_diagnoses_are_one_line_standing_for_all_of_them() -> None:
    conditions = [c for c in _safety().conditions if c.display == "Atrial fibrillation"]
    assert len(conditions) == 1
    assert conditions[0].count == 2
    assert conditions[0].ref == "Condition/cond-af-enc-2"  # the most recent entry speaks for the code


def test_resolved_refuted_and_entered_in_error_conditions_are_not_in_it() -> None:
    displays = {c.display for c in _safety().conditions}
    assert displays == {"Atrial fibrillation", "Deep venous thrombosis", "At risk for falls", "Chronic kidney disease stage 1"}


def test_a_drug_ordered_and_stated_is_one_line_and_references_are_resolved() -> None:
    medications = {m.display: m for m in _safety().medications}
    # medicationReference to a Medication in the record, and to a contained one.
    assert set(medications) == {"apixaban 5 MG Oral Tablet", "metoprolol tartrate 25 MG Oral Tablet"}
    apixaban = medications["apixaban 5 MG Oral Tablet"]
    assert apixaban.count == 2  # the request and the statement
    assert "warfarin sodium 5 MG Oral Tablet" not in medications  # stopped


def test_an_allergy_recorded_twice_is_one_line_the_confirmed_entry_first() -> None:
    (allergy,) = _safety().allergies
    assert allergy.display == "Sulfonamide" and allergy.count == 2
    assert allergy.verification == "" and allergy.detail == "Hives"


def test_an_unconfirmed_allergy_alone_is_kept_and_labelled() -> None:
    record = build_clinical_record([
        {"resourceType": "Patient", "id": "p"},
        {"resourceType": "AllergyIntolerance", "id": "a", "clinicalStatus": {"coding": [{"code": "active"}]},
         "verificationStatus": {"coding": [{"code": "unconfirmed"}]}, "code": {"text": "Peanut"}},
        {"resourceType": "AllergyIntolerance", "id": "b", "clinicalStatus": {"coding": [{"code": "active"}]},
         "verificationStatus": {"coding": [{"code": "refuted"}]}, "code": {"text": "Latex"}},
    ])
    (allergy,) = safety_context(record).allergies
    assert (allergy.display, allergy.verification) == ("Peanut", "unconfirmed")


def test_uncoded_entries_merge_by_name_only() -> None:
    record = build_clinical_record([
        {"resourceType": "Patient", "id": "p"},
        {"resourceType": "Condition", "id": "a", "code": {"text": "Gout"}},
        {"resourceType": "Condition", "id": "b", "code": {"text": " gout "}},
        {"resourceType": "Condition", "id": "c", "code": {"text": "Gout flare"}},
    ])
    assert sorted((c.display, c.count) for c in safety_context(record).conditions) == [("Gout", 2), ("Gout flare", 1)]

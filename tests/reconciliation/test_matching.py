"""Matching mentions to record resources: names, brands, lay classes, misspellings and statuses."""
from __future__ import annotations

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.matching import (
    RecordIndex,
    concepts_in_text,
    drugs_in_text,
    expand_activity_words,
    stage_of,
    vaccines_in_text,
)


@pytest.fixture(scope="module")
def index(record: ClinicalRecord) -> RecordIndex:
    return RecordIndex(record)


@pytest.mark.parametrize(
    ("text", "active", "historical", "error"),
    [
        ("lisinopril", ["medrx-lisinopril"], [], []),
        ("Zestril", ["medrx-lisinopril"], [], []),
        ("my lisinipril", ["medrx-lisinopril"], [], []),  # misspelling
        ("Coumadin", ["medrx-warfarin"], [], []),  # brand -> generic
        ("my blood thinner", ["medrx-warfarin"], [], []),  # lay class -> class members
        ("the water pill", [], ["medrx-hctz"], []),
        ("baby aspirin", [], ["medrx-aspirin"], []),
        ("Flovent", ["medrx-fluticasone"], [], []),
        ("glucotrol", [], [], ["medrx-glipizide-eie"]),
        ("apixaban", [], [], []),
    ],
)
def test_medication_mentions_match_record_entries_by_status(index: RecordIndex, text: str, active: list, historical: list, error: list) -> None:
    match = index.match_meds(drugs_in_text(text))
    assert [e.id for e in match.active] == active
    assert [e.id for e in match.historical] == historical
    assert [e.id for e in match.error] == error


def test_a_lay_class_name_reads_as_its_class_and_a_lay_family_as_every_class_under_it() -> None:
    from reconcile_app.reconciliation.knowledge import load_knowledge

    kb = load_knowledge()
    assert drugs_in_text("stopped my water pill").lay_classes == {"diuretic"}
    assert "diuretic" in kb.drug_classes(kb.drug_by_name["furosemide"])  # so a loop diuretic answers to it
    assert {"anticoagulant", "antiplatelet"} <= drugs_in_text("skipped the blood thinner").lay_classes


@pytest.mark.parametrize(
    ("text", "concepts"),
    [
        ("high blood pressure", {"hypertension"}),
        ("Essential hypertension (disorder)", {"hypertension"}),
        ("my sugar diabetes", {"diabetes"}),
        ("Prediabetes (finding)", {"prediabetes"}),
        ("Chronic kidney disease stage 3 (disorder)", {"ckd"}),
        ("afib", {"atrial_fibrillation"}),
    ],
)
def test_condition_synonyms_name_the_same_concept(text: str, concepts: set) -> None:
    assert concepts <= concepts_in_text(text)


def test_prediabetes_is_not_diabetes() -> None:
    assert "diabetes" not in concepts_in_text("Prediabetes (finding)")


def test_stage_is_read_from_text_and_roman_numerals() -> None:
    assert stage_of("CKD stage III") == stage_of("Chronic kidney disease stage 3 (disorder)") == "stage 3"


@pytest.mark.parametrize(
    ("text", "family"),
    [("my second shingles shot", "zoster"), ("got the flu shot", "influenza"), ("tetanus booster", "tdap"), ("hep b series", "hepatitis_b")],
)
def test_vaccine_lay_names_map_to_families(text: str, family: str) -> None:
    assert family in vaccines_in_text(text)


def test_record_vaccines_are_indexed_by_cvx(index: RecordIndex) -> None:
    families = {e.id: fams for e, fams in index.vaccines}
    assert "zoster" in families["imm-zoster-1"]
    assert "influenza" in families["imm-flu-2024"]


def test_status_aware_allergy_and_smoking(index: RecordIndex) -> None:
    latex = next(ae for ae in index.allergies if ae.entry.id == "allergy-latex")
    assert latex.entry.state == "inactive"
    assert index.smoking_status()[0] == "never"


def test_restrictions_come_from_the_careplan_text(index: RecordIndex) -> None:
    clauses = [r.text for r in index.restrictions()]
    assert any("nsaids" in c for c in clauses)
    assert any("high-impact" in c for c in clauses)
    # a conditional restriction ("do not drive when drowsy") cannot be checked and is not used
    assert not any(c.startswith("drive") for c in clauses)


def test_idioms_are_not_activities() -> None:
    assert "high" not in expand_activity_words("I'm running around all day at work")
    assert {"high", "impact"} <= expand_activity_words("started jogging three times a week")


def test_latest_observation_by_loinc(index: RecordIndex) -> None:
    assert index.latest_observation(["6301-6"]).id == "obs-inr-2025-06"


@pytest.mark.parametrize(("text", "found"), [("started st johns wert last week", True), ("fish oyl", False), ("the saint johns day fair", False)])
def test_a_one_letter_misspelling_of_a_long_multiword_name_still_matches(text: str, found: bool) -> None:
    from reconcile_app.reconciliation.knowledge import load_knowledge
    from reconcile_app.reconciliation.matching import drugs_in_text

    names = {d.name for d in drugs_in_text(text, load_knowledge()).drugs}
    assert ("st john's wort" in names) is found

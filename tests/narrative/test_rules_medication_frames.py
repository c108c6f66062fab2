"""Medication frames in everyday words: slang stops, rationing, extra doses, a drug named by purpose or dosage form,
someone else's supply taken by the patient. Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput
from tests.narrative.conftest import chat

AT = datetime(2026, 4, 14, 9, 30, tzinfo=timezone(timedelta(hours=-5)))
RX = "http://www.nlm.nih.gov/research/umls/rxnorm"


def session(*texts: str) -> SessionInput:
    return chat(AT, *texts)


def meds(drafts: list[MemoryDraft]) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == "medication"]


def order(rid: str, display: str) -> dict:
    return {"resourceType": "MedicationRequest", "id": rid, "status": "active",
            "medicationCodeableConcept": {"coding": [{"system": RX, "code": "1", "display": display}]}}


@pytest.mark.parametrize("text", [
    "so i basically ghosted my atorvastatin after easter lol",
    "I broke up with the atorvastatin, we were not a good match.",
    "Gave myself a little holiday from the atorvastatin this month.",
    "the atorvastatin is on hold till i see the doc",
])
def test_a_stop_said_in_slang_or_as_a_joke_is_a_stop(extractor, text: str) -> None:
    found = meds(extractor.extract_session(session("Anything new with your medicines?", text)))
    assert found and found[0].attributes["drug"] == "atorvastatin" and found[0].attributes["action"] == "stopped"


def test_rationing_a_supply_is_a_smaller_dose(extractor) -> None:
    found = meds(extractor.extract_session(session("How are refills going?", "The pharmacy is slow so I'm rationing my sertraline.")))
    assert found[0].attributes["action"] == "changed_dose" and found[0].attributes["dose_change"] == "less"


def test_an_extra_dose_is_more(extractor) -> None:
    found = meds(extractor.extract_session(session("Rough week?", "On bad days I add an extra one of my lorazepam at lunch.")))
    assert found[0].attributes["dose_change"] == "more"


def test_a_mixed_number_is_a_quantity_not_a_halved_dose(extractor) -> None:
    found = meds(extractor.extract_session(session("How do you take it?", "The warfarin is one and a half tablets on Fridays.")))
    assert found[0].attributes.get("dose_change", "") != "half"


def test_a_drug_named_by_its_purpose_resolves_to_the_record(extractor) -> None:
    record = build_clinical_record([order("rx-levo", "levothyroxine sodium 88 MCG Oral Tablet")])
    found = meds(extractor.extract_session(session("And the morning pills?", "the thyroid one only when I remember honestly"),
                                           record=record))
    assert found and found[0].attributes["drug"] == "levothyroxine"


def test_a_thyroid_pill_can_be_an_antithyroid_drug(extractor) -> None:
    record = build_clinical_record([order("rx-mmi", "methimazole 5 MG Oral Tablet")])
    found = meds(extractor.extract_session(session("Which one?", "My thyroid pill, I stopped it last week."), record=record))
    assert found and found[0].attributes["drug"] == "methimazole" and found[0].attributes["action"] == "stopped"


def test_a_dosage_form_names_the_records_one_order_in_that_form(extractor) -> None:
    record = build_clinical_record([order("rx-bup", "buprenorphine 8 MG / naloxone 2 MG Sublingual Film"),
                                    order("rx-nal", "naloxone 4 MG/ACTUAT Nasal Spray")])
    found = meds(extractor.extract_session(session("How are you managing?", "I've been cutting the films in half so the box lasts."),
                                           record=record))
    assert found and found[0].attributes["drug"].startswith("buprenorphine")
    assert found[0].attributes["action"] == "changed_dose"


def test_someone_elses_supply_taken_by_the_patient_is_the_patients_medication(extractor) -> None:
    found = meds(extractor.extract_session(session(
        "Sleeping any better?", "My roommate has zolpidem from her doctor. I've been taking one of hers on work nights.")))
    own = [d for d in found if d.subject == "patient"]
    assert own and own[0].attributes["drug"] == "zolpidem"
    assert own[0].attributes["source"] == "someone_else" and own[0].attributes["owner"]
    assert [d for d in found if d.subject == "other"]  # the roommate's prescription stays hers


def test_a_possessive_without_an_earlier_drug_creates_nothing(extractor) -> None:
    found = meds(extractor.extract_session(session("Weekend?", "I've been taking some of his advice about walking.")))
    assert not [d for d in found if d.attributes.get("source") == "someone_else"]

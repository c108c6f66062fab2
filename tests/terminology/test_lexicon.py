"""The lexicon: brands and generics from drug-NER, ICD-10-CM lay terms, curated lay classes and misspellings, the record."""
from __future__ import annotations

import json

import pytest

from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.terminology.lexicon import (
    ALIASES_PATH,
    damerau1,
    default_lexicon,
    lower_same_length,
    record_overlay,
    tokenize,
)


@pytest.fixture(scope="module")
def lex():
    return default_lexicon()


def _best(lex, text: str, overlay=None):
    low = lower_same_length(text)
    hits = lex.match(low, tokenize(low), overlay)
    return [(h.term, h.best.kind, h.best.canonical) for h in hits]


BRANDS = [
    ("She switched me to Eliquis", "apixaban"),
    ("back on my Lantus", "insulin glargine"),
    ("took two Advil", "ibuprofen"),
    ("my Synthroid", "levothyroxine"),
    ("the Flonase helps", "fluticasone"),
    ("started Trulicity", "dulaglutide"),
    ("a Z-Pack from urgent care", "azithromycin"),
    ("one Norco at night", "hydrocodone/acetaminophen"),
    ("HCTZ in the morning", "hydrochlorothiazide"),
    ("baby aspirin daily", "aspirin"),
    ("my EpiPen", "epinephrine"),
    ("some Tums", "calcium carbonate"),
    ("Keflex for the cut", "cephalexin"),
]


@pytest.mark.parametrize(("text", "drug"), BRANDS)
def test_brands_resolve_to_the_generic(lex, text: str, drug: str) -> None:
    found = _best(lex, text)
    assert any(kind == "drug" and canonical == drug for _, kind, canonical in found), found


MISSPELLINGS = [
    ("I cut my lisinipril in half", "lisinopril"),
    ("metformen twice a day", "metformin"),
    ("the amlodapine", "amlodipine"),
    ("took ibuprophen", "ibuprofen"),
    ("my levothyroxin", "levothyroxine"),
]


@pytest.mark.parametrize(("text", "drug"), MISSPELLINGS)
def test_curated_misspellings_of_common_drugs(lex, text: str, drug: str) -> None:
    assert any(canonical == drug for _, _, canonical in _best(lex, text))


LAY = [
    ("my water pill", "drug_class", "diuretic"),
    ("a blood thinner", "drug_class", "blood thinner"),
    ("the sugar pills", "drug_class", "antidiabetic"),
    ("my pressure pill", "drug_class", "antihypertensive"),
    ("the cholesterol one", "drug_class", "statin"),
    ("the purple inhaler", "drug_class", "inhaled controller"),
    ("my rescue inhaler", "drug_class", "short-acting beta agonist"),
    ("the diabetes shot", "drug_class", "injectable antidiabetic"),
    ("high blood pressure", "condition", "hypertension"),
    ("afib", "condition", "atrial fibrillation"),
    ("a UTI", "condition", "urinary tract infection"),
    ("light headed", "symptom", "dizziness"),
    ("short of breath", "symptom", "shortness of breath"),
    ("my flu shot", "immunization", "influenza vaccine"),
    ("a colonoscopy", "procedure", "colonoscopy"),
    ("the cpap mask", "care", "cpap"),
]


@pytest.mark.parametrize(("text", "kind", "canonical"), LAY)
def test_lay_language_and_classes(lex, text: str, kind: str, canonical: str) -> None:
    assert (kind, canonical) in [(k, c) for _, k, c in _best(lex, text)]


def test_icd_10_cm_supplies_conditions_beyond_the_aliases(lex) -> None:
    found = _best(lex, "they think it is diverticulosis or maybe cholangitis")
    assert ("condition", "cholangitis") in [(k, c) for _, k, c in found]


@pytest.mark.parametrize("text", ["I had more coffee", "a taco and attention", "the chest of drawers", "it scared me to death"])
def test_ordinary_words_are_not_clinical_terms(lex, text: str) -> None:
    assert _best(lex, text) == []


def test_near_miss_is_a_candidate_not_a_silent_match(lex) -> None:
    low = lower_same_length("she gave me glimepirid for the sugar")
    tokens = tokenize(low)
    hits = lex.match(low, tokens)
    matched = {i for h in hits for i in range(h.tok_start, h.tok_end)}
    candidates = lex.near_misses(tokens, matched)
    assert [(c.term, c.suggestion) for c in candidates] == [("glimepirid", "glimepiride")]
    assert not any(h.term == "glimepirid" for h in hits)


def test_damerau_distance_one() -> None:
    assert damerau1("glipizide", "glipzide") and damerau1("metoprolol", "metoprlool")
    assert not damerau1("metoprolol", "metformin")


def test_record_displays_join_the_lexicon_with_their_codes(lex) -> None:
    record = build_clinical_record([
        {"resourceType": "MedicationRequest", "id": "rx1", "status": "active",
         "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "999001",
                                                   "display": "Zorbitrex 5 MG Oral Tablet"}]}},
    ])
    overlay = record_overlay(record, lex)
    low = lower_same_length("I stopped the zorbitrex")
    hits = lex.match(low, tokenize(low), overlay)
    assert hits and hits[0].best.source == "record" and hits[0].best.record_ref == ("MedicationRequest", "rx1")
    assert hits[0].best.code == "999001"


@pytest.mark.parametrize(("display", "phrase", "drug"), [
    ("24 HR metformin hydrochloride 500 MG Extended Release Oral Tablet", "metformin hydrochloride", "metformin"),
    ("3 ML liraglutide 6 MG/ML Pen Injector", "liraglutide", "liraglutide"),
    ("Levothyroxine Sodium 0.075 MG Oral Tablet", "levothyroxine", "levothyroxine"),
    ("Amoxicillin 250 MG / Clavulanate 125 MG Oral Tablet", "clavulanate", "amoxicillin"),
])
def test_rxnorm_style_displays_yield_the_drug(lex, display: str, phrase: str, drug: str) -> None:
    record = build_clinical_record([{"resourceType": "MedicationRequest", "id": "rx", "status": "active",
                                     "medicationCodeableConcept": {"text": display}}])
    overlay = record_overlay(record, lex)
    assert overlay[phrase][0].canonical == drug


def test_alias_file_is_versioned_and_every_entry_names_its_source() -> None:
    data = json.loads(ALIASES_PATH.read_text(encoding="utf-8"))
    assert data["version"]
    assert data["entries"] and all(e.get("source") and e.get("term") and e.get("kind") for e in data["entries"])

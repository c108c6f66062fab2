"""A record condition is matched by its code through the terminology layer (SNOMED CT codes, ICD-10-CM categories),
whatever its display says; the peptic-ulcer concept lets the NSAID + ulcer interaction row fire. Sentences and
records written for these tests."""
from __future__ import annotations

from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord, Coding, build_clinical_record
from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.reconciliation.matching import coded_concepts, concepts_in_text
from reconcile_app.terminology.concepts import ICD10CM, SNOMED, condition_codes

from .conftest import memory, rules_reconciler

ENGINE = rules_reconciler()
PATIENT = {"resourceType": "Patient", "id": "p1", "birthDate": "1958-03-02"}


def record_with(system: str, code: str, display: str) -> ClinicalRecord:
    condition: dict[str, Any] = {
        "resourceType": "Condition", "id": "c1", "subject": {"reference": "Patient/p1"},
        "clinicalStatus": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "active"}]},
        "code": {"coding": [{"system": system, "code": code, "display": display}]},
    }
    return build_clinical_record([PATIENT, condition])


@pytest.mark.parametrize(("system", "code", "concept"), [
    (SNOMED, "90560007", "gout"),
    (ICD10CM, "M1A.0710", "gout"),  # a chronic-gout code four levels under its category
    (ICD10CM, "K26.7", "peptic_ulcer"),
    (SNOMED, "13200003", "peptic_ulcer"),
    (ICD10CM, "Z87.11", "peptic_ulcer"),  # a history of the ulcer still counts for NSAID risk
])
def test_a_code_names_its_concept(system: str, code: str, concept: str) -> None:
    assert concept in coded_concepts([Coding(system, code)])


@pytest.mark.parametrize(("system", "code"), [
    (SNOMED, "371087003"),  # a diabetic foot ulcer: an ulcer, not a peptic one
    (ICD10CM, "M19.90"),  # osteoarthritis, not gout, though both sit in chapter M
    ("http://www.nlm.nih.gov/research/umls/rxnorm", "90560007"),  # the same digits in another system name nothing
])
def test_a_neighbouring_code_or_another_system_names_no_such_concept(system: str, code: str) -> None:
    assert not coded_concepts([Coding(system, code)]) & {"gout", "peptic_ulcer"}


def test_every_coded_concept_is_a_condition_of_the_knowledge_tables_with_a_source() -> None:
    kb = load_knowledge()
    for cid, coded in condition_codes().items():
        assert cid in kb.conditions and coded.source and (coded.snomed or coded.icd10cm), cid


@pytest.mark.parametrize(("text", "found"), [
    ("had a stomach ulcer that bled years ago", True),
    ("the duodenal ulcer is healed, they said", True),
    ("the sore on my foot is a diabetic ulcer", False),
    ("my ulcerative colitis is quiet", False),
])
def test_the_peptic_ulcer_lay_terms(text: str, found: bool) -> None:
    assert ("peptic_ulcer" in concepts_in_text(text)) is found


def _nsaid(record: ClinicalRecord):  # type: ignore[no-untyped-def]
    [finding] = ENGINE.reconcile([memory("medication", "been taking ibuprofen most days for my knee",
                                         attributes={"drug": "ibuprofen", "action": "taking"})], record)
    return finding


@pytest.mark.parametrize(("system", "code", "display"), [
    (SNOMED, "13200003", "Peptic ulcer (disorder)"),
    (ICD10CM, "K26.7", "Chronic duodenal ulcer without hemorrhage or perforation"),
    (ICD10CM, "Z87.11", ""),  # a coded entry with no display at all
])
def test_an_nsaid_with_a_peptic_ulcer_on_record_is_a_safety_interaction(system: str, code: str, display: str) -> None:
    finding = _nsaid(record_with(system, code, display))
    assert finding.safety_critical and finding.severity == "high"
    assert [c.id for c in finding.citations] == ["c1"]


def test_an_nsaid_with_a_foot_ulcer_on_record_is_no_ulcer_interaction() -> None:
    finding = _nsaid(record_with(SNOMED, "371087003", "Ulcer of foot due to diabetes mellitus (disorder)"))
    assert not finding.safety_critical and "c1" not in [c.id for c in finding.citations]


@pytest.mark.parametrize(("system", "code", "display"), [
    (SNOMED, "90560007", "Podagra of the right great toe, recurrent, followed in rheumatology clinic"),
    (ICD10CM, "M1A.0710", ""),
])
def test_a_gout_flare_agrees_with_a_gout_entry_known_only_by_its_code(system: str, code: str, display: str) -> None:
    [finding] = ENGINE.reconcile([memory("condition", "my gout flared up again last week", attributes={"name": "gout"})],
                                 record_with(system, code, display))
    assert finding.kind == "agreement" and [c.id for c in finding.citations] == ["c1"]


def test_a_gout_flare_does_not_agree_with_a_knee_entry() -> None:
    [finding] = ENGINE.reconcile([memory("condition", "my gout flared up again last week", attributes={"name": "gout"})],
                                 record_with(SNOMED, "239873007", "Knee joint degeneration, right, moderate"))
    assert finding.kind != "agreement" and not finding.citations

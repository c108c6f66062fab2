"""The context pack's pure builder, safety lines and text rendering, over plain data (no database)."""
from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from reconcile_app.context.avoid import label_for
from reconcile_app.context.pack import DiscrepancyFacts, MemoryFacts, build_pack, discrepancy_text, pack_version, record_part
from reconcile_app.context.text import BudgetTooSmall, estimate_tokens, render_text
from reconcile_app.fhir.clinical import NO_KNOWN_ALLERGY_CODES, State, build_clinical_record, resources_from_bundle
from reconcile_app.reconciliation.knowledge import load_knowledge, table_rows

FHIR = Path(__file__).resolve().parent.parent / "data" / "fhir"
SNAPSHOT_AT = datetime(2026, 1, 12, 9, 30, tzinfo=timezone.utc)
TODAY = date(2026, 1, 12)
SAID = datetime(2026, 1, 5, 18, 0, tzinfo=timezone.utc)

WARFARIN = {
    "resourceType": "MedicationRequest", "id": "rx-warfarin", "status": "active", "intent": "order",
    "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "855332",
                                              "display": "warfarin sodium 5 MG Oral Tablet"}]},
    "dosageInstruction": [{"text": "1 tablet by mouth in the evening", "timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}},
                           "doseAndRate": [{"doseQuantity": {"value": 5, "unit": "mg"}}]}],
}
PENICILLIN = {
    "resourceType": "AllergyIntolerance", "id": "al-pcn", "clinicalStatus": {"coding": [{"code": "active"}]}, "criticality": "high",
    "code": {"coding": [{"system": "http://snomed.info/sct", "code": "764146007", "display": "Penicillin"}]},
    "reaction": [{"manifestation": [{"text": "Hives"}], "severity": "moderate"}, {"manifestation": [{"text": "Wheezing"}], "severity": "severe"}],
}
KIWI = {
    "resourceType": "AllergyIntolerance", "id": "al-kiwi", "clinicalStatus": {"coding": [{"code": "active"}]}, "criticality": "low",
    "code": {"text": "Kiwi fruit"},
}
REFUTED = {
    "resourceType": "AllergyIntolerance", "id": "al-sulfa-refuted", "clinicalStatus": {"coding": [{"code": "active"}]},
    "verificationStatus": {"coding": [{"code": "refuted"}]}, "code": {"text": "Sulfa drugs"},
}
CKD = {
    "resourceType": "Condition", "id": "cond-ckd", "clinicalStatus": {"coding": [{"code": "active"}]},
    "category": [{"coding": [{"code": "encounter-diagnosis"}]}],
    "code": {"coding": [{"system": "http://snomed.info/sct", "code": "433144002", "display": "Chronic kidney disease stage 3"}]},
}
CONCERN = {
    "resourceType": "Condition", "id": "cond-stress", "clinicalStatus": {"coding": [{"code": "active"}]},
    "category": [{"coding": [{"code": "health-concern"}]}], "code": {"text": "Caregiver stress"},
}
RESOLVED = {
    "resourceType": "Condition", "id": "cond-old", "clinicalStatus": {"coding": [{"code": "resolved"}]},
    "code": {"text": "Pneumonia"},
}


def _record(*resources: dict, age_birth: str = "1950-04-02"):  # type: ignore[no-untyped-def]
    patient = {"resourceType": "Patient", "id": "pt-1", "birthDate": age_birth, "gender": "female"}
    return build_clinical_record([patient, *resources])


def _part(*resources: dict, **kwargs: str):  # type: ignore[no-untyped-def]
    return record_part(_record(*resources, **kwargs), snapshot_version=3, fetched_at=SNAPSHOT_AT, today=TODAY)


def _memory(statement_attrs: dict, *, category: str = "medication", subject: str = "patient", relation: str = "",
            assertion: str = "affirmed", session: str = "s01", minutes: int = 0, content: str = "Medication") -> MemoryFacts:
    return MemoryFacts(category=category, subject=subject, subject_relation=relation, assertion=assertion, content=content,
                       quote="the patient's words", mention_time=SAID + timedelta(minutes=minutes), session_id=session,
                       session_started_at=SAID, created_at=SAID + timedelta(minutes=minutes, seconds=5), attributes=statement_attrs,
                       event_time_text="two weeks ago")


def _pack(record=None, memories=(), discrepancies=()):  # type: ignore[no-untyped-def]
    return build_pack(patient_ref="Patient/pt-1", record=record, memories=list(memories), discrepancies=list(discrepancies))


def _refs(section: list[dict]) -> set[str]:
    return {ref for line in section for ref in line["references"]}


# --- safety context ---------------------------------------------------------------------------


def test_the_pack_holds_every_active_safety_item_of_a_synthea_size_record() -> None:
    resources = resources_from_bundle(json.loads((FHIR / "large_patient.json").read_text()))
    assert len(resources) > 2000
    record = build_clinical_record(resources)
    pack = _pack(record_part(record, snapshot_version=1, fetched_at=SNAPSHOT_AT, today=TODAY))
    safety = pack["safety"]
    expected = {
        "allergies": {f"AllergyIntolerance/{e.id}" for e in record.active_allergies
                      if not any(c.code in NO_KNOWN_ALLERGY_CODES for c in e.codings)},
        "medications": {f"{e.resource_type}/{e.id}" for e in record.active_medications},
        "conditions": {f"Condition/{e.id}" for e in record.active_conditions},
    }
    assert all(expected.values())  # the fixture has some of each
    for section, refs in expected.items():
        assert _refs(safety[section]) == refs, section  # every active entry, nothing else
    for line in safety["allergies"] + safety["medications"] + safety["conditions"]:
        assert line["reference"] == line["references"][0] and line["snapshot_at"] == SNAPSHOT_AT.isoformat()
    inactive = {f"{e.resource_type}/{e.id}" for e in record.entries if e.state != State.ACTIVE}
    assert not inactive & (_refs(safety["allergies"]) | _refs(safety["medications"]) | _refs(safety["conditions"]))
    assert {a["criticality"] for a in safety["allergies"]} == {"high", "low"}
    # A statement without dosing still shows the frequency its order states.
    assert all(m["frequency"] == "once daily" for m in safety["medications"])


def test_allergies_carry_criticality_and_reactions_and_refuted_ones_are_left_out() -> None:
    safety = _pack(_part(PENICILLIN, KIWI, REFUTED))["safety"]
    pcn = next(a for a in safety["allergies"] if a["reference"] == "AllergyIntolerance/al-pcn")
    assert pcn["criticality"] == "high" and pcn["reactions"] == ["Hives", "Wheezing"] and pcn["reaction_severity"] == "severe"
    assert pcn["code"] == "SNOMED:764146007"
    assert "AllergyIntolerance/al-sulfa-refuted" not in _refs(safety["allergies"])


def test_medications_carry_dose_and_frequency() -> None:
    (med,) = _pack(_part(WARFARIN))["safety"]["medications"]
    assert (med["dose"], med["frequency"], med["instructions"]) == ("5 mg", "once daily", "1 tablet by mouth in the evening")
    assert med["reference"] == "MedicationRequest/rx-warfarin"


def test_active_conditions_of_every_category_are_kept_and_resolved_ones_are_not() -> None:
    conditions = _pack(_part(CKD, CONCERN, RESOLVED))["safety"]["conditions"]
    assert {c["reference"]: c["categories"] for c in conditions} == {
        "Condition/cond-ckd": ["encounter-diagnosis"], "Condition/cond-stress": ["health-concern"]}


def test_encounter_diagnoses_are_in_the_safety_context() -> None:
    resources = resources_from_bundle(json.loads((FHIR / "encounter_diagnosis_patient.json").read_text()))
    record = build_clinical_record(resources)
    conditions = _pack(record_part(record, snapshot_version=1, fetched_at=SNAPSHOT_AT, today=TODAY))["safety"]["conditions"]
    assert _refs(conditions) == {f"Condition/{e.id}" for e in record.active_conditions}
    assert any("encounter-diagnosis" in c["categories"] for c in conditions)


def test_a_record_without_a_snapshot_says_the_safety_context_is_unknown() -> None:
    pack = _pack(None)
    assert pack["record"] == {"available": False, "snapshot_version": None, "snapshot_at": None}
    assert "SAFETY CONTEXT UNAVAILABLE" in render_text(pack, budget=500)
    assert "Do not assume the patient has no allergies" in render_text(pack, budget=500)


# --- what not to say or suggest ---------------------------------------------------------------


def test_a_patient_on_warfarin_gets_a_do_not_suggest_nsaids_line_citing_its_interaction_row() -> None:
    lines = _pack(_part(WARFARIN))["do_not_suggest"]
    nsaid = [line for line in lines if line["avoid"] == "class:nsaid"]
    assert nsaid, [line["text"] for line in lines]
    line = nsaid[0]
    assert line["rests_on"] == ["MedicationRequest/rx-warfarin"] and line["safety_critical"]
    assert "do not suggest nsaid (e.g. ibuprofen" in line["text"] and line["text"].startswith("Patient takes warfarin")
    row = table_rows()["interactions"][line["source"]["row"]]
    assert {row["a"], row["b"]} == {line["source"]["a"], line["source"]["b"]} and row["why"] == line["why"]
    # A row of a class with itself warns against a second one, not against the drug the patient takes.
    (double,) = [line for line in lines if line["source"]["a"] == line["source"]["b"] == "class:anticoagulant"]
    assert "do not suggest another anticoagulant (e.g. warfarin" in double["text"]


def test_every_line_names_the_table_row_it_comes_from() -> None:
    lines = _pack(_part(WARFARIN, PENICILLIN, KIWI, CKD, CONCERN))["do_not_suggest"]
    tables = table_rows()
    assert lines
    for line in lines:
        source = line["source"]
        if source["table"] == "interactions":
            row = tables["interactions"][source["row"]]
            assert (row["a"], row["b"], row["source"]) == (source["a"], source["b"], source["citation"])
            assert line["avoid"] in (row["a"], row["b"])
        elif source["table"] == "allergens":
            assert tables["allergens"][source["row"]]["id"] == source["id"]
        else:  # an allergy the tables do not know rests on its record entry
            assert source == {"table": "record", "row": None, "reference": "AllergyIntolerance/al-kiwi", "citation": "the patient's record"}
        assert line["rests_on"]


def test_an_allergy_warns_against_its_cross_reactive_class_and_an_unknown_allergen_still_gets_a_line() -> None:
    lines = _pack(_part(PENICILLIN, KIWI))["do_not_suggest"]
    pcn = next(line for line in lines if line["avoid"] == "allergen:penicillin")
    assert "amoxicillin" in pcn["text"] and pcn["severity"] == "high" and "Hives, Wheezing" in pcn["because"]
    kiwi = next(line for line in lines if line["rests_on"] == ["AllergyIntolerance/al-kiwi"])
    assert "do not suggest Kiwi fruit" in kiwi["text"] and kiwi["severity"] == "medium"
    assert lines.index(pcn) < len([line for line in lines if line["source"]["table"] != "interactions"])  # allergies first


def test_conditions_and_age_derive_lines_and_a_younger_patient_gets_no_older_adult_line() -> None:
    older = _pack(_part(CKD))["do_not_suggest"]
    assert any(line["avoid"] == "class:nsaid" and line["rests_on"] == ["Condition/cond-ckd"] for line in older)
    assert any(line["source"]["b"] == "state:older_adult" and line["rests_on"] == ["Patient/pt-1"] for line in older)
    younger = _pack(_part(CKD, age_birth="1990-01-01"))["do_not_suggest"]
    assert not any("state:older_adult" in (line["source"].get("a"), line["source"].get("b")) for line in younger)


def test_labels_name_a_class_with_examples() -> None:
    assert label_for("class:anticoagulant", load_knowledge()).startswith("anticoagulant (e.g. warfarin")
    assert label_for("drug:warfarin", load_knowledge()) == "warfarin"


# --- memories and discrepancies ---------------------------------------------------------------


def test_memories_are_the_patients_affirmed_ones_grouped_by_category_newest_first() -> None:
    memories = [
        _memory({"drug": "lisinopril", "action": "stopped"}, minutes=1),
        _memory({"drug": "ibuprofen", "action": "started"}, minutes=5, session="s02"),
        _memory({"name": "knee pain"}, category="symptom", minutes=2),
        _memory({"drug": "aspirin", "action": "started"}, assertion="hypothetical", minutes=3),
        _memory({"drug": "metformin", "action": "stopped"}, assertion="negated", minutes=4),
    ]
    pack = _pack(None, memories)
    assert list(pack["memories"]) == ["medication", "symptom"]
    meds = pack["memories"]["medication"]
    assert [m["statement"] for m in meds] == ["started ibuprofen two weeks ago", "stopped lisinopril two weeks ago"]
    assert meds[0]["session"] == {"id": "s02", "started_at": SAID.isoformat()}
    assert meds[0]["event_time"]["text"] == "two weeks ago" and meds[0]["said_at"] == (SAID + timedelta(minutes=5)).isoformat()
    assert "aspirin" not in json.dumps(pack) and "metformin" not in json.dumps(pack)


def test_another_persons_fact_is_kept_apart_and_labelled_never_as_the_patients() -> None:
    pack = _pack(None, [_memory({"name": "diabetes"}, category="condition", subject="other", relation="mother"),
                        _memory({"drug": "metformin", "action": "taking"}, subject="other", relation="", minutes=1)])
    assert pack["memories"] == {}
    assert [(m["about"], m["category"], m["statement"]) for m in pack["about_others"]] == [
        ("someone else", "medication", "taking metformin two weeks ago"), ("mother", "condition", "has diabetes two weeks ago")]
    text = render_text(pack, budget=2000)
    assert "About their mother: has diabetes" in text and text.index("ABOUT OTHER PEOPLE") < text.index("About their mother")


def test_a_discrepancy_reads_in_plain_words_with_its_review_state() -> None:
    d = DiscrepancyFacts(kind="contradiction", category="medication", severity="high", safety_critical=True, status="in_review",
                         summary="Says stopped metoprolol 10 days ago · record: metoprolol tartrate 25 mg active",
                         since=SAID, updated_at=SAID)
    assert discrepancy_text(d) == ("Patient said: stopped metoprolol 10 days ago. Record: metoprolol tartrate 25 mg active. "
                                   "A nurse is reviewing it.")
    (item,) = _pack(None, discrepancies=[d])["open_discrepancies"]
    assert set(item) == {"text", "kind", "category", "severity", "safety_critical", "since"}


# --- version and text ------------------------------------------------------------------------


def test_the_version_is_stable_for_the_same_facts_and_changes_with_any_fact() -> None:
    record = _part(WARFARIN)
    memories = [_memory({"drug": "lisinopril", "action": "stopped"})]
    first, again = _pack(record, memories), _pack(record, memories)
    assert first["version"] == again["version"] == pack_version(first)
    assert first["as_of"] == SNAPSHOT_AT.isoformat()  # the newest fact: the snapshot, taken after the session
    changed = _pack(record, memories + [_memory({"drug": "ibuprofen", "action": "started"}, minutes=9)])
    assert changed["version"] != first["version"]


def test_text_puts_safety_first_and_stays_within_the_budget() -> None:
    memories = [_memory({"drug": f"drug{n}", "action": "taking"}, minutes=n) for n in range(200)]
    discrepancy = DiscrepancyFacts(kind="gap", category="allergy", severity="high", safety_critical=True, status="new",
                                   summary="Says amoxicillin caused a rash · record: not on the allergy list", since=SAID, updated_at=SAID)
    pack = _pack(_part(WARFARIN, PENICILLIN, CKD), memories, [discrepancy])
    full = render_text(pack, budget=200_000)
    order = [full.index(h) for h in ("Allergies (active)", "Medications (active)", "Conditions (active", "OPEN DISCREPANCIES",
                                     "DO NOT SAY OR SUGGEST", "ALSO AVOID SUGGESTING", "WHAT THE PATIENT TOLD US")]
    assert order == sorted(order)
    assert "Left out" not in full
    small = render_text(pack, budget=1200)
    assert estimate_tokens(small) <= 1200
    assert "Penicillin — reaction: Hives, Wheezing; criticality high [AllergyIntolerance/al-pcn]" in small
    assert "warfarin sodium 5 MG Oral Tablet — 5 mg; once daily" in small
    assert "Patient said: amoxicillin caused a rash. Record: not on the allergy list." in small
    assert "Left out to fit 1200 tokens" in small and "memories" in small.splitlines()[-1]


def test_a_budget_too_small_for_the_safety_section_is_refused_not_cut() -> None:
    pack = _pack(_part(WARFARIN, PENICILLIN, CKD))
    with pytest.raises(BudgetTooSmall) as caught:
        render_text(pack, budget=60)
    assert caught.value.needed > 60
    assert render_text(pack, budget=caught.value.needed).count("[AllergyIntolerance/al-pcn]") == 1

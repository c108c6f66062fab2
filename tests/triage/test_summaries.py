"""One-line finding summaries, concept keys and whole-sentence explanations: pure functions, no database."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone as dt_timezone

from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.triage.display import quantity_text, record_facts
from reconcile_app.triage.summaries import (
    RecordFacts,
    SaidFacts,
    complete_sentences,
    concept_key,
    finding_summary,
    patient_says,
    shorten,
)

SAID_AT = datetime(2026, 1, 15, 15, 4, tzinfo=dt_timezone.utc)
METOPROLOL = RecordFacts("MedicationRequest", "medrx-meto", "metoprolol tartrate 25 MG Oral Tablet", status="active")
WARFARIN = RecordFacts("MedicationRequest", "medrx-warf", "Warfarin Sodium 5 MG Oral Tablet", status="active")
AFIB = RecordFacts("Condition", "cond-afib", "Atrial fibrillation (disorder)", status="active")
BP = RecordFacts("Observation", "obs-bp", "Blood pressure panel with all children optional", status="final",
                 value="123/84 mmHg", date="2025-09-01T09:00:00Z")


def said(category: str, **kwargs) -> SaidFacts:  # type: ignore[no-untyped-def]
    return SaidFacts(category=category, mention_time=SAID_AT, **kwargs)


def test_a_stopped_medicine_reads_as_the_patient_said_it_and_as_the_record_has_it():
    facts = said("medication", attributes={"drug": "metoprolol", "action": "stopped"}, event_start=SAID_AT - timedelta(days=10),
                 event_time_text="a week and a half")
    assert finding_summary(kind="contradiction", category="medication", facts=facts, record=[METOPROLOL, AFIB]) == (
        "Says stopped metoprolol 10 days ago · record: metoprolol tartrate 25 mg active"
    )


def test_a_relative_time_the_patient_used_is_kept_in_their_words():
    facts = said("medication", attributes={"drug": "sertraline", "action": "stopped"}, event_time_text="About 3 weeks ago")
    assert patient_says(facts) == "Says stopped sertraline about 3 weeks ago"


def test_an_undocumented_medicine_says_what_the_record_lacks_and_what_is_relevant():
    facts = said("medication", attributes={"drug": "naproxen", "action": "taking", "source": "otc"})
    text = finding_summary(kind="gap", category="medication", facts=facts, record=[WARFARIN, AFIB])
    assert text == ("Says taking naproxen (over the counter) · record: not on the medication list "
                    "(relevant: Warfarin Sodium 5 mg, Atrial fibrillation (disorder))")


def test_a_home_reading_is_compared_with_the_last_recorded_one():
    facts = said("measurement", attributes={"kind": "blood_pressure", "value": 164, "value2": 102, "unit": "mm[Hg]", "setting": "home"})
    assert finding_summary(kind="gap", category="observation", facts=facts, record=[AFIB, BP]) == (
        "Says blood pressure 164/102 mmHg at home · record: last Blood pressure panel with all children optional 123/84 mmHg (2025-09-01)"
    )


def test_an_entry_named_by_the_memory_is_the_one_described_even_when_cited_second():
    facts = said("medication", attributes={"drug": "metformin", "action": "taking", "record_ref": "MedicationRequest/medrx-met"})
    entered_in_error = RecordFacts("MedicationRequest", "medrx-met", "24 HR Metformin hydrochloride 500 MG Extended Release Oral Tablet",
                                   status="entered-in-error")
    assert finding_summary(kind="gap", category="medication", facts=facts, record=[AFIB, entered_in_error]).endswith(
        "record: 24 HR Metformin hydrochloride 500 mg entered-in-error"
    )


def test_a_reaction_to_a_prescribed_drug_is_a_gap_in_the_allergy_list_not_the_prescription():
    facts = said("allergy", attributes={"substance": "spironolactone", "reaction": "swelling",
                                        "record_ref": "MedicationRequest/medrx-spiro"})
    spiro = RecordFacts("MedicationRequest", "medrx-spiro", "spironolactone 25 MG Oral Tablet", status="active")
    penicillin = RecordFacts("AllergyIntolerance", "pcn", "Allergy to penicillin", status="active")
    assert finding_summary(kind="gap", category="allergy", facts=facts, record=[penicillin, spiro]) == (
        "Says spironolactone caused swelling · record: not on the allergy list (relevant: Allergy to penicillin, spironolactone 25 mg)"
    )


def test_the_frequency_and_a_recent_stretch_of_time_read_naturally():
    naproxen = said("medication", attributes={"drug": "naproxen", "action": "taking", "dose_text": "2 in the morning",
                                              "frequency": "2 in the morning and 2 at night"})
    assert patient_says(naproxen) == "Says taking naproxen 2 in the morning and 2 at night"
    swelling = said("symptom", attributes={"name": "ankle swelling"}, event_time_text="the last few days")
    assert patient_says(swelling) == "Says has ankle swelling in the last few days"


def test_allergies_conditions_procedures_and_negations_read_as_sentences():
    assert patient_says(said("allergy", attributes={"substance": "spironolactone", "reaction": "swelling", "stated_status": "new"})) == (
        "Says spironolactone caused swelling"
    )
    assert patient_says(said("symptom", attributes={"name": "shortness of breath", "stated_status": "new"})) == "Says new shortness of breath"
    assert patient_says(said("condition", attributes={"name": "gout", "stated_status": "diagnosed"}, event_time_text="in March")) == (
        "Says was diagnosed with gout in March"
    )
    assert patient_says(said("procedure", attributes={"name": "colonoscopy"}, assertion="negated")) == "Says never had colonoscopy"
    assert patient_says(said("medication", attributes={"drug": "insulin", "action": "started"}, assertion="hypothetical")) == (
        "Says started insulin (considering it)"
    )


def test_another_persons_health_is_labelled_as_theirs():
    facts = said("medication", attributes={"drug": "warfarin", "action": "taking"}, subject="other", subject_relation="mother")
    assert patient_says(facts) == "About their mother: taking warfarin"


def test_a_memory_without_typed_attributes_quotes_the_patient_without_cutting_a_word():
    content = ("Weird thing, my gums bleed every time I brush now and honestly it has been going on for a while, maybe since the "
               "new pills started")
    text = patient_says(said("lifestyle", content="Lifestyle: " + content))
    assert text.startswith("Says “Weird thing, my gums bleed") and text.endswith("…”")
    assert set(text[len("Says “"):-2].split()) <= set(content.split())  # whole words only


def test_a_citation_missing_from_the_snapshot_is_said_to_be_gone():
    facts = said("medication", attributes={"drug": "metoprolol", "action": "stopped"})
    gone = RecordFacts("MedicationRequest", "medrx-meto", "metoprolol tartrate 25 MG Oral Tablet", found=False)
    assert finding_summary(kind="contradiction", category="medication", facts=facts, record=[gone]).endswith(
        "record: metoprolol tartrate 25 mg (no longer in the record)"
    )


def test_record_facts_come_from_the_snapshot_entry_with_dose_and_value():
    record = build_clinical_record([
        {"resourceType": "Observation", "id": "bp", "status": "final", "effectiveDateTime": "2025-09-01",
         "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9", "display": "Blood pressure panel"}]},
         "component": [
             {"code": {"coding": [{"system": "http://loinc.org", "code": "8462-4", "display": "Diastolic blood pressure"}]},
              "valueQuantity": {"value": 84, "unit": "mm[Hg]"}},
             {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6", "display": "Systolic blood pressure"}]},
              "valueQuantity": {"value": 123, "unit": "mm[Hg]"}},
         ]},
    ])
    entry = record.get("Observation", "bp")
    assert entry is not None and quantity_text(entry) == "123/84 mmHg"
    facts = record_facts(citation={"resourceType": "Observation", "id": "bp"}, entry=entry)
    assert (facts.value, facts.date[:10], facts.found) == ("123/84 mmHg", "2025-09-01", True)
    assert record_facts(citation={"resourceType": "Observation", "id": "x", "display": "Old"}, entry=None).found is False


def test_concept_keys_normalise_names_and_leave_unnamed_remarks_unmerged():
    assert concept_key(category="medication", attributes={"drug": "St John's Wort"}) == "medication:st john s wort"
    assert concept_key(category="symptom", attributes={"name": "Shortness of breath"}) == concept_key(
        category="condition", attributes={"name": "shortness  of breath"})
    assert concept_key(category="measurement", attributes={"kind": "blood_pressure", "value": 150}) == "measurement:blood pressure"
    assert concept_key(category="lifestyle", attributes={"name": "lifestyle", "detail": "walks the dog"}) == ""
    assert concept_key(category="medication", attributes={}) == ""


def test_an_explanation_cut_at_the_engine_cap_ends_at_its_last_whole_sentence():
    cut = ("Patient reports taking st john's wort (an undocumented medicine or supplement); the record has no entry for it. "
           "Interaction: St John's wort with an SSRI risks serotonin syndrome. Interaction: St John's wort with an antidepressant "
           "risks serotonin syndrome. Interaction: St John's wort lowers tacrolimu")
    assert len(cut) == 300
    text, was_cut = complete_sentences(cut)
    assert was_cut and text.endswith("antidepressant risks serotonin syndrome.") and "tacrolimu" not in text


def test_a_cut_that_ends_on_a_space_is_still_a_cut():
    cut = ("Patient reports taking naproxen (an undocumented medicine or supplement); the record has no entry for it. "
           "Interaction: NSAIDs with an anticoagulant raise bleeding risk. Interaction: NSAIDs with an ACE inhibitor can "
           "injure the kidneys and raise blood pressure. Interaction: NSAIDs blunt diuretics and ")
    cut = cut + " " * (300 - len(cut))
    text, was_cut = complete_sentences(cut)
    assert was_cut and text.endswith("raise blood pressure.")


def test_a_whole_explanation_is_left_as_written():
    assert complete_sentences("Record lists lisinopril as active; patient reports stopping it.") == (
        "Record lists lisinopril as active; patient reports stopping it.", False)
    assert complete_sentences("Short note without a full stop") == ("Short note without a full stop", False)


def test_shortening_never_cuts_inside_a_word():
    assert shorten("metoprolol tartrate 25 mg oral tablet", 23) == "metoprolol tartrate 25…"
    assert shorten("metoprolol tartrate 25 mg oral tablet", 22) == "metoprolol tartrate…"
    assert shorten("short", 22) == "short"

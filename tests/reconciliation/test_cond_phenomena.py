"""Condition, red-flag and immunization phenomena of issue 10, each in several voices written for this test, with the
negative twins (someone else's, negated, hypothetical, already over) that must stay quiet."""
from __future__ import annotations

import json
from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord, build_clinical_record, resources_from_bundle
from reconcile_app.narrative.types import Assertion
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.types import FindingDraft
from tests.conftest import DATA

from .conftest import memory, rules_reconciler

ENGINE = rules_reconciler()
QUEUED = ("contradiction", "gap")


def _record(base: str, *extra: dict[str, Any]) -> ClinicalRecord:
    bundle = json.loads((DATA / "fhir" / base).read_text(encoding="utf-8"))
    bundle["entry"] += [{"resource": r} for r in extra]
    return build_clinical_record(resources_from_bundle(bundle))


def _condition(cid: str, code: str, display: str) -> dict[str, Any]:
    return {"resourceType": "Condition", "id": cid, "subject": {"reference": "Patient/p1"},
            "clinicalStatus": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "active"}]},
            "code": {"coding": [{"system": "http://snomed.info/sct", "code": code, "display": display}], "text": display}}


def _med(mid: str, code: str, display: str) -> dict[str, Any]:
    return {"resourceType": "MedicationRequest", "id": mid, "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"},
            "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": code, "display": display}],
                                          "text": display}}


WARFARIN = _record("reconcile_rules_patient.json")  # warfarin, type 2 diabetes, hypertension, CKD, AF
EPISODIC = _record("reconcile_rules_patient.json", _condition("cond-gout-active", "90560007", "Gout (disorder)"),
                   _condition("cond-migraine", "37796009", "Migraine (disorder)"))
TRANSPLANT = _record("reconcile_nka_patient.json", _condition("cond-tx", "161665007", "History of renal transplant"),
                     _med("medrx-tacro", "197866", "tacrolimus 1 MG Oral Capsule"))
NO_CONTRAINDICATION = _record("reconcile_nka_patient.json")
PARKINSON = _record("reconcile_nka_patient.json", _condition("cond-pd", "49049000", "Parkinson's disease"))
HEART_FAILURE = _record("reconcile_nka_patient.json", _condition("cond-hf", "84114007", "Heart failure (disorder)"))
PREGNANT = _record("reconcile_nka_patient.json", _condition("cond-preg", "77386006", "Pregnancy"))
CLOZAPINE = _record("reconcile_nka_patient.json", _med("medrx-cloz", "197535", "clozapine 100 MG Oral Tablet"))


def judge(record: ClinicalRecord, category: str, quote: str, assertion: str = Assertion.AFFIRMED, **attributes: Any) -> FindingDraft:
    [finding] = ENGINE.reconcile([memory(category, quote, attributes=attributes, assertion=assertion)], record)
    return finding


# --- 8. a recorded condition said to be over, in informal and dialect grammar --------------------------------

@pytest.mark.parametrize(("quote", "name", "cited"), [
    ("honestly I ain't got no gout no more, not since I cut the beer", "gout", "cond-gout-active"),
    ("the gout? aint had a flare in years, my toe's been fine", "gout", "cond-gout-active"),
    ("haven't had one of them migraines for a good long while now", "migraine", "cond-migraine"),
    ("my migraines is long gone, doc", "migraine", "cond-migraine"),
    ("dont get migraines any more since menopause", "migraine", "cond-migraine"),
])
def test_a_condition_said_over_in_informal_grammar_contradicts_the_record(quote: str, name: str, cited: str) -> None:
    finding = judge(EPISODIC, "condition", quote, name=name)
    assert finding.kind == "contradiction" and finding.severity == "low" and not finding.safety_critical
    assert cited in {c.id for c in finding.citations}


@pytest.mark.parametrize(("quote", "name", "assertion"), [
    ("no migraine since Sunday, so that's good", "migraine", Assertion.NEGATED),
    ("if the gout comes back I'd call the office", "gout", Assertion.HYPOTHETICAL),
    ("the gout acts up whenever I eat shellfish", "gout", Assertion.AFFIRMED),
])
def test_a_short_break_a_conditional_or_someone_else_is_not_a_resolution(quote: str, name: str, assertion: str) -> None:
    assert judge(EPISODIC, "condition", quote, assertion, name=name).kind != "contradiction"


def test_a_pronoun_after_people_points_to_them_not_to_the_condition() -> None:
    quote = "Migraine is on my list. The nurses from the clinic were lovely, they stopped by twice"
    assert judge(EPISODIC, "condition", quote, name="migraine").kind != "contradiction"


# --- 9. red flags in lay words -----------------------------------------------------------------------------

@pytest.mark.parametrize(("record", "quote", "flag"), [
    (WARFARIN, "my poop's been real dark lately, kinda almost black honestly", "redflag-gi-bleed"),
    (WARFARIN, "bonked my head on the kitchen cabinet getting a mug", "redflag-head-injury"),
    (WARFARIN, "lost my footing on the porch steps and landed on my head", "redflag-head-injury"),
    (WARFARIN, "got a blister on the bottom of my left foot that just won't close up", "redflag-diabetic-foot"),
    (WARFARIN, "dropping weight and I'm not even trying, belt's on the last hole", "redflag-weight-loss-unintended"),
    (PARKINSON, "at night I see a little dog by the bed that isn't really there", "redflag-hallucinations"),
    (HEART_FAILURE, "scale showed 3 more lbs than yesterday, socks leave dents", "redflag-heart-failure-fluid-gain"),
    (CLOZAPINE, "been hot then shivery since lunch, feel awful", "redflag-fever-on-immunosuppressant"),
])
def test_a_red_flag_in_lay_words_reaches_the_queue(record: ClinicalRecord, quote: str, flag: str) -> None:
    finding = judge(record, "symptom", quote)
    assert finding.kind == "gap" and finding.rule.startswith(flag), finding.rule
    assert finding.safety_critical or finding.severity != "low"


@pytest.mark.parametrize(("record", "quote"), [
    (WARFARIN, "my chest don't hurt no more since the new pills"),
    (WARFARIN, "my dad's been seeing people in the hallway that aren't there"),
    (PARKINSON, "my neighbour always sees things that aren't there, poor guy"),
    (WARFARIN, "no blood in my poop, it's all normal brown"),
])
def test_negated_or_someone_elses_signs_stay_quiet(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


def test_a_sign_beside_an_unremarkable_number_is_still_read() -> None:
    finding = judge(PREGNANT, "measurement", "can't keep a thing down, down 7 pounds this week", name="weight")
    assert finding.kind == "gap" and finding.safety_critical


# --- 1. a committed plan of a live vaccine the record contraindicates ---------------------------------------

@pytest.mark.parametrize("quote", [
    "booked the travel nurse for thursday, she said I'll need yellow fever before the trip",
    "pharmacist says I'm due for an MMR booster so I'm getting it on saturday",
    "gonna do the flu nasal spray at the work clinic tomorrow, hate needles",
])
def test_a_planned_live_vaccine_on_immunosuppression_is_a_safety_gap(quote: str) -> None:
    finding = judge(TRANSPLANT, "immunization", quote, Assertion.HYPOTHETICAL, name="vaccine")
    assert finding.kind == "gap" and finding.safety_critical and finding.rule == "vaccine-planned-live"
    assert "medrx-tacro" in {c.id for c in finding.citations}


@pytest.mark.parametrize(("record", "quote"), [
    (TRANSPLANT, "if we ever go to Brazil I suppose I'd need yellow fever"),
    (TRANSPLANT, "maybe one day I'll get the MMR, who knows"),
    (TRANSPLANT, "getting my regular flu shot next week at the pharmacy"),
    (NO_CONTRAINDICATION, "booked the yellow fever shot for next tuesday"),
])
def test_a_conditional_a_non_live_vaccine_or_no_contraindication_stays_quiet(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "immunization", quote, Assertion.HYPOTHETICAL, name="vaccine").kind not in QUEUED


# --- 7. a recorded allergy disowned or tolerated, and the counterfactual that stays quiet --------------------

@pytest.mark.parametrize("quote", [
    "oh the penicillin one on there isn't mine, my twin brother is the allergic one",
    "that penicillin allergy belongs to my ex-wife, the clinic merged our files",
])
def test_a_disowned_allergy_said_as_chatter_contradicts_the_record(quote: str) -> None:
    finding = judge(WARFARIN, "lifestyle", quote)
    assert finding.kind == "contradiction" and finding.rule == "allergy-not-the-patients"
    assert "allergy-penicillin" in {c.id for c in finding.citations}


@pytest.mark.parametrize("quote", [
    "if a doctor ever gave me penicillin I'd probably swell right up",
    "if I took amoxicillin I might break out like last time",
])
def test_a_counterfactual_exposure_is_not_a_new_exposure(quote: str) -> None:
    assert judge(WARFARIN, "allergy", quote, substance="penicillin").kind not in QUEUED


# --- 10. a weight compared with one taken on a weekday is a change within the week --------------------------

@pytest.mark.parametrize(("quote", "attributes"), [
    ("scale says 99 kg today, it was 96.5 on sunday", {"kind": "weight", "value": 99, "unit": "kg", "baseline": 96.5}),
    ("212 this morning, I was 206 since last tuesday", {"kind": "weight", "value": 212, "unit": "[lb_av]", "baseline": 206}),
])
def test_a_weekday_baseline_makes_a_fast_gain(quote: str, attributes: dict[str, Any]) -> None:
    finding = judge(HEART_FAILURE, "measurement", quote, **attributes)
    assert finding.kind == "gap" and finding.rule == "reading-weight-rapid-gain" and finding.safety_critical


def test_a_small_change_since_a_weekday_stays_in_range() -> None:
    finding = judge(HEART_FAILURE, "measurement", "scale says 96 kg today, it was 95.5 on sunday",
                    kind="weight", value=96, unit="kg", baseline=95.5)
    assert finding.kind not in QUEUED


# --- 1. a committed plan against the care plan's limits; a deferred or conditional one stays quiet ------------

ALTITUDE_PLAN = _record("reconcile_rules_patient.json", {
    "resourceType": "CarePlan", "id": "cp-altitude", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p1"},
    "activity": [{"detail": {"status": "in-progress", "description": "Stay below 8,000 feet of altitude; no ladders or roof work."}}]})


@pytest.mark.parametrize(("category", "quote"), [
    ("lifestyle", "signed up for a hut-to-hut trek next month, the passes top out at 11,200 feet"),
    ("lifestyle", "gonna climb up and re-shingle the garage roof on saturday with my nephew"),
])
def test_a_committed_plan_the_care_plan_forbids_is_a_contradiction(category: str, quote: str) -> None:
    finding = judge(ALTITUDE_PLAN, category, quote, Assertion.HYPOTHETICAL)
    assert finding.kind == "contradiction" and finding.rule.endswith("+planned")
    assert "cp-altitude" in {c.id for c in finding.citations}


@pytest.mark.parametrize("quote", [
    "signed up for a trek at 11,200 feet next month, but I'll run it by my cardiologist first",
    "if the weather holds maybe we'd hike somewhere above 10,000 feet someday",
])
def test_a_deferred_or_conditional_plan_stays_hypothetical(quote: str) -> None:
    assert judge(ALTITUDE_PLAN, "lifestyle", quote, Assertion.HYPOTHETICAL).kind not in QUEUED


# --- 3. 'they stopped' after a condition: the complaint ended, or someone stopped a thing ---------------------

@pytest.mark.parametrize("quote", [
    "The chart still has migraine on it. Honestly they just stopped on their own a couple years back",
    "Migraine is on my list. They quit completely after I had my youngest",
])
def test_an_intransitive_stop_after_the_condition_is_its_resolution(quote: str) -> None:
    assert judge(EPISODIC, "condition", quote, name="migraine").kind == "contradiction"


@pytest.mark.parametrize("quote", [
    "Migraine is on my list. They stopped sumatriptan at the neuro visit though",
    "Migraine is on my list. They stopped metformin last spring instead",
])
def test_a_stop_with_an_object_is_someone_stopping_a_thing(quote: str) -> None:
    assert judge(EPISODIC, "condition", quote, name="migraine").kind != "contradiction"


# --- a person's possessive after a locative preposition is a place (the local genitive) -------------------------

@pytest.mark.parametrize("quote", [
    "I stepped on the scale over at my aunt's place and it said 96 kg, was 91.5 on sunday",
    "I weighed myself at my son's house, 96 kg, and it was 91.5 on sunday at home",
])
def test_a_reading_taken_at_someone_elses_house_is_the_patients(quote: str) -> None:
    finding = ENGINE.reconcile([memory("measurement", quote, subject="other",
                                       attributes={"kind": "weight", "value": 96, "unit": "kg", "baseline": 91.5})], HEART_FAILURE)[0]
    assert finding.kind == "gap"


def test_another_persons_reading_stays_theirs() -> None:
    finding = ENGINE.reconcile([memory("measurement", "my aunt's scale said she was 96 kg, up from 91.5 on sunday", subject="other",
                                       attributes={"kind": "weight", "value": 96, "unit": "kg", "baseline": 91.5})], HEART_FAILURE)[0]
    assert finding.kind not in QUEUED


# --- a sign recalled as shared history in chatter; fever on dialysis ------------------------------------------

@pytest.mark.parametrize("quote", [
    "remember when I kept throwing up all day every day? that's so over now",
    "you know how early on I could not keep anything down, totally different now",
])
def test_a_sign_recalled_as_history_in_chatter_is_no_new_red_flag(quote: str) -> None:
    assert judge(PREGNANT, "lifestyle", quote).kind not in QUEUED


def test_the_same_sign_reported_now_still_flags() -> None:
    assert judge(PREGNANT, "lifestyle", "I can't keep anything down since Tuesday, not even water").kind == "gap"


def test_fever_in_a_dialysis_patient_is_safety_critical() -> None:
    dialysis = _record("reconcile_nka_patient.json", _condition("cond-esrd", "46177005", "End-stage renal disease (disorder)"))
    finding = judge(dialysis, "symptom", "got the shakes and chills after my run on the machine, felt feverish all night")
    assert finding.kind == "gap" and finding.safety_critical and "cond-esrd" in {c.id for c in finding.citations}


# --- the patient measured with another person's help or device --------------------------------------------------

NO_DIABETES = _record("reconcile_nka_patient.json")


@pytest.mark.parametrize("quote", [
    "my aunt is diabetic so she had me prick my finger on her meter after lunch and it read 268",
    "my brother made me try his meter since I've been so thirsty, 259 two hours after pizza",
])
def test_a_reading_taken_on_the_patient_with_someone_elses_meter_is_the_patients(quote: str) -> None:
    finding = ENGINE.reconcile([memory("measurement", quote, subject="other",
                                       attributes={"kind": "glucose", "value": 268, "unit": "mg/dL"})], NO_DIABETES)[0]
    assert finding.kind == "gap"


@pytest.mark.parametrize("quote", [
    "my aunt had me check her sugar on her meter and she was 268",
    "I pricked my mom's finger for her, her sugar read 268",
])
def test_a_reading_of_the_other_person_stays_theirs(quote: str) -> None:
    finding = ENGINE.reconcile([memory("measurement", quote, subject="other",
                                       attributes={"kind": "glucose", "value": 268, "unit": "mg/dL"})], NO_DIABETES)[0]
    assert finding.kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "if my ferritin is still low in june I'm gonna ask about the iron infusion instead of tablets",
    "if the cough hangs on I will ask about azithromycin",
])
def test_a_conditional_plan_names_no_new_reaction(quote: str) -> None:
    assert judge(NO_DIABETES, "allergy", quote, substance="iron").kind not in QUEUED


@pytest.mark.parametrize(("quote", "queued"), [
    ("my iron, it's always on the low side", False),
    ("I'm allergic to shellfish, found out at a wedding", True),
    ("iron tablets make me sick to my stomach every time", True),
])
def test_a_substance_named_without_any_reaction_is_no_allergy_gap(quote: str, queued: bool) -> None:
    substance = "iron" if "iron" in quote else "shellfish"
    assert (judge(NO_DIABETES, "allergy", quote, substance=substance).kind in QUEUED) is queued


# --- the end of an episode is not the end of a chronic, relapsing condition ------------------------------------

@pytest.mark.parametrize(("quote", "name"), [
    ("the gout flare-up is finally over, I can get my shoe on again", "gout"),
    ("that migraine episode passed after I slept it off", "migraine"),
])
def test_an_episode_that_ended_does_not_contradict_the_condition(quote: str, name: str) -> None:
    assert judge(EPISODIC, "condition", quote, name=name).kind != "contradiction"


def test_an_episode_word_inside_a_long_absence_is_still_a_resolution() -> None:
    quote = "gout's a thing of the past, haven't had one attack for several years"
    assert judge(EPISODIC, "condition", quote, name="gout").kind == "contradiction"


# --- a test result that names a new diagnosis ----------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "the DEXA at the women's clinic showed I have osteoporosis now, T-score minus 2.7",
    "my bone density test came back and it says I'm in osteoporosis range now",
])
def test_a_test_result_naming_a_new_diagnosis_is_a_gap(quote: str) -> None:
    finding = judge(NO_DIABETES, "condition", quote, name="osteoporosis")
    assert finding.kind == "gap" and finding.rule == "condition-outside-diagnosis"



@pytest.mark.parametrize("quote", ["my sick headaches are long gone, doc", "the migrane thing? dont get them no more"])
def test_lay_names_and_misspellings_of_a_recorded_condition_are_read(quote: str) -> None:
    assert judge(EPISODIC, "condition", quote, name="migraine").kind == "contradiction"


@pytest.mark.parametrize(("record", "quote", "flag"), [
    (NO_DIABETES, "ngl some nights i wanna unalive myself", "redflag-suicidal"),
    (NO_DIABETES, "thinking abt kms lately tbh", "redflag-suicidal"),
    (WARFARIN, "pooped out bright red blood this morning, scared me", "redflag-gi-bleed"),
])
def test_red_flags_in_internet_slang_and_crude_words(record: ClinicalRecord, quote: str, flag: str) -> None:
    finding = judge(record, "symptom", quote)
    assert finding.kind == "gap" and finding.rule.startswith(flag) and finding.safety_critical


# a slang word only mentioned ("a video said kms") still flags: the use/mention distinction is left to a person, so
# that suicidal ideation keeps its recall
@pytest.mark.parametrize("quote", ["my cousin posted about wanting to unalive himself and I called her mom"])
def test_slang_about_someone_else_is_not_the_patients(quote: str) -> None:
    assert judge(NO_DIABETES, "symptom", quote).kind not in QUEUED


# --- a sign graded by a comparative of decrease is easing, not new; self-harm words are kept however graded ---------

@pytest.mark.parametrize(("record", "quote", "twin"), [
    (HEART_FAILURE, "I get less short of breath on the stairs these days", "I get more short of breath on the stairs these days"),
    (NO_DIABETES, "I'm not as confused in the evenings as I was", "I've been getting confused in the evenings"),
])
def test_a_sign_said_to_be_lessening_is_not_a_new_red_flag(record: ClinicalRecord, quote: str, twin: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED
    flagged = judge(record, "symptom", twin)
    assert flagged.kind == "gap" and flagged.rule.startswith("redflag-")


def test_self_harm_words_are_kept_even_after_a_comparative_of_decrease() -> None:
    finding = judge(NO_DIABETES, "symptom", "I feel less hopeless than I did but I still think about ending it all")
    assert finding.kind == "gap" and finding.rule.startswith("redflag-suicidal") and finding.safety_critical


@pytest.mark.parametrize(("quote", "queued"), [
    ("a lot less foggy at the office these days", False),
    ("so foggy at the office these days", True),
    ("less tired but so foggy at the office these days", True),
])
def test_a_lay_word_the_extractor_named_is_graded_by_the_patients_comparative(quote: str, queued: bool) -> None:
    finding = judge(NO_DIABETES, "symptom", quote, name="confusion")
    assert (finding.kind in QUEUED) is queued
    if queued:
        assert finding.rule.startswith("redflag-confusion")


# --- 'hopeless' as a verdict on a skill or a device is not hopelessness; every other wording stays a self-harm flag ---

@pytest.mark.parametrize("quote", ["the printer at the library is hopeless, I gave up", "honestly I'm hopeless at crosswords"])
def test_hopeless_about_a_thing_or_a_skill_is_no_self_harm_flag(quote: str) -> None:
    assert not judge(NO_DIABETES, "symptom", quote).rule.startswith("redflag-suicidal")


@pytest.mark.parametrize("quote", [
    "honestly I feel hopeless about everything lately",
    "I'm hopeless at life and I don't want to wake up",
    "the printer is hopeless and some days I wish I were dead",
    "the weather is hopeless, and I feel hopeless too",
])
def test_hopelessness_about_oneself_or_the_future_keeps_the_flag(quote: str) -> None:
    finding = judge(NO_DIABETES, "symptom", quote)
    assert finding.kind == "gap" and finding.rule.startswith("redflag-suicidal") and finding.safety_critical

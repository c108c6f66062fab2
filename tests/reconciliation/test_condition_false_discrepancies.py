"""False discrepancies of the condition, red-flag and care-plan rules, by phenomenon: a dated past event retold, a
disease named as a claimed risk, a stop with an object, a past habit, an idiom, a word shared with a plan's instruction
that names no activity; each with the near miss that must still reach the queue."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord, build_clinical_record, resources_from_bundle
from reconcile_app.narrative.types import EventTime
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.types import FindingDraft

from .conftest import memory, rules_reconciler

ENGINE = rules_reconciler()
QUEUED = ("contradiction", "gap")


def judge(record: ClinicalRecord, category: str, quote: str, **attributes: Any) -> FindingDraft:
    [finding] = ENGINE.reconcile([memory(category, quote, attributes=attributes)], record)
    return finding


# --- a dated past event is a retold history (the record's gout is resolved; the session is in January 2026) -------

@pytest.mark.parametrize("quote", [
    "I had a bad gout attack back in 2019, my big toe was huge",
    "In March 2023 the gout put me on the couch for a week",
    "My first gout flare was in the summer of 2021",
])
def test_a_dated_past_episode_the_record_holds_agrees(record: ClinicalRecord, quote: str) -> None:
    finding = judge(record, "condition", quote, name="gout")
    assert finding.kind not in QUEUED
    assert "cond-gout" in {c.id for c in finding.citations}


@pytest.mark.parametrize("quote", [
    "my gout flared up again this week, the toe is red and hot",
    "I've had gout since 2019 and it's acting up again",
])
def test_a_recurrence_said_about_now_is_still_a_gap(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "condition", quote, name="gout").kind == "gap"


@pytest.mark.parametrize("quote", [
    "Back in May 2022 I was passing black stools and they kept me two nights",
    "in 2019 I passed out in the shower and hit my head",
])
def test_a_red_flag_in_a_dated_past_story_is_not_a_new_red_flag(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "my stools have been black and sticky since the weekend",
    "I passed out in the kitchen on Saturday",
])
def test_the_same_red_flag_said_about_now_is_a_safety_gap(record: ClinicalRecord, quote: str) -> None:
    finding = judge(record, "symptom", quote)
    assert (finding.kind, finding.safety_critical) == ("gap", True)


@pytest.mark.parametrize("quote", [
    "Years ago, I passed out cold at my cousin's wedding",
    "When I was a teenager I had two seizures, none since",
    "back when i worked nights i threw up blood a couple times",
    "In twenty seventeen I passed out in the shower",
    "As a kid I fainted every time they drew blood",
])
def test_a_red_flag_set_in_an_earlier_period_of_life_is_not_a_new_red_flag(record: ClinicalRecord, quote: str) -> None:
    # ConText historical temporality without a calendar year: a relative past, a life stage, a spoken year
    assert judge(record, "symptom", quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "Years ago I passed out once, and it happened again last night",
    "When I was a kid I had seizures and now I had one yesterday",
])
def test_a_red_flag_recalled_from_long_ago_and_said_again_now_is_still_a_safety_gap(record: ClinicalRecord, quote: str) -> None:
    finding = judge(record, "symptom", quote)
    assert (finding.kind, finding.safety_critical) == ("gap", True)


@pytest.mark.parametrize("category", ["symptom", "lifestyle"])
@pytest.mark.parametrize("quote", [
    "a fella at the lodge says those pressure pills make your pressure drop so low you black out",
    "my cousin swears the blood thinner gives you black stools",
])
def test_a_sign_claimed_as_what_a_drug_does_to_people_is_not_the_patients_red_flag(record: ClinicalRecord, category: str,
                                                                                   quote: str) -> None:
    # generic 'you' in a claimed effect, often hearsay: ConText hearsay, not the patient's sign
    assert judge(record, category, quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "the new pressure pill makes my pressure drop so low I blacked out yesterday",
    "those pills make your head spin, and I blacked out in the kitchen this morning",
])
def test_the_same_sign_said_of_the_patient_is_still_a_safety_gap(record: ClinicalRecord, quote: str) -> None:
    finding = judge(record, "symptom", quote)
    assert (finding.kind, finding.safety_critical) == ("gap", True)


def test_a_pregnancy_that_sets_a_past_story_is_no_pregnancy_now(record: ClinicalRecord) -> None:
    assert judge(record, "symptom", "Once, while I was pregnant with my oldest, I got dizzy in a checkout line").rule != "pregnancy-undocumented"
    # twin: the same words with a pregnancy of today
    assert judge(record, "condition", "I was so dizzy when I found out I'm pregnant again", name="pregnancy").rule.startswith("pregnancy")


def test_a_large_number_that_is_not_a_year_dates_nothing(record: ClinicalRecord) -> None:
    finding = judge(record, "symptom", "I walked 2000 steps and then my stools were black as tar")
    assert finding.kind == "gap"


# --- a disease named as a claimed risk is not a diagnosis -----------------------------------------------------------

@pytest.mark.parametrize(("quote", "name"), [
    ("a man on the radio said those acid pills give you dementia", "dementia"),
    ("somebody posted that the diabetes pill causes cancer", "cancer"),
    ("my neighbor read that statins are linked to liver disease", "liver disease"),
    ("they say too much salt raises the risk of a stroke", "stroke"),
])
def test_a_disease_said_as_a_claimed_harm_is_not_a_diagnosis(record: ClinicalRecord, quote: str, name: str) -> None:
    assert judge(record, "condition", quote, name=name).kind not in QUEUED


@pytest.mark.parametrize(("quote", "name"), [
    ("the oncologist told me I have cancer, it's in the colon", "cancer"),
    ("the doctor diagnosed me with liver disease last month", "liver disease"),
])
def test_a_diagnosis_the_patient_was_given_is_still_a_gap(record: ClinicalRecord, quote: str, name: str) -> None:
    assert judge(record, "condition", quote, name=name).kind == "gap"


# --- a stop with an object is someone stopping a thing, not a complaint that stopped ----------------------------------

@pytest.mark.parametrize("quote", [
    "My asthma was rough in April and they stopped the prednisone after a week.",
    "The asthma doctor was nice, she stopped my old inhaler and gave me a new one.",
])
def test_stopping_a_medicine_does_not_say_the_condition_is_gone(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "condition", quote, name="asthma").kind != "contradiction"


def test_a_condition_said_to_have_stopped_by_itself_is_still_read_as_resolved(record: ClinicalRecord) -> None:
    finding = judge(record, "condition", "The asthma attacks, they stopped. Not one in two years.", name="asthma")
    assert finding.kind == "contradiction"


# --- past habits and idioms in chatter ------------------------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "I used to pass out at parties in college, wild times",
    "used to faint at the sight of blood as a kid",
])
def test_a_past_habit_in_chatter_is_no_red_flag(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "lifestyle", quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "I just scroll on my phone until I pass out",
    "we watched movies till we passed out on the couch",
])
def test_falling_asleep_said_as_passing_out_is_no_syncope(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


def test_passing_out_after_standing_up_is_syncope(record: ClinicalRecord) -> None:
    finding = judge(record, "symptom", "I stood up from the couch and passed out cold")
    assert (finding.kind, finding.safety_critical) == ("gap", True)


# --- a care-plan lapse must name the plan's activity ------------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "I stopped the morning walks with the dog when it got icy",
    "I quit going to the gym a week ago, too busy at home",
    "we stopped at the diner before the game",
])
def test_a_word_like_morning_or_week_shared_with_a_plan_names_no_lapse(record: ClinicalRecord, quote: str) -> None:
    finding = judge(record, "care_activity", quote, action="stopped")
    assert finding.rule != "careplan-activity-lapse"


def test_stopping_the_activity_the_plan_asks_for_is_a_lapse(record: ClinicalRecord) -> None:
    finding = judge(record, "care_activity", "I stopped checking my blood glucose at home, the strips ran out", action="stopped")
    assert finding.kind == "contradiction"
    assert "careplan-diabetes" in {c.id for c in finding.citations}


# --- 'running around' is literal around a place, an idiom when busy ----------------------------------------------------

def test_running_around_a_place_is_the_running_a_plan_forbids(record: ClinicalRecord) -> None:
    finding = judge(record, "care_activity", "I've been going running around the lake before work, three miles")
    assert finding.kind == "contradiction"
    assert "careplan-knee" in {c.id for c in finding.citations}


@pytest.mark.parametrize("quote", [
    "I'm running around after the grandkids all day",
    "I've been running around like crazy with the move",
])
def test_running_around_when_busy_is_not_running(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "care_activity", quote).kind not in QUEUED


# --- an event the time is counted from is past -----------------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "it's been three years since the gout and I still watch the beer",
    "ever since my gout I don't eat much red meat",
])
def test_a_condition_the_time_is_counted_from_is_a_past_event(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "condition", quote, name="gout").kind not in QUEUED


# --- 'low sugar' before a food is a label, not a low blood sugar -------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "my wife baked the low sugar cookies for the party",
    "I found a low-sugar granola at the store",
])
def test_a_low_sugar_food_is_no_hypoglycemia(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


def test_a_low_sugar_with_sweats_is_hypoglycemia(record: ClinicalRecord) -> None:
    finding = judge(record, "symptom", "had a low sugar last night, all sweaty and shaky")
    assert (finding.kind, finding.safety_critical) == ("gap", True)


# --- a denial of having reaches the end of its clause ---------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "I haven't had one bit of that chest pain since the new pills",
    "never once felt any of that chest pressure on my walks",
])
def test_a_denial_of_having_a_red_flag_is_no_red_flag(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "I didn't tell my wife about the chest pain on the stairs",
    "I hadn't been sleeping, but now the chest pain wakes me up",
])
def test_not_telling_or_a_denial_in_another_clause_keeps_the_red_flag(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind == "gap"


# --- a restriction counted at zero is kept ---------------------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "not a single beer since new year's, proud of that",
    "no more whiskey at night, two months now",
])
def test_a_restriction_counted_at_zero_is_kept(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "lifestyle", quote).rule != "careplan-restriction"


# --- a procedure retold without a date of its own is the record's -----------------------------------------------------

@pytest.mark.parametrize("quote", [
    "back when they did the colonoscopy I was so nervous about the prep",
    "the first time they scoped me with the colonoscopy I slept right through it",
])
def test_a_retold_procedure_the_record_holds_is_no_outside_procedure(record: ClinicalRecord, quote: str) -> None:
    finding = judge(record, "procedure", quote, name="colonoscopy")
    assert finding.kind not in QUEUED


def test_another_one_is_a_new_procedure(record: ClinicalRecord) -> None:
    finding = judge(record, "procedure", "they did another colonoscopy at the hospital, found two polyps", name="colonoscopy")
    assert finding.kind == "gap"



def _small_record(*resources: dict) -> ClinicalRecord:
    """A record of a few resources written for these tests."""
    patient = {"resourceType": "Patient", "id": "pt-small", "gender": "male", "birthDate": "1950-01-01"}
    bundle = {"resourceType": "Bundle", "type": "collection", "entry": [{"resource": r} for r in (patient, *resources)]}
    return build_clinical_record(resources_from_bundle(bundle))


_COPD = {"resourceType": "Condition", "id": "cond-copd", "subject": {"reference": "Patient/pt-small"},
         "clinicalStatus": {"coding": [{"code": "active"}]}, "code": {"text": "Chronic obstructive lung disease"}}
_PLAN = {"resourceType": "CarePlan", "id": "plan-copd", "status": "active", "intent": "plan", "title": "COPD action plan",
         "subject": {"reference": "Patient/pt-small"}, "addresses": [{"reference": "Condition/cond-copd"}],
         "activity": [{"detail": {"status": "in-progress", "description":
                                  "Call the clinic for a fever or a change in phlegm colour; use the rescue inhaler as needed."}},
                      {"detail": {"status": "in-progress", "description":
                                  "Chest pain or pressure: stop, rest and use the nitroglycerin spray."}}]}
_PCI = {"resourceType": "Procedure", "id": "proc-pci", "status": "completed", "subject": {"reference": "Patient/pt-small"},
        "code": {"text": "Percutaneous coronary intervention"}, "performedDateTime": "2025-07-14"}


@pytest.mark.parametrize("quote", [
    "no fever and no colored phlegm all month, knock on wood",
    "haven't had any chest pain at all, not even walking up the hill",
])
def test_a_denied_symptom_is_no_lapse_of_a_plan_that_names_it(quote: str) -> None:
    finding = judge(_small_record(_COPD, _PLAN), "care_activity", quote, action="stopped")
    assert finding.kind != "contradiction"


def test_stopping_the_rescue_inhaler_the_plan_names_is_still_a_lapse() -> None:
    finding = judge(_small_record(_COPD, _PLAN), "care_activity", "I stopped using the rescue inhaler, it shakes me", action="stopped")
    assert finding.kind == "contradiction"


def test_a_procedure_in_a_stated_period_that_holds_the_recorded_date_is_the_recorded_one() -> None:
    m = memory("procedure", "they put the stents in, scary stuff", attributes={"name": "stent"})
    m = dataclasses.replace(m, event_time=EventTime(text="last year", start=datetime(2025, 1, 1, tzinfo=timezone.utc),
                                                   end=datetime(2025, 12, 31, tzinfo=timezone.utc)))
    [finding] = ENGINE.reconcile([m], _small_record(_PCI))
    assert finding.kind not in QUEUED


# --- 'drink it every day': the pronoun is the drink named before, not alcohol -------------------------------------------

@pytest.mark.parametrize("quote", [
    "my sister makes a ginger tea and I drink it every day now",
    "the clinic said water is best so I drink that every day",
])
def test_drinking_a_named_non_alcoholic_drink_daily_is_not_heavy_drinking(nka_record: ClinicalRecord, quote: str) -> None:
    assert judge(nka_record, "lifestyle", quote).rule != "alcohol-status-contradicted"


def test_drinking_wine_every_night_contradicts_no_alcohol_use(nka_record: ClinicalRecord) -> None:
    assert judge(nka_record, "lifestyle", "I've been drinking wine every night since the layoff").rule == "alcohol-status-contradicted"


# --- the standing state of a known condition, and a complaint already easing ----------------------------------------

@pytest.mark.parametrize("quote", [
    "I get so winded on the stairs, that's the asthma for you",
    "we walk the dog but I get short of breath on the big hill",
    "a bit winded on the stairs at work, but it improved after the first week",
])
def test_a_known_conditions_baseline_or_an_easing_complaint_is_no_red_flag(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "I get winded on the stairs quicker than I did last month",
    "I'm short of breath walking to the mailbox lately",
    "I get short of breath even sitting in my chair",
])
def test_a_change_in_breathing_is_still_a_red_flag(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind == "gap"


# --- home oximeter readings against the COPD target ------------------------------------------------------------------

def test_the_lowest_of_several_home_saturations_decides() -> None:
    record = _small_record(_COPD, _PLAN)
    m = memory("measurement", "the finger oxygen gadget says 85 or 86 on the stairs and 93 resting",
               attributes={"kind": "spo2", "value": 85, "values": [85, 86, 93], "unit": "%"})
    [finding] = ENGINE.reconcile([m], record)
    assert (finding.kind, finding.severity, finding.safety_critical) == ("gap", "high", True)
    assert "cond-copd" in {c.id for c in finding.citations}


def test_saturations_inside_the_copd_target_are_not_a_finding() -> None:
    record = _small_record(_COPD, _PLAN)
    m = memory("measurement", "the finger oxygen gadget says 89 or 90 on the stairs and 93 resting",
               attributes={"kind": "spo2", "value": 89, "values": [89, 90, 93], "unit": "%"})
    [finding] = ENGINE.reconcile([m], record)
    assert finding.kind not in QUEUED


def test_the_habitual_frame_governs_the_extractors_name_for_the_symptom(record: ClinicalRecord) -> None:
    finding = judge(record, "symptom", "I get so out of breath I mostly sit on the couch now", name="shortness of breath")
    assert finding.kind == "gap"  # 'now': a change
    finding = judge(record, "symptom", "I get so out of breath, it's the asthma, always has been", name="shortness of breath")
    assert finding.kind not in QUEUED


# --- a program that ran its course is completed, not abandoned -------------------------------------------------------

@pytest.mark.parametrize(("quote", "queued"), [
    ("cardiac rehab ended in the fall and I kind of stopped moving", False),
    ("I finished cardiac rehab in May, all twelve weeks, then slacked off", False),
    ("I quit cardiac rehab after two sessions, too far to drive", True),
])
def test_a_finished_rehab_is_not_an_abandoned_one(quote: str, queued: bool) -> None:
    mi = {"resourceType": "Condition", "id": "cond-mi", "subject": {"reference": "Patient/pt-small"},
          "clinicalStatus": {"coding": [{"code": "active"}]}, "code": {"text": "Myocardial infarction"}}
    plan = {"resourceType": "CarePlan", "id": "plan-rehab", "status": "active", "intent": "plan", "title": "After the heart attack",
            "subject": {"reference": "Patient/pt-small"}, "addresses": [{"reference": "Condition/cond-mi"}],
            "activity": [{"detail": {"status": "in-progress", "description": "Attend cardiac rehab three times a week."}}]}
    finding = judge(_small_record(mi, plan), "care_activity", quote, name="cardiac rehab", action="stopped")
    assert (finding.kind == "contradiction") is queued


# --- the nearest subject governs: a third person's sign is theirs ---------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "I told him that's nonsense, and that's why he passed out at the bus stop",
    "my neighbor told me she passed out at church",
    "she had black stools after the iron, my sister I mean",
])
def test_a_sign_whose_nearest_subject_is_a_third_person_is_theirs(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind not in QUEUED


@pytest.mark.parametrize("quote", [
    "they said my stools were black as tar",
    "the nurse said I passed out for a minute",
    "she noticed I passed out on the porch",
])
def test_a_sign_said_about_me_by_someone_else_stays_mine(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "symptom", quote).kind == "gap"


# --- peak flows counted as a percent of the personal best (NAEPP zones) ------------------------------------------------

@pytest.mark.parametrize(("values", "best", "expected"), [
    ([300, 290, 310], 430, ("gap", "medium")),   # about 70%: yellow zone
    ([200, 190], 430, ("gap", "high")),          # under 50%: red zone
    ([400, 410], 430, None),                     # over 90%: green
])
def test_peak_flows_are_read_against_the_personal_best(record: ClinicalRecord, values: list[float], best: float,
                                                        expected: tuple[str, str] | None) -> None:
    m = memory("measurement", "the blow tube readings this week", attributes={"kind": "peak_flow", "value": min(values),
                                                                               "values": values, "baseline": best, "unit": "L/min"})
    [finding] = ENGINE.reconcile([m], record)
    if expected is None:
        assert finding.kind not in QUEUED
    else:
        assert (finding.kind, finding.severity) == expected
        assert "cond-asthma" in {c.id for c in finding.citations}


# --- someone else's clinician names someone else's condition ---------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "my son started a pill for ADHD and his doctor said the poor appetite is normal",
    "my daughter's doctor said it was ADHD, so she started the medicine",
])
def test_a_diagnosis_from_someone_elses_clinician_is_not_the_patients(record: ClinicalRecord, quote: str) -> None:
    assert judge(record, "condition", quote, name="adhd", term="adhd").kind not in QUEUED


def test_a_diagnosis_from_my_own_doctor_is_still_a_gap(record: ClinicalRecord) -> None:
    assert judge(record, "condition", "my doctor said it's ADHD and started me on a pill", name="adhd", term="adhd").kind == "gap"

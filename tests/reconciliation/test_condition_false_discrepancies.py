"""False discrepancies of the condition, red-flag and care-plan rules, by phenomenon: a dated past event retold, a
disease named as a claimed risk, a stop with an object, a past habit, an idiom, a word shared with a plan's instruction
that names no activity; each with the near miss that must still reach the queue."""
from __future__ import annotations

from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.types import FindingDraft

from .conftest import memory

ENGINE = RulesReconciler()
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

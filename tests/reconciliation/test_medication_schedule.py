"""Medication rules against an order's dosageInstruction: fewer or more doses, another time, with food; new vocabulary."""
from __future__ import annotations

from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.engines.rules.dosing import order_schedule, schedule_conflict, stated_per_week
from reconcile_app.reconciliation.types import FindingDraft

from .conftest import memory


def judge(engine: RulesReconciler, record: ClinicalRecord, quote: str, drug: str, action: str = "taking", **attrs: Any) -> FindingDraft:
    m = memory("medication", quote, attributes={"drug": drug, "action": action, **attrs})
    return engine.reconcile_rules([m], record)[0]


def entry(record: ClinicalRecord, entry_id: str):
    return next(e for e in record.entries if e.id == entry_id)


def test_an_orders_schedule_comes_from_its_timing_then_its_words(meds: ClinicalRecord) -> None:
    assert order_schedule(entry(meds, "m-alendronate")).per_week == 1
    assert order_schedule(entry(meds, "m-metformin")).per_week == 14
    levo = order_schedule(entry(meds, "m-levo"))
    assert levo.per_week == 7 and levo.times == {"morning"}
    assert order_schedule(entry(meds, "m-lithium")).per_week == 14  # no Timing: "twice daily" in the text


@pytest.mark.parametrize(("said", "per_week"), [
    ("most weeks it's 3 or 4 days a week", 3.5), ("two to three nights per week", 2.5), ("every other day now", 3.5),
    ("on weekends only", 2.0), ("every single morning", 7.0), ("on sundays", 1.0), ("I can't say", None),
])
def test_stated_doses_a_week(said: str, per_week: float | None) -> None:
    assert stated_per_week(said) == per_week


@pytest.mark.parametrize(("said", "per_week"), [
    ("my son fills the pill organizer on sundays for the whole week", None),
    ("i pick up the refills every week at the counter", None),
    ("there is a support meeting across town on thursdays", None),
    # trap twins: the same day said of the dose itself
    ("my son fills the pill organizer and i take the big one on sundays", 1.0),
    ("i take it on thursdays after lunch", 1.0),
])
def test_a_frequency_belongs_to_the_nearest_event_before_it(said: str, per_week: float | None) -> None:
    assert stated_per_week(said) == per_week


def test_an_as_needed_order_has_no_schedule_to_fall_short_of(meds: ClinicalRecord) -> None:
    assert schedule_conflict(entry(meds, "m-acetaminophen"), "maybe two days a week when the knee acts up") is None


@pytest.mark.parametrize(("quote", "drug", "rule"), [
    ("Honestly the levothyroxine happens maybe four or five days a week.", "levothyroxine", "med-schedule-less"),
    ("The levothyroxine I take whenever I remember it.", "levothyroxine", "med-schedule-less"),
    ("I only do the morning apixaban these days, the evening one upsets my stomach.", "apixaban", "med-schedule-less"),
    ("Metformin: morning dose yes, supper dose no, it runs right through me.", "metformin", "med-schedule-less"),
    ("Since I got the new pill box the alendronate goes in every morning with the rest.", "alendronate", "med-schedule-more"),
    ("These days I take the levothyroxine at bedtime instead.", "levothyroxine", "med-schedule-timing"),
    ("My levothyroxine goes down with my coffee and a muffin.", "levothyroxine", "med-schedule-timing"),
])
def test_a_schedule_the_order_does_not_allow_contradicts_it(engine, meds, quote: str, drug: str, rule: str) -> None:
    finding = judge(engine, meds, quote, drug)
    assert (finding.kind, finding.rule) == ("contradiction", rule)
    assert finding.citations[0].resource_type == "MedicationRequest"


def test_a_weekly_drug_taken_daily_is_safety_critical(engine, meds) -> None:
    finding = judge(engine, meds, "The alendronate I take every day now, same as my other pills.", "alendronate")
    assert finding.rule == "med-schedule-more" and finding.severity == "high" and finding.safety_critical


def test_one_of_two_anticoagulant_doses_left_out_is_high(engine, meds) -> None:
    finding = judge(engine, meds, "Skipping the night apixaban for a week now.", "apixaban")
    assert finding.kind == "contradiction" and finding.severity == "high" and finding.safety_critical


@pytest.mark.parametrize(("quote", "drug"), [
    ("Metformin with breakfast and with supper, two each time.", "metformin"),
    ("Tacrolimus every twelve hours, alarms on my phone.", "tacrolimus"),
    ("The levothyroxine every morning before I eat anything.", "levothyroxine"),
    ("Sinemet one and a half tablets, four times a day.", "carbidopa/levodopa"),
    ("Tylenol a couple of days a week when my back flares.", "acetaminophen"),
])
def test_a_schedule_that_fits_the_order_agrees(engine, meds, quote: str, drug: str) -> None:
    assert judge(engine, meds, quote, drug).kind == "agreement"


def test_a_sentence_about_another_drug_does_not_set_this_drugs_schedule(engine, meds) -> None:
    m = memory("medication", "Metformin twice a day, no problem.", attributes={"drug": "metformin", "action": "taking"})
    other = memory("medication", "The levothyroxine only on weekends though.", attributes={"drug": "levothyroxine", "action": "taking"})
    findings = engine.reconcile_rules([m, other], meds)
    assert [f.kind for f in findings] == ["agreement", "contradiction"]


def test_a_new_strong_cyp3a4_inhibitor_cites_the_drugs_it_raises(engine, meds) -> None:
    finding = judge(engine, meds, "The walk-in clinic put me on clarithromycin for ten days.", "clarithromycin", action="started")
    assert finding.kind == "gap" and finding.severity == "high" and finding.safety_critical
    assert {"m-tacrolimus", "m-apixaban"} <= {c.id for c in finding.citations}


def test_a_new_prescription_named_only_by_its_class_is_a_gap(engine, meds) -> None:
    # the record's only cold medicine is stopped: "a cough syrup" from urgent care is new, not that old one
    finding = judge(engine, meds, "Urgent care gave me a cough syrup for nights.", "", action="started", drug_class="cold medicine")
    assert finding.kind == "gap"


@pytest.mark.parametrize(("quote", "drug"), [
    ("The levothyroxine I only take on Saturday and Sunday, work is too busy.", "levothyroxine"),
    ("Weekdays I skip the levothyroxine, it makes me jittery at work.", "levothyroxine"),
])
def test_weekend_only_doses_of_a_daily_order_are_fewer(engine, meds, quote: str, drug: str) -> None:
    finding = judge(engine, meds, quote, drug)
    assert (finding.kind, finding.rule) == ("contradiction", "med-schedule-less")


def test_a_drug_taken_with_another_keeps_the_schedule_about_the_first(engine, meds) -> None:
    m = memory("medication", "It used to be first thing, but now I take my levothyroxine at bedtime with my calcium chews.",
               attributes={"drug": "levothyroxine", "action": "taking"})
    finding = engine.reconcile_rules([m], meds)[0]
    assert finding.kind == "contradiction" and finding.rule.startswith("med-schedule")


# ---- everyday frequency words and clock times (sentences written for these tests) -------------------------------------

@pytest.mark.parametrize(("said", "per_week"), [
    ("levothyroxine, honestly twice a week if that", 2.0), ("a couple times a week at most", 2.0),
    ("once or twice a week lately", 1.5), ("a few times a week", 3.0), ("I do that shot every four weeks", 0.25),
    ("every three weeks now", 0.3333),
])
def test_frequency_adverbs_and_long_intervals_are_doses_a_week(said: str, per_week: float) -> None:
    assert stated_per_week(said) == per_week


@pytest.mark.parametrize(("quote", "rule"), [
    ("Levothyroxine is down to twice a week since the refill ran short.", "med-schedule-less"),
    ("I moved the levothyroxine to 2 pm because mornings are chaos.", "med-schedule-timing"),
    ("Levothyroxine goes in around 10:30 pm rather than first thing.", "med-schedule-timing"),
])
def test_everyday_frequency_and_clock_times_that_differ_from_the_order_contradict_it(engine, meds, quote: str,
                                                                                     rule: str) -> None:
    finding = judge(engine, meds, quote, "levothyroxine")
    assert (finding.kind, finding.rule) == ("contradiction", rule)


@pytest.mark.parametrize("quote", [
    "Levothyroxine at 6:45 am, then I walk the dog twice a week around the lake.",  # twin: the walks' rhythm, a morning dose
    "Tylenol a couple times a week when my back flares.",  # twin: an as-needed order has no schedule to fall short of
])
def test_a_clock_time_or_a_weekly_count_that_fits_the_order_agrees(engine, meds, quote: str) -> None:
    drug = "acetaminophen" if quote.startswith("Tylenol") else "levothyroxine"
    assert judge(engine, meds, quote, drug).kind == "agreement"

"""Care plans read from their own text: what a plan asks the patient to use, forbids, limits or keeps steady, and the
patient's words read against it (devices left unused, forbidden activities, amounts over a limit, the foods of a diet)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import Assertion
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.engines.rules.plantext import (
    PlanItem, disuse_in, item_active, mentions, number_value, plan_items, quantities, vocabulary,
)
from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.reconciliation.matching import RecordIndex
from reconcile_app.reconciliation.types import FindingDraft

from .conftest import load_record, memory, rules_reconciler

ENGINE = rules_reconciler()


@pytest.fixture(scope="module")
def plan_record() -> ClinicalRecord:
    return load_record("careplan_text_patient.json")


def judge(record: ClinicalRecord, category: str, quote: str, *others: str, **kwargs: Any) -> FindingDraft:
    """The finding on the first memory; `others` are further sentences of the same turn (lifestyle memories)."""
    memories = [memory(category, quote, **kwargs)] + [memory("lifestyle", text) for text in others]
    return ENGINE.reconcile(memories, record)[0]


def items_of(record: ClinicalRecord) -> dict[tuple[str, str], PlanItem]:
    return {(i.careplan.id, i.concept): i for i in plan_items(RecordIndex(record, load_knowledge()))}


# --- reading the plan -----------------------------------------------------------------------------


def test_a_plan_is_read_clause_by_clause_into_what_it_asks_forbids_and_limits(plan_record: ClinicalRecord) -> None:
    items = items_of(plan_record)
    assert items[("careplan-heart", "cpap")].mode == "use"
    assert items[("careplan-heart", "heights")].mode == "avoid"
    alcohol = items[("careplan-heart", "alcohol")]
    assert (alcohol.mode, alcohol.limit, alcohol.per) == ("limit", 1.0, "day")
    fluids = items[("careplan-heart", "fluids")]
    assert fluids.mode == "limit" and fluids.limit == pytest.approx(67.6, abs=0.1)  # 2 litres in ounces
    assert items[("careplan-hernia", "lifting")].limit == 10.0
    assert items[("careplan-travel", "altitude")].limit == 7500.0
    assert {items[("careplan-heart", c)].mode for c in ("canned_soup", "deli_meat", "pickles", "salty_snacks")} == {"avoid"}


def test_a_restriction_under_a_condition_the_engine_cannot_check_is_not_an_item(plan_record: ClinicalRecord) -> None:
    # "no flying after 34 weeks": the week of pregnancy is not in the patient's words
    assert ("careplan-travel", "air_travel") not in items_of(plan_record)


def test_a_clause_limited_in_time_ends_with_it(plan_record: ClinicalRecord) -> None:
    lifting = items_of(plan_record)[("careplan-hernia", "lifting")]
    assert item_active(lifting, datetime(2026, 1, 10))
    assert not item_active(lifting, datetime(2026, 3, 1))


@pytest.mark.parametrize(("text", "value"), [("8,000", 8000.0), ("nine thousand", 9000.0), ("a couple", 2.0), ("twenty-five", 25.0), ("fish", None)])
def test_numbers_are_read_in_digits_and_words(text: str, value: float | None) -> None:
    assert number_value(text) == value


@pytest.mark.parametrize(("text", "unit", "expected"), [
    (" no more than two drinks on any day ", "drink", [(2.0, "day")]),
    (" three or four lagers a night ", "drink", [(4.0, "day")]),
    (" up to 1.5 liters a day ", "oz", [(pytest.approx(50.7, abs=0.1), "day")]),
    (" half a gallon a day ", "oz", [(64.0, "day")]),
    (" hauled 30 kg of soil ", "lb", [(pytest.approx(66.1, abs=0.1), "")]),
    (" we camped at nine thousand feet ", "ft", [(9000.0, "")]),
    (" three nights a week ", "drink", []),
])
def test_amounts_are_read_in_the_concepts_unit(text: str, unit: str, expected: list) -> None:
    assert quantities(text, unit) == expected


def test_an_ambiguous_lay_word_names_a_device_only_when_the_plan_says_so() -> None:
    assert "epinephrine_autoinjector" not in mentions("my pens are in the drawer")
    assert "epinephrine_autoinjector" in mentions("my pens are in the drawer", ambiguous_ok={"epinephrine_autoinjector"})


def test_disuse_is_read_in_the_sentence_that_stores_the_device_away() -> None:
    _, reading = vocabulary()
    names_cpap = lambda text: "cpap" in text  # noqa: E731
    assert disuse_in("The CPAP is fine. It has been sitting in the spare room closet for weeks.", reading, names_cpap)
    assert disuse_in("My CPAP hose cracked. I just go without now.", reading, names_cpap)
    # the storage place belongs to another thing: the treadmill is in the garage, the CPAP is in use
    assert not disuse_in("The treadmill is in the garage. I use the CPAP every night.", reading, names_cpap)
    assert not disuse_in("I never leave it in the closet, the CPAP goes on every night.", reading, names_cpap)


# --- the patient's words against the plan -------------------------------------------------------


def test_a_device_the_plan_asks_for_left_unused_contradicts_the_plan(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "care_activity", "My CPAP has been stuck in the hall cupboard since the holidays.", attributes={"name": "cpap"})
    assert (finding.kind, finding.category) == ("contradiction", "careplan")
    assert {"careplan-heart", "cond-osa"} <= {c.id for c in finding.citations}


def test_a_device_gone_without_is_read_across_the_turn(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "care_activity", "The CPAP mask leaks at the nose.", "So I've slept without it for a month.",
                    attributes={"name": "cpap"})
    assert finding.kind == "contradiction" and finding.rule.startswith("careplan-device-unused")


def test_a_device_in_nightly_use_stays_quiet(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "care_activity", "I wear the CPAP every night and the spare mask sits in the closet.", attributes={"name": "cpap"})
    assert finding.kind == "no_clinical_relevance"


def test_expired_epinephrine_pens_are_a_safety_matter(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "lifestyle", "Both of my pens went out of date in the spring and they sit in my bag.")
    assert (finding.kind, finding.severity, finding.safety_critical) == ("contradiction", "high", True)
    assert {"careplan-allergy", "medrx-epinephrine"} <= {c.id for c in finding.citations}


def test_a_forbidden_activity_on_a_blood_thinner_is_raised_and_cites_the_drug(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "lifestyle", "Saturday I was up the ladder scraping the gutters for hours.")
    assert (finding.kind, finding.category) == ("contradiction", "careplan")
    assert {"careplan-heart", "medrx-apixaban"} <= {c.id for c in finding.citations}
    assert finding.safety_critical


@pytest.mark.parametrize("quote", [
    "I didn't go near a ladder this fall, my son did the gutters.",
    "I'm running around all day with the grandkids.",
])
def test_a_denied_or_idiomatic_activity_stays_quiet(plan_record: ClinicalRecord, quote: str) -> None:
    assert judge(plan_record, "lifestyle", quote).kind == "no_clinical_relevance"


@pytest.mark.parametrize(("quote", "kind"), [
    ("Friday I had four lagers watching the game.", "contradiction"),
    ("I had one glass of wine with dinner on Sunday.", "no_clinical_relevance"),
])
def test_drinks_are_counted_against_the_plans_limit(plan_record: ClinicalRecord, quote: str, kind: str) -> None:
    assert judge(plan_record, "lifestyle", quote).kind == kind


def test_a_daily_fluid_volume_over_the_plans_limit_contradicts_it(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "care_activity", "In this heat I drink about three liters of water a day.", attributes={"name": "hydration"})
    assert finding.kind == "contradiction" and finding.rule == "careplan-limit-fluids"


def test_pounds_lifted_over_the_limit_within_its_weeks_contradict_the_plan(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "lifestyle", "Yesterday I carried 40 pounds of firewood up from the shed.")
    assert finding.rule == "careplan-limit-lifting"
    assert {"careplan-hernia", "proc-hernia"} <= {c.id for c in finding.citations}


def test_altitude_over_the_plans_limit_in_words_contradicts_it(plan_record: ClinicalRecord) -> None:
    assert judge(plan_record, "lifestyle", "We drove up to a pass at nine thousand feet on Sunday.").rule == "careplan-limit-altitude"


@pytest.mark.parametrize(("quote", "kind"), [
    ("Lunch most days is a salami sandwich and a bag of potato chips, I eat it at my desk.", "contradiction"),
    ("I had a pickle at the picnic.", "no_clinical_relevance"),
    ("I cut out the salami and the chips, no canned soup either.", "no_clinical_relevance"),
    ("For the party I'm bringing salami, pickles and chips.", "no_clinical_relevance"),
])
def test_the_foods_a_diet_lists_are_read_as_the_diet(plan_record: ClinicalRecord, quote: str, kind: str) -> None:
    assert judge(plan_record, "care_activity", quote, attributes={"name": "diet"}).kind == kind


def test_a_negated_lifestyle_memory_about_a_device_still_reads_as_disuse(plan_record: ClinicalRecord) -> None:
    finding = judge(plan_record, "care_activity", "The CPAP? I don't use it anymore, it hurts my face.", attributes={"name": "cpap"},
                    assertion=Assertion.NEGATED)
    assert finding.kind == "contradiction"


def _plan(description: str) -> ClinicalRecord:
    from reconcile_app.fhir.clinical import build_clinical_record

    return build_clinical_record([
        {"resourceType": "Patient", "id": "pt"},
        {"resourceType": "CarePlan", "id": "cp", "status": "active", "intent": "plan", "title": "Home safety plan",
         "subject": {"reference": "Patient/pt"}, "period": {"start": "2025-06-01"},
         "activity": [{"detail": {"status": "in-progress", "description": description}}]},
    ])


def test_a_device_listed_before_the_clauses_prohibition_is_asked_for_not_forbidden() -> None:
    # NegEx forward scope: "no" forbids the rugs after it, not the walker listed before it
    items = items_of(_plan("Fall safety: use the walker at all times, night lights on, no loose rugs, grab bars in the tub."))
    assert items[("cp", "walker")].mode == "use"
    finding = ENGINE.reconcile([memory("care_activity", "I take my walker everywhere, even out to the garden.")], _plan(
        "Fall safety: use the walker at all times, night lights on, no loose rugs, grab bars in the tub."))[0]
    assert finding.kind not in ("contradiction", "gap") or not finding.rule.startswith("careplan-forbidden")


def test_a_prohibition_that_opens_a_list_still_forbids_every_item() -> None:
    # trap twin: "No ladders, roof or gutter work" forbids the roof though a comma separates it from the "no"
    items = items_of(_plan("No ladders, roof or gutter work while on the blood thinner."))
    assert items[("cp", "heights")].mode == "avoid"


def test_an_ellipsis_beside_a_sentence_that_uses_the_device_is_not_its_disuse() -> None:
    _, reading = vocabulary()
    names_cpap = lambda text: "cpap" in text  # noqa: E731
    assert not disuse_in("No more dizzy spells at all. Since spring, not one night. I use the cpap every night now.", reading, names_cpap)
    # trap twin: the same ellipsis with the device named and not said to be used is its disuse
    assert disuse_in("The cpap mask pinches my nose. Since spring, not one night.", reading, names_cpap)

"""A medication statement that only sounds like a change must not contradict the record: the usual number of tablets
said in passing, an as-needed medicine not needed, a stop said with an idiom is a stop. Sentences written for these tests."""
from __future__ import annotations

from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import Assertion
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.types import FindingDraft

from .conftest import memory


def judge(engine: RulesReconciler, record: ClinicalRecord, quote: str, drug: str, action: str = "taking",
          assertion: str = Assertion.AFFIRMED, **attrs: Any) -> FindingDraft:
    m = memory("medication", quote, attributes={"drug": drug, "action": action, **attrs}, assertion=assertion)
    return engine.reconcile_rules([m], record)[0]


@pytest.mark.parametrize("quote", [
    "Every morning I line up two of the metformin with my oatmeal, same as always.",
    "Two metformin at breakfast and two more at supper, like the label says.",
    "Like clockwork: 2 of my tacrolimus at eight, 2 at eight.",
])
def test_the_ordered_number_of_tablets_said_in_passing_is_not_a_dose_change(engine, meds, quote: str) -> None:
    drug = "tacrolimus" if "tacrolimus" in quote else "metformin"
    finding = judge(engine, meds, quote, drug, action="changed_dose", dose_change="more")
    assert finding.kind != "contradiction"


@pytest.mark.parametrize("quote", [
    "I've been cutting the metformin, two of them became one in the morning.",
    "Only one of the metformin instead of two at supper now.",
    "I doubled up: two of the tacrolimus extra on Monday.",
])
def test_a_marked_change_of_amount_still_contradicts(engine, meds, quote: str) -> None:
    drug = "tacrolimus" if "tacrolimus" in quote else "metformin"
    finding = judge(engine, meds, quote, drug, action="changed_dose", dose_change="less")
    assert finding.kind == "contradiction"


@pytest.mark.parametrize(("quote", "action", "assertion"), [
    ("My knee has been quiet, I haven't needed a Tylenol in weeks.", "taking", Assertion.NEGATED),
    ("I keep the acetaminophen in my bag but never had to use one this month.", "taking", Assertion.AFFIRMED),
    ("Didn't need any acetaminophen since the physio started.", "skipped", Assertion.AFFIRMED),
])
def test_an_as_needed_medicine_not_needed_is_the_order_working(engine, meds, quote: str, action: str, assertion: str) -> None:
    finding = judge(engine, meds, quote, "acetaminophen", action=action, assertion=assertion)
    assert finding.kind not in ("contradiction", "gap")


def test_an_as_needed_medicine_thrown_out_is_still_news(engine, meds) -> None:
    finding = judge(engine, meds, "I threw the acetaminophen out, I don't trust it.", "acetaminophen", action="stopped")
    assert finding.kind == "contradiction"


def test_a_scheduled_medicine_not_needed_is_a_stop(engine, meds) -> None:
    finding = judge(engine, meds, "My sugars are fine so I haven't needed the metformin lately.", "metformin",
                    assertion=Assertion.NEGATED)
    assert finding.kind == "contradiction"


@pytest.mark.parametrize("quote", [
    "I handed the lithium its pink slip in March.",
    "Me and the lithium broke up, honestly.",
    "The lithium got a summer vacation from me.",
    "I fired the lithium two weeks ago.",
])
def test_a_stop_said_with_an_idiom_contradicts_the_active_order(engine, meds, quote: str) -> None:
    finding = judge(engine, meds, quote, "lithium")
    assert (finding.kind, finding.rule) == ("contradiction", "med-stopped-active")


@pytest.mark.parametrize("quote", [
    "Ginseng is good for everything, that's what the radio says.",
    "Some influencer claims ginseng cures tiredness.",
])
def test_a_general_claim_about_an_undocumented_medicine_is_not_a_gap(engine, meds, quote: str) -> None:
    finding = judge(engine, meds, quote, "ginseng")
    assert finding.kind not in ("contradiction", "gap")


@pytest.mark.parametrize("quote", [
    "I take ginseng every morning now.",
    "Ginseng twice a day since March.",
    "ginseng. clerk said its natural. 2 a day, few weeks now",
    "ginseng 3x/day",
])
def test_use_of_an_undocumented_medicine_is_still_a_gap(engine, meds, quote: str) -> None:
    finding = judge(engine, meds, quote, "ginseng")
    assert finding.kind == "gap"


@pytest.mark.parametrize("quote", [
    "I left my lithium at my sister's. Four days without it, then restarted it when I got home.",
    "Ran out of the lithium over the holiday; I'm back on it since Tuesday.",
])
def test_an_active_order_restarted_after_a_stretch_without_it_contradicts(engine, meds, quote: str) -> None:
    finding = judge(engine, meds, quote, "lithium", action="resumed")
    assert (finding.kind, finding.rule) == ("contradiction", "med-interrupted")


def test_a_restart_with_no_stretch_without_it_is_agreement(engine, meds) -> None:
    finding = judge(engine, meds, "Back on my lithium routine after the move, same as always.", "lithium", action="resumed")
    assert finding.kind == "agreement"

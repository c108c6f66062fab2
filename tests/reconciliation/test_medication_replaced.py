"""A new medicine said to replace one the record still lists as active is a contradiction with that order, citing it.
Sentences written for these tests."""
from __future__ import annotations

import pytest

from .conftest import memory


@pytest.mark.parametrize(("quote", "drug", "old"), [
    ("The kidney doctor took away my lithium and gave me valproate instead.", "valproate", "m-lithium"),
    ("At the hospital they switched me from the metformin to sitagliptin.", "sitagliptin", "m-metformin"),
    ("The apixaban is gone now, the new heart doctor has me on rivaroxaban.", "rivaroxaban", "m-apixaban"),
])
def test_a_replacement_contradicts_the_replaced_order(engine, meds, quote: str, drug: str, old: str) -> None:
    m = memory("medication", quote, attributes={"drug": drug, "action": "started", "source": "outside_clinician"})
    finding = engine.reconcile_rules([m], meds)[0]
    assert (finding.kind, finding.rule) == ("contradiction", "med-replaced")
    assert any(c.id == old for c in finding.citations)


def test_a_new_medicine_with_no_replacement_said_stays_a_gap(engine, meds) -> None:
    m = memory("medication", "Urgent care started me on sitagliptin for my sugars.", attributes={"drug": "sitagliptin", "action": "started"})
    assert engine.reconcile_rules([m], meds)[0].kind == "gap"


@pytest.mark.parametrize("quote", [
    "A forum says there's a weekly shot instead of the metformin now, semaglutide. I might ask about it in June.",
    "Wondering if sitagliptin could replace the metformin someday.",
])
def test_a_replacement_only_considered_is_not_a_contradiction(engine, meds, quote: str) -> None:
    drug = "semaglutide" if "semaglutide" in quote else "sitagliptin"
    m = memory("medication", quote, attributes={"drug": drug, "action": "taking"})
    assert engine.reconcile_rules([m], meds)[0].kind != "contradiction"

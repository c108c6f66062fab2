"""A plan's double negation ("no skipped snacks", "never go without breakfast") requires the thing it names; a plain
prohibition still forbids it."""
from __future__ import annotations

import pytest

from reconcile_app.fhir.clinical import build_clinical_record, resources_from_bundle
from reconcile_app.reconciliation.engines.rules.plantext import plan_items
from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.reconciliation.matching import RecordIndex


def _items(description: str) -> list[tuple[str, str]]:
    plan = {"resourceType": "CarePlan", "id": "cp-1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p"},
            "activity": [{"detail": {"status": "in-progress", "description": description}}]}
    bundle = {"resourceType": "Bundle", "type": "collection",
              "entry": [{"resource": {"resourceType": "Patient", "id": "p"}}, {"resource": plan}]}
    idx = RecordIndex(build_clinical_record(resources_from_bundle(bundle)), load_knowledge())
    return [(item.mode, item.concept) for item in plan_items(idx)]


@pytest.mark.parametrize("description", [
    "No skipped snacks on dialysis days.",
    "Do not go without your afternoon snack when on glipizide.",
    "Never forget the salty snacks before a long hike (low blood pressure).",
])
def test_a_prohibition_of_leaving_something_out_does_not_forbid_it(description: str) -> None:
    assert not [mode for mode, _ in _items(description) if mode == "avoid"]


@pytest.mark.parametrize("description", ["Avoid salty snacks such as chips.", "Skip salty snacks.", "No ladders or roof work."])
def test_a_plain_prohibition_still_forbids(description: str) -> None:
    assert any(mode == "avoid" for mode, _ in _items(description))

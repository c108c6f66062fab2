"""Fixtures of the reconciliation tests: the synthetic record bundles and a memory builder (pure, no DB)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord, build_clinical_record, resources_from_bundle
from reconcile_app.narrative.types import Assertion, MemoryDraft, Subject
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from tests.conftest import DATA

MENTION_TIME = datetime(2026, 1, 10, 18, 0, tzinfo=timezone.utc)


def rules_reconciler() -> RulesReconciler:
    """The rules engine without its learned layer: these tests pin down what the sourced rules and tables decide
    for one sentence. The learned judge (turn filter, kind and safety models), which weighs a whole turn against
    the corpus, has its own tests (test_judge.py) and is measured end to end by the replay scores."""
    engine = RulesReconciler()
    engine.judge = None
    return engine


def load_record(name: str) -> ClinicalRecord:
    bundle = json.loads((DATA / "fhir" / name).read_text(encoding="utf-8"))
    return build_clinical_record(resources_from_bundle(bundle))


@pytest.fixture(scope="session")
def record() -> ClinicalRecord:
    return load_record("reconcile_rules_patient.json")


@pytest.fixture(scope="session")
def nka_record() -> ClinicalRecord:
    return load_record("reconcile_nka_patient.json")


@pytest.fixture(scope="module")
def meds() -> ClinicalRecord:
    return load_record("reconcile_medication_patient.json")  # apixaban, alendronate weekly, lithium, metformin bid, tacrolimus


@pytest.fixture(scope="module")
def engine() -> RulesReconciler:
    """One rules reconciler per module: it remembers earlier memories' verdicts per record, which a module's tests share."""
    return rules_reconciler()


def memory(
    category: str,
    quote: str,
    *,
    attributes: dict[str, Any] | None = None,
    subject: str = Subject.PATIENT,
    assertion: str = Assertion.AFFIRMED,
    event_start: datetime | None = None,
    turn_id: str = "s01-t02",
) -> MemoryDraft:
    from reconcile_app.narrative.types import EventTime

    return MemoryDraft(
        category=category,
        content=quote,
        anchor_turn_id=turn_id,
        turn_ids=(turn_id,),
        quote=quote,
        quote_start=0,
        quote_end=len(quote),
        speaker="patient",
        mention_time=MENTION_TIME,
        subject=subject,
        assertion=assertion,
        attributes=dict(attributes or {}),
        event_time=EventTime(text="", start=event_start, end=event_start) if event_start else None,
    )

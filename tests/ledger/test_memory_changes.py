"""A newer statement outdates an older one: the older one's open findings are re-checked (closed when
the patient no longer says it). Evolving states expire after their time to live with their findings;
safety facts never do."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reconcile_app.audit.models import AuditEvent
from reconcile_app.ledger.services import memories_expire_due
from reconcile_app.narrative.models import Memory
from reconcile_app.reconciliation.models import Finding
from reconcile_app.triage.models import TriageItem, TriageQuote
from reconcile_app.triage.services import triage_items_route
from tests.triage.factories import finding_create, memory_create, patient_create, session_create

from .conftest import heard


@pytest.mark.django_db(transaction=True)
def test_a_later_statement_that_undoes_a_contradiction_resolves_it_and_supersedes_its_finding(ehr_patient) -> None:  # type: ignore[no-untyped-def]
    heard(ehr_patient, "I stopped taking my metformin last week, it upset my stomach.",
          "I started taking my metformin again, every morning with breakfast.")
    earlier, later = Memory.objects.filter(patient=ehr_patient, chain_key="medication:metformin").order_by("mention_time")
    assert (earlier.status, later.supersedes_id) == ("outdated", earlier.pk)
    old = Finding.objects.get(memory=earlier, kind="contradiction")
    assert (old.status, old.superseded_by.memory_id, old.closed_reason) == ("superseded", later.pk, "later_statement")
    item = TriageItem.objects.get(pk=TriageQuote.objects.get(finding=old).item_id)
    assert item.status == "resolved" and item.events.filter(action="later_statement").exists()
    assert not TriageItem.objects.filter(patient=ehr_patient, status="new", concept_key__contains="metformin").exists()


@pytest.mark.django_db
def test_an_expired_goal_closes_its_findings_and_a_safety_critical_one_is_kept() -> None:
    patient = patient_create()
    session = session_create(patient=patient)
    past = timezone.now() - timedelta(days=1)
    goal = memory_create(session=session, category="goal", chain_key="goal:walk", content="Walk 10,000 steps a day",
                         attributes={"name": "walking"}, expires_at=past)
    goal_finding = finding_create(patient=patient, session=session, memory=goal, kind="gap", severity="low", safety_critical=False,
                                  category="careplan", citations=[])
    (item,) = triage_items_route(findings=[goal_finding])
    risky = memory_create(session=session, category="lifestyle", chain_key="", content="Drinks six beers a night", expires_at=past)
    finding_create(patient=patient, session=session, memory=risky, kind="gap", severity="high", safety_critical=True, citations=[])
    result = memories_expire_due()
    assert (result.memories, result.findings) == (1, 1)
    goal.refresh_from_db(), risky.refresh_from_db(), item.refresh_from_db()
    assert (goal.status, risky.status) == ("outdated", "current")
    assert Finding.objects.get(pk=goal_finding.pk).closed_reason == "memory_outdated"
    assert item.status == "resolved" and item.events.filter(action="memory_outdated").exists()
    assert AuditEvent.objects.get(action="ledger.expire").details == {"memories": 1}

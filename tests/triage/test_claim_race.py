"""Two nurses press Claim at the same moment: the conditional UPDATE lets exactly one win (PostgreSQL)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create
from reconcile_app.triage.models import TriageEvent, TriageItem
from reconcile_app.triage.services import TransitionRefused, triage_item_claim
from tests.conftest import need

from .factories import item_create


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_have_exactly_one_winner():
    need(connection.vendor == "postgresql", "DATABASE_URL (PostgreSQL) not set")
    item = item_create()
    nurses = [user_create(username=f"racer{i}", role=Role.NURSE, password=None) for i in range(6)]
    barrier = threading.Barrier(len(nurses))
    outcomes: list[str] = []
    lock = threading.Lock()

    def claim(user) -> None:  # type: ignore[no-untyped-def]
        stale = TriageItem.objects.get(pk=item.pk)  # every racer read the row as "new"
        barrier.wait()
        try:
            triage_item_claim(item=stale, user=user)
            result = f"won:{user.username}"
        except TransitionRefused:
            result = "refused"
        finally:
            connections.close_all()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=claim, args=(n,)) for n in nurses]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [o for o in outcomes if o.startswith("won:")]
    assert len(outcomes) == len(nurses) and len(winners) == 1
    item.refresh_from_db()
    assert item.status == "in_review" and f"won:{item.assignee.username}" == winners[0]
    assert TriageEvent.objects.filter(item=item, action="claim").count() == 1

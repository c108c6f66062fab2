"""Upgrading a database with items routed before quotes: duplicates of one open concept are merged."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def test_open_duplicates_routed_before_quotes_become_one_item():
    from reconcile_app.triage.services import triage_items_route

    from .factories import finding_create, memory_create, patient_create, session_create

    patient = patient_create()
    routed = []
    for severity, safety in (("low", False), ("high", True)):
        session = session_create(patient=patient)
        memory = memory_create(session=session, attributes={"drug": "lisinopril", "action": "stopped"})
        finding = finding_create(patient=patient, session=session, memory=memory, severity=severity, safety_critical=safety)
        routed.append(finding)
    # Route them as the old code did: two items, no shared concept yet.
    first = triage_items_route(findings=[routed[0]])[0]
    from reconcile_app.triage.models import TriageItem, TriageQuote

    TriageItem.objects.filter(pk=first.pk).update(concept_key="")
    second = triage_items_route(findings=[routed[1]])[0]
    assert first.pk != second.pk
    TriageItem.objects.filter(pk=first.pk).update(concept_key=second.concept_key)

    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("triage")
    try:
        executor.migrate([("triage", "0006_backfill_quotes")])
        executor.loader.build_graph()
        executor.migrate([("triage", "0007_merge_open_duplicates")])
        # The models as 0007 left them (later migrations add columns the current models read).
        state = executor.loader.project_state(("triage", "0007_merge_open_duplicates")).apps
        Item, Quote = state.get_model("triage", "TriageItem"), state.get_model("triage", "TriageQuote")
        (item,) = Item.objects.filter(patient_id=patient.pk)
        assert item.pk == first.pk and item.quote_count == 2
        assert (item.severity, item.safety_critical, item.band) == ("high", True, 0)
        assert set(Quote.objects.filter(item_id=item.pk).values_list("finding_id", flat=True)) == {f.pk for f in routed}
        assert state.get_model("triage", "TriageEvent").objects.filter(item_id=item.pk, action="quote_joined", note__contains="merged").exists()
    finally:
        executor.loader.build_graph()
        executor.migrate(latest)  # leave the schema as the other tests expect it

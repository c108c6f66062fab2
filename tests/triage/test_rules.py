"""The routing-rules admin page: ordered list, create/edit/delete, and a preview of what a rule catches."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent
from reconcile_app.triage.models import RoutingRule

from .factories import item_create

pytestmark = pytest.mark.django_db


def test_list_shows_default_rules_in_order(admin_client):
    response = admin_client.get(reverse("triage:rule_list"))
    body = response.content.decode()
    assert response.status_code == 200
    assert body.index("Safety-critical: care team now") < body.index("Low severity: next visit")


def test_create_edit_and_delete_a_rule(admin_client):
    data = {"order": 5, "name": "Allergy gaps", "enabled": "on", "match_kind": "gap", "match_category": "allergy",
            "match_safety": "", "match_severity": "", "match_resource_type": "", "queue": "Allergy desk", "priority": 1,
            "sla_minutes": 30, "action": "alert_care_team"}
    assert admin_client.post(reverse("triage:rule_create"), data).status_code == 302
    rule = RoutingRule.objects.get(name="Allergy gaps")
    admin_client.post(reverse("triage:rule_edit", args=[rule.pk]), {**data, "queue": "Allergy team"})
    rule.refresh_from_db()
    assert rule.queue == "Allergy team"
    admin_client.post(reverse("triage:rule_delete", args=[rule.pk]))
    assert not RoutingRule.objects.filter(pk=rule.pk).exists()
    assert set(AuditEvent.objects.filter(object_type="routing_rule").values_list("action", flat=True)) == {
        "triage.rule_create", "triage.rule_update", "triage.rule_delete"}


def test_preview_lists_open_items_the_criteria_catch(admin_client):
    gap = item_create(kind="gap", category="allergy", severity="low", safety_critical=False,
                      citations=[{"resourceType": "AllergyIntolerance", "id": "allergy-pcn"}])
    item_create(kind="contradiction", category="medication")
    response = admin_client.get(reverse("triage:rule_preview"), {"match_kind": "gap", "match_resource_type": "AllergyIntolerance"},
                                HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert '<span id="preview-count">1</span>' in body
    assert reverse("triage:finding_detail", args=[gap.finding_id]) in body and "<html" not in body


def test_edit_page_shows_the_preview_of_a_saved_rule(admin_client):
    item_create(severity="medium", safety_critical=True)
    rule = RoutingRule.objects.get(order=10)
    response = admin_client.get(reverse("triage:rule_edit", args=[rule.pk]))
    assert response.context["preview_count"] == 1

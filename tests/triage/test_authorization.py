"""Authorization matrix: every triage (and memory-view) URL for every role, and for a clinician
launched for another patient. 302 for anonymous is the redirect to sign-in."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import reverse

from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create
from reconcile_app.triage.models import RoutingRule, TriageAlert

from .factories import item_create, patient_create

pytestmark = pytest.mark.django_db

PERSONAS = ("anonymous", "clinician_unlaunched", "clinician_launched", "clinician_other", "nurse", "admin")


@dataclass
class World:
    finding_id: int
    patient_pk: int
    other_patient_pk: int
    alert_pk: int
    rule_pk: int


def _world() -> World:
    item = item_create(safety_critical=True)
    other = patient_create()
    item_create(patient=other)
    return World(item.finding_id, item.patient_id, other.pk, TriageAlert.objects.filter(item=item).first().pk,
                 RoutingRule.objects.order_by("order").first().pk)


def _client(persona: str, world: World) -> Client:
    client = Client()
    if persona == "anonymous":
        return client
    role = {"nurse": Role.NURSE, "admin": Role.ADMIN}.get(persona, Role.CLINICIAN)
    client.force_login(user_create(username=persona, role=role, password=None))
    if persona in ("clinician_launched", "clinician_other"):
        session = client.session
        session["smart_patient_pk"] = world.patient_pk if persona == "clinician_launched" else world.other_patient_pk
        session.save()
    return client


A = "anonymous"
CU, CL, CO, N, AD = "clinician_unlaunched", "clinician_launched", "clinician_other", "nurse", "admin"


def expect(anon: int, cu: int, cl: int, co: int, nurse: int, admin: int) -> dict[str, int]:
    return {A: anon, CU: cu, CL: cl, CO: co, N: nurse, AD: admin}


# (name, method, url builder, data builder, expected status per persona)
CASES = [
    ("queue", "get", lambda w: reverse("triage:queue"), None, expect(302, 403, 403, 403, 200, 200)),
    ("bulk", "post", lambda w: reverse("triage:bulk"), lambda w: {"op": "dismiss", "ids": [w.finding_id], "reason": "duplicate"},
     expect(302, 403, 403, 403, 302, 302)),
    ("detail", "get", lambda w: reverse("triage:finding_detail", args=[w.finding_id]), None, expect(302, 403, 200, 403, 200, 200)),
    ("claim", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "claim"]), None, expect(302, 403, 403, 403, 302, 302)),
    ("confirm", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "confirm"]), None, expect(302, 403, 302, 403, 302, 302)),
    ("resolve", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "resolve"]), None, expect(302, 403, 302, 403, 302, 302)),
    ("note", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "note"]), lambda w: {"text": "n"},
     expect(302, 403, 302, 403, 302, 302)),
    ("dismiss", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "dismiss"]), lambda w: {"reason": "duplicate"},
     expect(302, 403, 403, 403, 302, 302)),
    ("escalate", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "escalate"]), None, expect(302, 403, 403, 403, 302, 302)),
    ("assign", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "assign"]), lambda w: {}, expect(302, 403, 403, 403, 302, 302)),
    ("writeback-retry", "post", lambda w: reverse("triage:finding_step", args=[w.finding_id, "writeback-retry"]), None,
     expect(302, 403, 403, 403, 404, 404)),
    ("alert_ack", "post", lambda w: reverse("triage:alert_ack", args=[w.alert_pk]), None, expect(302, 403, 403, 403, 302, 302)),
    ("queue_patient", "post", lambda w: reverse("triage:queue_patient"), lambda w: {"q": "Patient"}, expect(302, 403, 403, 403, 302, 302)),
    ("patient_findings", "get", lambda w: reverse("triage:patient_findings"), None, expect(302, 403, 200, 200, 403, 403)),
    ("rule_list", "get", lambda w: reverse("triage:rule_list"), None, expect(302, 403, 403, 403, 403, 200)),
    ("rule_create", "get", lambda w: reverse("triage:rule_create"), None, expect(302, 403, 403, 403, 403, 200)),
    ("rule_edit", "get", lambda w: reverse("triage:rule_edit", args=[w.rule_pk]), None, expect(302, 403, 403, 403, 403, 200)),
    ("rule_preview", "get", lambda w: reverse("triage:rule_preview"), None, expect(302, 403, 403, 403, 403, 200)),
    ("rule_delete", "post", lambda w: reverse("triage:rule_delete", args=[w.rule_pk]), None, expect(302, 403, 403, 403, 403, 302)),
    ("dashboard", "get", lambda w: reverse("triage:dashboard"), None, expect(302, 403, 403, 403, 200, 200)),
    ("memories", "get", lambda w: reverse("narrative:patient_memories", args=[w.patient_pk]), None, expect(302, 403, 200, 403, 200, 200)),
    ("cds_discovery", "get", lambda w: reverse("cds:discovery"), None, expect(200, 200, 200, 200, 200, 200)),
    ("cds_service_unsigned", "post", lambda w: reverse("cds:service", kwargs={"service_id": "reconcile-patient-view"}), None,
     expect(401, 401, 401, 401, 401, 401)),
]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matrix(case, persona):  # type: ignore[no-untyped-def]
    name, method, url_for, data_for, expected = case
    world = _world()
    client = _client(persona, world)
    url = url_for(world)
    data = data_for(world) if data_for else {}
    response = client.get(url, data) if method == "get" else client.post(url, data)
    assert response.status_code == expected[persona], f"{name} as {persona}: {response.status_code}"
    if persona == A and expected[A] == 302:
        assert response["Location"].startswith("/login/")


def test_every_triage_url_is_in_the_matrix():
    from reconcile_app.triage import urls

    covered = {"queue", "queue_patient", "bulk", "finding_detail", "finding_step", "alert_ack", "patient_findings", "rule_list", "rule_create",
               "rule_preview", "rule_edit", "rule_delete", "dashboard"}
    assert {p.name for p in urls.urlpatterns} == covered

"""Who reaches what: anonymous users only see login and health; nurses never reach admin pages."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_anonymous_is_sent_to_login_and_the_denial_is_audited(client):
    response = client.get(reverse("core:audit_list"))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/audit/")
    event = AuditEvent.objects.get()
    assert (event.action, event.outcome, event.actor_label) == ("page.view", "denied", "anonymous")


def test_anonymous_reaches_login_and_health(client):
    assert client.get(reverse("core:login")).status_code == 200
    health = client.get(reverse("core:healthz"))
    # Its body, not a sign-in redirect (503 where a real broker has no worker: see test_healthz).
    assert health.status_code in (200, 503) and "status" in health.json()
    assert not AuditEvent.objects.filter(outcome="denied").exists()


def test_anonymous_htmx_request_gets_401_not_a_redirect(client):
    response = client.get(reverse("core:audit_list"), HTTP_HX_REQUEST="true")
    assert response.status_code == 401


def test_nurse_cannot_open_the_audit_trail_and_is_audited(nurse_client, nurse):
    response = nurse_client.get(reverse("core:audit_list"))
    assert response.status_code == 403
    assert b"Not allowed" in response.content
    event = AuditEvent.objects.filter(outcome="denied").get()
    assert event.actor == nurse and event.role == "nurse" and event.details["reason"] == "role:admin"


def test_nurse_cannot_open_the_django_admin(nurse_client):
    response = nurse_client.get("/django-admin/")
    assert response.status_code == 302 and "/django-admin/login/" in response["Location"]


def test_admin_sees_the_audit_trail(admin_client):
    response = admin_client.get(reverse("core:audit_list"))
    assert response.status_code == 200
    assert b"Audit trail" in response.content


def test_sign_in_and_failed_sign_in_are_audited(client, nurse):
    from tests.conftest import PASSWORD

    client.post(reverse("core:login"), {"username": "nina", "password": "wrong"})
    client.post(reverse("core:login"), {"username": "nina", "password": PASSWORD})
    outcomes = list(AuditEvent.objects.filter(action="auth.login").order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["denied", "ok"]


def test_error_pages_show_no_stack_trace(client, nurse_client):
    response = nurse_client.get("/no-such-page/")
    assert response.status_code == 404
    assert b"Traceback" not in response.content and b"There is nothing at this address" in response.content


def test_frame_ancestors_policy_replaces_x_frame_options(client):
    response = client.get(reverse("core:login"))
    assert "frame-ancestors 'self'" in response["Content-Security-Policy"]
    assert "X-Frame-Options" not in response


def test_a_launched_clinician_sees_the_patient_menu(clinician_client):
    session = clinician_client.session
    session["smart_patient_pk"] = 41
    session.save()
    response = clinician_client.get(reverse("core:preferences"))
    labels = [item["label"] for item in response.context["nav_items"]]
    assert labels[:3] == ["Findings", "Record", "Memories"]  # a launch lands on the findings, the record one tab away
    assert "Queue" not in labels and "Routing rules" not in labels


def test_login_page_points_to_the_sandbox_ehr_when_it_is_enabled(client):
    response = client.get(reverse("core:login"))
    assert b'href="/sandbox/ehr/"' in response.content

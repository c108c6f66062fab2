"""EHR registrations admin pages, our JWKS, and frame-ancestors from the registrations."""
from __future__ import annotations

import responses
from django.db import connection

from reconcile_app.audit.models import AuditEvent
from reconcile_app.smart.models import EhrRegistration
from tests.smart.sandbox_env import key_pair

FORM = {
    "name": "Clinic EHR", "iss": "https://ehr.example/fhir/", "client_id": "reconcile", "client_type": "confidential",
    "scopes": "launch openid fhirUser patient/*.rs offline_access", "backend_client_id": "reconcile-bs",
    "backend_scopes": "system/*.rs", "key_id": "k1", "jwks_url": "", "frame_ancestors": "https://ehr.example",
    "active": "on",
}


def test_only_admins_reach_registrations(nurse_client, clinician_client, client) -> None:  # type: ignore[no-untyped-def]
    assert nurse_client.get("/smart/registrations/").status_code == 403
    assert clinician_client.get("/smart/registrations/new/").status_code == 403
    assert client.get("/smart/registrations/").status_code == 403
    assert AuditEvent.objects.filter(action="access", outcome="denied").count() == 3


def test_admin_registers_a_confidential_ehr_and_the_key_stays_secret(admin_client) -> None:  # type: ignore[no-untyped-def]
    pem, _ = key_pair("rsa")
    response = admin_client.post("/smart/registrations/new/", {**FORM, "private_key_pem": pem})
    registration = EhrRegistration.objects.get()
    assert response.status_code == 302
    assert registration.iss == "https://ehr.example/fhir"  # normalized
    assert registration.private_key_pem == pem.strip()
    with connection.cursor() as cursor:
        cursor.execute("SELECT private_key_pem FROM smart_ehrregistration")
        assert "PRIVATE KEY" not in cursor.fetchone()[0]
    page = admin_client.get(f"/smart/registrations/{registration.pk}/").content.decode()
    assert "PRIVATE KEY" not in page and "A private key is stored" in page
    # Saving again with a blank key keeps the stored one.
    admin_client.post(f"/smart/registrations/{registration.pk}/", {**FORM, "name": "Renamed"})
    registration.refresh_from_db()
    assert registration.name == "Renamed" and registration.private_key_pem == pem.strip()
    assert "Renamed" in admin_client.get("/smart/registrations/").content.decode()
    assert AuditEvent.objects.filter(action="smart.registration.save").count() == 2


def test_confidential_without_key_and_bad_frame_ancestors_are_rejected(admin_client) -> None:  # type: ignore[no-untyped-def]
    response = admin_client.post("/smart/registrations/new/", {**FORM, "frame_ancestors": "* 'unsafe-inline'"})
    text = response.content.decode()
    assert response.status_code == 200 and not EhrRegistration.objects.exists()
    assert "A confidential client needs a private key." in text
    assert "must be an exact origin" in text


@responses.activate
def test_admin_runs_discovery(admin_client, db) -> None:  # type: ignore[no-untyped-def]
    registration = EhrRegistration.objects.create(name="E", iss="https://ehr.example/fhir", client_id="c")
    responses.get("https://ehr.example/fhir/.well-known/smart-configuration",
                  json={"authorization_endpoint": "https://ehr.example/a", "token_endpoint": "https://ehr.example/t"})
    response = admin_client.post(f"/smart/registrations/{registration.pk}/discover/", follow=True)
    registration.refresh_from_db()
    assert registration.discovery["token_endpoint"] == "https://ehr.example/t"
    assert "Discovery succeeded" in response.content.decode()


def test_frame_ancestors_come_from_registrations(client, db, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.smart import middleware

    monkeypatch.setattr(middleware, "_cache", (0.0, []))  # the per-process cache would hide the new row
    EhrRegistration.objects.create(name="E", iss="https://ehr.example/fhir", client_id="c", frame_ancestors="https://ehr.example")
    response = client.get("/smart/standalone/")
    assert "frame-ancestors 'self' https://ehr.example" in response["Content-Security-Policy"]
    assert "X-Frame-Options" not in response


def test_jwks_publishes_public_keys_only(client, db) -> None:  # type: ignore[no-untyped-def]
    pem, _ = key_pair("ec")
    EhrRegistration.objects.create(name="E", iss="https://ehr.example/fhir", client_id="c", private_key_pem=pem, key_id="k1")
    keys = client.get("/smart/jwks").json()["keys"]
    assert keys[0]["kid"] == "k1" and keys[0]["alg"] == "ES384" and "d" not in keys[0]


def test_admin_generates_a_key_pair_and_sees_only_the_public_half(admin_client, db) -> None:  # type: ignore[no-untyped-def]
    import jwt

    from reconcile_app.smart.backend import registration_assertion

    registration = EhrRegistration.objects.create(name="E", iss="https://ehr.example/fhir", client_id="c",
                                                  discovery={"token_endpoint": "https://ehr.example/t"})
    page = admin_client.post(f"/smart/registrations/{registration.pk}/keygen/", follow=True).content.decode()
    registration.refresh_from_db()
    assert registration.key_id and "PRIVATE KEY" in registration.private_key_pem
    assert "PRIVATE KEY" not in page and registration.key_id in page and "kty" in page
    published = admin_client.get("/smart/jwks").json()["keys"][0]
    assertion = registration_assertion(registration=registration)
    claims = jwt.decode(assertion, jwt.PyJWK(published).key, algorithms=["RS384"], audience="https://ehr.example/t")
    assert claims["iss"] == "c"


def test_django_admin_never_shows_tokens_or_keys(client, db) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import User

    from reconcile_app.smart.models import SmartLaunch

    pem, _ = key_pair("rsa")
    registration = EhrRegistration.objects.create(name="E", iss="https://ehr.example/fhir", client_id="c", private_key_pem=pem)
    launch = SmartLaunch.objects.create(registration=registration, kind="ehr", status="active",
                                        client_state={"server": {"auth": {"access_token": "secret-access-token"}}})
    client.force_login(User.objects.create_superuser("root", "root@example.org", "x" * 12))
    page = client.get(f"/django-admin/smart/smartlaunch/{launch.pk}/change/").content.decode()
    assert "secret-access-token" not in page and "EHR launch #" in page
    page = client.get(f"/django-admin/smart/ehrregistration/{registration.pk}/change/").content.decode()
    assert "PRIVATE KEY" not in page and "ehr.example" in page


def test_a_new_or_changed_registration_may_frame_the_app_at_once(client, db) -> None:  # type: ignore[no-untyped-def]
    client.get("/smart/standalone/")  # the per-process list is now cached
    registration = EhrRegistration.objects.create(name="E", iss="https://ehr.example/fhir", client_id="c",
                                                  frame_ancestors="https://ehr.example")
    assert "frame-ancestors 'self' https://ehr.example" in client.get("/smart/standalone/")["Content-Security-Policy"]
    registration.frame_ancestors = "https://ehr2.example"
    registration.save()
    policy = client.get("/smart/standalone/")["Content-Security-Policy"]
    assert "https://ehr2.example" in policy and "https://ehr.example;" not in policy and not policy.endswith("https://ehr.example")
    registration.delete()
    assert client.get("/smart/standalone/")["Content-Security-Policy"].endswith("frame-ancestors 'self'")

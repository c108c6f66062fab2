"""CDS Hooks: discovery and patient-view cards, one per open safety-critical finding, for a signed client."""
from __future__ import annotations

import json
import time
import uuid

import jwt
import pytest
import responses
from cryptography.hazmat.primitives.asymmetric import rsa
from django.urls import reverse

from reconcile_app.smart.models import EhrRegistration
from reconcile_app.triage.services import triage_item_dismiss

from .factories import item_create, patient_create

pytestmark = pytest.mark.django_db
ISS = "https://ehr.example.org/fhir"
JWKS = "https://ehr.example.org/jwks"
SERVICE = "http://testserver" + reverse("cds:service", kwargs={"service_id": "reconcile-patient-view"})


@pytest.fixture
def key():  # type: ignore[no-untyped-def]
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def registration(key):  # type: ignore[no-untyped-def]
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    responses.get(JWKS, json={"keys": [{**jwk, "kid": "k1", "alg": "RS384", "use": "sig"}]})
    return EhrRegistration.objects.create(name="EHR", iss=ISS, client_id="app", discovery={"jwks_uri": JWKS})


def signed(key, **claims) -> str:  # type: ignore[no-untyped-def]
    body = {"iss": ISS, "aud": SERVICE, "exp": int(time.time()) + 300, "iat": int(time.time()), "jti": str(uuid.uuid4()), **claims}
    return jwt.encode(body, key, algorithm="RS384", headers={"kid": "k1"})


def call(client, token: str, patient_id: str):  # type: ignore[no-untyped-def]
    body = {"hook": "patient-view", "hookInstance": str(uuid.uuid4()), "fhirServer": ISS, "context": {"patientId": patient_id, "userId": "Practitioner/1"}}
    return client.post(SERVICE, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_discovery_lists_the_patient_view_service(client):
    services = client.get("/cds-services").json()["services"]
    assert services[0]["hook"] == "patient-view" and services[0]["id"] == "reconcile-patient-view"


@responses.activate
def test_one_card_per_open_safety_critical_finding(client, key, registration, nurse):
    patient = patient_create(fhir_id="pat-cds", registration=registration)
    a = item_create(patient=patient, safety_critical=True)
    b = item_create(patient=patient, safety_critical=True)
    item_create(patient=patient, safety_critical=False, severity="low")
    triage_item_dismiss(item=b, user=nurse, reason="duplicate")
    response = call(client, signed(key), "pat-cds")
    assert response.status_code == 200
    cards = response.json()["cards"]
    assert len(cards) == 1
    card = cards[0]
    assert card["indicator"] == "critical" and len(card["summary"]) <= 140
    link = card["links"][0]
    assert link["type"] == "smart" and link["url"].endswith("/smart/launch")
    assert json.loads(link["appContext"]) == {"finding": a.finding_id}
    assert "lisinopril" not in json.dumps(card).lower()  # ids and categories only
    from reconcile_app.audit.models import AuditEvent

    assert AuditEvent.objects.filter(action="cds.patient_view", patient_pk=patient.pk, details__cards=1).exists()


@responses.activate
def test_other_ehrs_patients_with_the_same_id_are_not_shown(client, key, registration):
    other = EhrRegistration.objects.create(name="Other", iss="https://other.example.org/fhir", client_id="x")
    item_create(patient=patient_create(fhir_id="pat-same", registration=other))
    assert call(client, signed(key), "pat-same").json()["cards"] == []


@responses.activate
def test_bad_signature_wrong_audience_and_unknown_issuer_are_401(client, key, registration):
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert call(client, signed(stranger), "pat-1").status_code == 401
    assert call(client, signed(key, aud="https://elsewhere/cds-services/x"), "pat-1").status_code == 401
    assert call(client, signed(key, iss="https://unknown.example.org"), "pat-1").status_code == 401
    assert call(client, "not-a-jwt", "pat-1").status_code == 401


@responses.activate
def test_malformed_hook_is_400(client, key, registration):
    response = client.post(SERVICE, json.dumps({"hook": "order-select"}), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {signed(key)}")
    assert response.status_code == 400

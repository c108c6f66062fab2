"""Encrypted fields never store clear text."""
from __future__ import annotations

import pytest
from django.db import connection

from reconcile_app.smart.models import EhrRegistration

pytestmark = pytest.mark.django_db


def test_private_key_is_encrypted_in_the_column():
    reg = EhrRegistration.objects.create(name="EHR", iss="https://ehr.example/fhir", client_id="c", private_key_pem="-----BEGIN SECRET-----")
    with connection.cursor() as cursor:
        cursor.execute("SELECT private_key_pem FROM smart_ehrregistration WHERE id = %s", [reg.pk])
        stored = cursor.fetchone()[0]
    assert stored.startswith("fernet:") and "BEGIN SECRET" not in stored
    assert EhrRegistration.objects.get(pk=reg.pk).private_key_pem == "-----BEGIN SECRET-----"


def test_encrypted_json_round_trips_and_is_not_clear_in_the_column():
    from reconcile_app.core.fields import EncryptedJSONField

    field = EncryptedJSONField()
    stored = field.get_prep_value({"access_token": "tok-123", "n": 1})
    assert stored.startswith("fernet:") and "tok-123" not in stored
    assert field.from_db_value(stored, None, None) == {"access_token": "tok-123", "n": 1}

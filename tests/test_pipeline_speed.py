"""The pipeline's shortcuts (issue 14): renewing a lease it holds, routing only what routing reads."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reconcile_app.pipeline import lease_claim, lease_renew
from reconcile_app.transcripts.models import PatientPipeline
from tests.transcripts.conftest import patient  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def test_a_holder_renews_its_lease_with_one_update(patient):
    assert lease_claim(patient_id=patient.pk, token="mine")
    PatientPipeline.objects.filter(patient_id=patient.pk).update(lease_until=timezone.now() + timedelta(seconds=2))
    with CaptureQueriesContext(connection) as queries:
        assert lease_renew(patient_id=patient.pk, token="mine")
    assert len(queries) == 1
    row = PatientPipeline.objects.get(patient_id=patient.pk)
    assert row.lease_token == "mine" and row.lease_until > timezone.now() + timedelta(seconds=20)


def test_a_lease_another_delivery_holds_is_not_renewed(patient):
    assert lease_claim(patient_id=patient.pk, token="theirs")
    assert not lease_renew(patient_id=patient.pk, token="mine")
    assert PatientPipeline.objects.get(patient_id=patient.pk).lease_token == "theirs"
    # lapsed: the next holder takes it over, as lease_claim would
    PatientPipeline.objects.filter(patient_id=patient.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert lease_renew(patient_id=patient.pk, token="mine")

"""Faults in the middle of a record pull: timeouts and 5xx on one page, a token the EHR's clock calls expired.
Each ends with the record complete and stored once, or the last good snapshot kept: nothing lost or doubled."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
import requests
import responses
from django.utils import timezone
from responses import matchers

from reconcile_app.fhir.models import RecordPull, RecordSnapshot
from reconcile_app.fhir.services import record_pull
from reconcile_app.smart.models import SmartLaunch

from .test_record_pull import BASE, PID, SEARCH, TOKEN_URL, bundle, condition, mock_ehr, patient, registration  # noqa: F401

pytestmark = pytest.mark.django_db


def conditions_in(snapshot: RecordSnapshot) -> list[str]:
    return sorted(r["id"] for r in snapshot.resources if r["resourceType"] == "Condition")


@responses.activate(assert_all_requests_are_fired=False)
def test_a_timeout_on_a_middle_page_is_retried_and_the_record_is_whole(patient) -> None:  # type: ignore[no-untyped-def]
    page2 = f"{BASE}/Condition?patient={PID}&_count=2&_offset=2"
    responses.post(TOKEN_URL, json={"access_token": "t", "expires_in": 300})
    responses.get(f"{BASE}/Patient/{PID}", json={"resourceType": "Patient", "id": PID})
    responses.get(re.compile(re.escape(f"{BASE}/Condition?patient={PID}&_count=")), json=bundle([condition(1), condition(2)], page2))
    responses.get(page2, body=requests.Timeout("slow"))  # the second page times out once...
    responses.get(page2, json=bundle([condition(3)]))  # ...and answers when asked again
    responses.get(SEARCH, json=bundle([]))

    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.OK, pull.error
    assert conditions_in(pull.snapshot) == ["c1", "c2", "c3"]
    assert RecordSnapshot.objects.filter(patient=patient).count() == 1


@responses.activate(assert_all_requests_are_fired=False)
def test_a_pull_that_fails_mid_way_then_succeeds_stores_one_new_version(patient, settings) -> None:  # type: ignore[no-untyped-def]
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1)])]})
    first = record_pull(patient=patient)
    responses.reset()
    settings.FHIR_PAGE_RETRIES = 0
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1), condition(2)])]}, broken="Procedure")
    failed = record_pull(patient=patient)
    assert failed.status == RecordPull.Status.FAILED and failed.retryable
    assert list(RecordSnapshot.objects.filter(patient=patient).values_list("pk", flat=True)) == [first.snapshot_id]

    responses.reset()  # the retry finds the EHR back
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1), condition(2)])]})
    retried = record_pull(patient=patient)
    assert retried.status == RecordPull.Status.OK
    assert RecordSnapshot.objects.filter(patient=patient).count() == 2
    assert conditions_in(retried.snapshot) == ["c1", "c2"]
    responses.reset()
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1), condition(2)])]})
    again = record_pull(patient=patient)  # the same content again: no third version
    assert again.snapshot_id == retried.snapshot_id and RecordSnapshot.objects.filter(patient=patient).count() == 2


@responses.activate(assert_all_requests_are_fired=False)
def test_a_cached_token_the_ehrs_clock_calls_expired_is_renewed_once(patient, registration) -> None:  # type: ignore[no-untyped-def]
    # Our clock says the cached system token has four minutes left; the EHR's clock is ahead and says it
    # has expired. The first read is refused, the token renewed once, the pull completes.
    SmartLaunch.objects.create(registration=registration, kind=SmartLaunch.Kind.BACKEND, status=SmartLaunch.Status.ACTIVE,
                               client_state={"access_token": "stale"}, expires_at=timezone.now() + timedelta(minutes=4))
    responses.post(TOKEN_URL, json={"access_token": "fresh", "expires_in": 300})
    stale, fresh = ({"Authorization": "Bearer stale"}, {"Authorization": "Bearer fresh"})
    responses.get(f"{BASE}/Patient/{PID}", status=401, match=[matchers.header_matcher(stale)])
    responses.get(f"{BASE}/Patient/{PID}", json={"resourceType": "Patient", "id": PID}, match=[matchers.header_matcher(fresh)])
    responses.get(re.compile(re.escape(f"{BASE}/Condition?")), json=bundle([condition(1)]), match=[matchers.header_matcher(fresh)])
    responses.get(SEARCH, json=bundle([]), match=[matchers.header_matcher(fresh)])

    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.OK, pull.error
    assert conditions_in(pull.snapshot) == ["c1"]
    token_calls = [c for c in responses.calls if c.request.url == TOKEN_URL]
    assert len(token_calls) == 1
    assert SmartLaunch.objects.filter(kind=SmartLaunch.Kind.BACKEND, status=SmartLaunch.Status.ACTIVE).count() == 1


@responses.activate(assert_all_requests_are_fired=False)
def test_a_search_refused_mid_pull_by_a_token_expiring_on_the_ehr_renews_and_completes(patient, registration) -> None:  # type: ignore[no-untyped-def]
    # The token expires (by the EHR's clock) between the Patient read and the searches running side by side.
    responses.post(TOKEN_URL, json={"access_token": "first", "expires_in": 300})
    responses.post(TOKEN_URL, json={"access_token": "second", "expires_in": 300})
    first, second = ({"Authorization": "Bearer first"}, {"Authorization": "Bearer second"})
    responses.get(f"{BASE}/Patient/{PID}", json={"resourceType": "Patient", "id": PID}, match=[matchers.header_matcher(first)])
    for _ in range(2):  # refused on its thread, and once more on the calling thread before the renewal
        responses.get(re.compile(re.escape(f"{BASE}/Condition?")), status=401, match=[matchers.header_matcher(first)])
    responses.get(re.compile(re.escape(f"{BASE}/Condition?")), json=bundle([condition(7)]), match=[matchers.header_matcher(second)])
    responses.get(re.compile(re.escape(BASE) + r"/(?!Condition)[A-Za-z]+\?.*"), json=bundle([]))

    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.OK, pull.error
    assert conditions_in(pull.snapshot) == ["c7"]
    assert RecordSnapshot.objects.filter(patient=patient).count() == 1

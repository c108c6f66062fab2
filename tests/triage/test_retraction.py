"""Retraction of a written-back resource when its source is withdrawn: marked entered-in-error without
the patient's words (or deleted where preferred), falling back to the other way, retried and visible
like the write itself; a write not yet sent is cancelled instead (HTTP stubs)."""
from __future__ import annotations

import json

import pytest
import responses

from reconcile_app.audit.models import AuditEvent
from reconcile_app.triage.models import Retraction, WriteBack
from reconcile_app.triage.services import retraction_retry, writebacks_withdraw
from reconcile_app.triage.writeback import RETRACTED_TEXT

from .factories import item_create
from .test_writeback import BASE, CITED, _confirm, _patient

pytestmark = pytest.mark.django_db
URL = f"{BASE}/DetectedIssue/di-1"
WRITTEN = {"resourceType": "DetectedIssue", "id": "di-1", "status": "final", "meta": {"versionId": "1"},
           "patient": {"reference": "Patient/pat-a"}, "implicated": [{"reference": "MedicationRequest/medrx-001"}],
           "identifier": [{"system": "https://reconcile.example.org/fhir/finding", "value": "1"}],
           "evidence": [{"detail": [{"display": 'Patient on 2026-01-05: "I stopped the lisinopril"'}]}],
           "detail": "Record lists lisinopril as active.\n\nPatient-reported: Stopped lisinopril"}


def _written(nurse, capture):  # type: ignore[no-untyped-def]
    responses.post(f"{BASE}/DetectedIssue", status=201, json={"resourceType": "DetectedIssue", "id": "di-1"})
    item = item_create(patient=_patient(), citations=CITED)
    wb = _confirm(item, nurse, capture)
    assert wb.status == "done" and wb.finding_id == item.finding_id
    return item, wb


def _withdraw(item, capture):  # type: ignore[no-untyped-def]
    with capture(execute=True):
        counts = writebacks_withdraw(findings=[item.finding])
    return counts, Retraction.objects.get(writeback__item=item)


@responses.activate
def test_a_written_issue_is_marked_entered_in_error_without_the_patients_words(nurse, django_capture_on_commit_callbacks):
    item, wb = _written(nurse, django_capture_on_commit_callbacks)
    responses.get(URL, json=WRITTEN)
    responses.put(URL, json={**WRITTEN, "status": "entered-in-error"})
    counts, retraction = _withdraw(item, django_capture_on_commit_callbacks)
    assert counts == {"retractions": 1, "cancelled": 0}
    assert (retraction.status, retraction.method, retraction.attempts) == ("done", "entered-in-error", 1)
    put = responses.calls[-1].request
    body = json.loads(put.body)
    assert put.method == "PUT" and put.headers["If-Match"] == 'W/"1"'
    assert body["status"] == "entered-in-error" and body["detail"] == RETRACTED_TEXT and "evidence" not in body
    assert "lisinopril" not in json.dumps({k: v for k, v in body.items() if k != "implicated"}).lower()
    assert body["identifier"] == WRITTEN["identifier"] and body["implicated"] == WRITTEN["implicated"]
    assert item.events.filter(action="retracted").exists()
    assert AuditEvent.objects.get(action="triage.retraction").details["method"] == "entered-in-error"
    wb.refresh_from_db()
    assert wb.status == "done"  # the write stays on record; the retraction hangs off it


@responses.activate
def test_deleting_is_used_where_preferred_and_each_way_falls_back_to_the_other(nurse, settings, django_capture_on_commit_callbacks):
    settings.RETRACTION_PREFER_DELETE = True
    item, _ = _written(nurse, django_capture_on_commit_callbacks)
    responses.get(URL, json=WRITTEN)
    responses.delete(URL, status=405)  # this EHR keeps what apps wrote: entered-in-error instead
    responses.put(URL, json=WRITTEN)
    _, retraction = _withdraw(item, django_capture_on_commit_callbacks)
    assert (retraction.status, retraction.method) == ("done", "entered-in-error")
    assert [c.request.method for c in responses.calls[-3:]] == ["GET", "DELETE", "PUT"]


@responses.activate
def test_a_resource_already_gone_counts_as_retracted(nurse, django_capture_on_commit_callbacks):
    item, _ = _written(nurse, django_capture_on_commit_callbacks)
    responses.get(URL, status=410)
    _, retraction = _withdraw(item, django_capture_on_commit_callbacks)
    assert (retraction.status, retraction.method) == ("done", "absent")


@responses.activate
def test_an_unreachable_ehr_is_retried_then_failed_visibly_and_retried_on_request(nurse, eager_retries, django_capture_on_commit_callbacks):
    item, _ = _written(nurse, django_capture_on_commit_callbacks)
    responses.get(URL, status=503)
    _, retraction = _withdraw(item, django_capture_on_commit_callbacks)
    assert retraction.status == "failed" and retraction.attempts == 6 and "gave up after 6 tries" in retraction.last_error
    responses.replace(responses.GET, URL, json=WRITTEN)
    responses.put(URL, json=WRITTEN)
    with django_capture_on_commit_callbacks(execute=True):
        retraction = retraction_retry(retraction=retraction, user=nurse)
    retraction.refresh_from_db()
    assert retraction.status == "done" and AuditEvent.objects.filter(action="triage.retraction_retry").exists()


@responses.activate
def test_a_refused_grant_fails_at_once(nurse, django_capture_on_commit_callbacks):
    item, _ = _written(nurse, django_capture_on_commit_callbacks)
    responses.get(URL, json=WRITTEN)
    responses.put(URL, status=403)
    responses.delete(URL, status=403)
    _, retraction = _withdraw(item, django_capture_on_commit_callbacks)
    assert retraction.status == "failed" and retraction.attempts == 1 and "no grant" in retraction.last_error


@responses.activate
def test_a_write_not_yet_sent_is_cancelled_and_never_goes_out(nurse, django_capture_on_commit_callbacks):
    responses.post(f"{BASE}/DetectedIssue", status=503)
    item = item_create(patient=_patient(), citations=CITED)
    with django_capture_on_commit_callbacks(execute=False):  # confirmed; the write is still queued
        from reconcile_app.triage.services import triage_item_confirm

        triage_item_confirm(item=item, user=nurse)
    counts = writebacks_withdraw(findings=[item.finding])
    assert counts == {"retractions": 0, "cancelled": 1}
    wb = WriteBack.objects.get(item=item)
    assert wb.status == "cancelled" and not Retraction.objects.exists()
    from reconcile_app.triage.services import writeback_send

    assert writeback_send(writeback_id=wb.pk).status == "cancelled" and len(responses.calls) == 0

"""Provenance of any finding, on a page and as FHIR: finding -> memory -> quoted turns -> upload hash;
finding -> FHIR resource id and version; every lifecycle change as an AuditEvent. The export validates
with fhir.resources; every view is audited; a clinician sees only the launched patient's findings."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse
from fhir.resources.R4B.bundle import Bundle

from reconcile_app.audit.models import AuditEvent
from reconcile_app.ledger.provenance import FINDING_SYSTEM, MEMORY_SYSTEM, UPLOAD_SYSTEM, provenance_validate, resources_of
from reconcile_app.transcripts.services import session_withdraw
from tests.triage.factories import finding_create, item_create, patient_create

pytestmark = pytest.mark.django_db


def _export(client, pk):  # type: ignore[no-untyped-def]
    response = client.get(reverse("ledger:finding_provenance_export", args=[pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/fhir+json"
    return json.loads(response.content)


def test_the_export_is_valid_fhir_and_follows_the_chain_to_the_upload_and_the_resource_versions(nurse_client) -> None:  # type: ignore[no-untyped-def]
    item = item_create()
    finding = item.finding
    bundle = _export(nurse_client, finding.pk)
    Bundle.model_validate(bundle)
    provenance_validate(bundle)
    finding_prov, memory_prov = resources_of(bundle, "Provenance")
    assert finding_prov["target"][0]["identifier"] == {"system": FINDING_SYSTEM, "value": str(finding.pk)}
    whats = [e["what"] for e in finding_prov["entity"]]
    assert {"system": MEMORY_SYSTEM, "value": str(finding.memory_id)} in [w.get("identifier") for w in whats]
    assert any(w.get("reference") == "MedicationRequest/medrx-lisinopril" for w in whats)  # the cited resource, by id
    quoted = [e for e in memory_prov["entity"] if e["role"] == "quotation"]
    assert [q["what"]["identifier"]["value"] for q in quoted] == [f"{finding.session.external_id}/{finding.memory.turn_ids[0]}"]
    upload = next(e for e in memory_prov["entity"] if e["what"]["identifier"]["system"] == UPLOAD_SYSTEM)
    assert upload["what"]["identifier"]["value"] == finding.session.upload.sha256
    assert AuditEvent.objects.filter(action="ledger.provenance_export", object_id=str(finding.pk)).exists()


def test_a_cited_resources_exact_version_is_in_the_provenance(nurse_client) -> None:  # type: ignore[no-untyped-def]
    order = {"resourceType": "MedicationRequest", "id": "m-9", "status": "active", "meta": {"versionId": "7", "lastUpdated": "2026-01-02T03:04:05Z"}}
    patient = patient_create(resources=[order])
    from reconcile_app.reconciliation.models import Finding
    from reconcile_app.reconciliation.selectors import finding_justification

    finding = finding_create(patient=patient, citations=[{"resourceType": "MedicationRequest", "id": "m-9", "display": "Metformin"}])
    Finding.objects.filter(pk=finding.pk).update(justification=finding_justification(finding))  # as the pipeline stores it
    bundle = _export(nurse_client, finding.pk)
    (what,) = [e["what"] for e in resources_of(bundle, "Provenance")[0]["entity"] if e["what"].get("type") == "MedicationRequest"]
    assert what["reference"] == "MedicationRequest/m-9/_history/7" and "lastUpdated 2026-01-02T03:04:05Z" in what["display"]
    page = nurse_client.get(reverse("ledger:finding_provenance", args=[finding.pk])).content.decode()
    assert "MedicationRequest/m-9" in page and "2026-01-02T03:04:05Z" in page


def test_every_lifecycle_change_is_an_audit_event_and_a_withdrawn_source_leaves_no_words(nurse_client, admin_user) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app import pipeline  # noqa: F401  (its receiver hands the withdrawal to the ledger)

    item = item_create()
    finding = item.finding
    session_withdraw(session_id=finding.session_id, user=admin_user, reason="patient asked")
    bundle = _export(nurse_client, finding.pk)
    provenance_validate(bundle)
    events = resources_of(bundle, "AuditEvent")
    codes = [e["subtype"][0]["code"] for e in events]
    assert "revoke" in codes and "revoked" in codes and "withdrawn" in codes  # memory, finding, queue item
    revoke = events[codes.index("revoke")]
    assert revoke["agent"] == [{"who": {"display": admin_user.username}, "requestor": True}]
    assert "patient asked" in revoke["outcomeDesc"]
    text = json.dumps(bundle)
    assert "lisinopril about two weeks ago" not in text  # the quote is gone with the consent
    page = nurse_client.get(reverse("ledger:finding_provenance", args=[finding.pk])).content.decode()
    assert "consent withdrawn" in page and "removed (consent withdrawn)" in page


def test_a_clinician_sees_the_provenance_of_the_launched_patient_only(clinician_client) -> None:  # type: ignore[no-untyped-def]
    mine, other = item_create(), item_create()
    session = clinician_client.session
    session["smart_patient_pk"] = mine.patient_id
    session.save()
    assert clinician_client.get(reverse("ledger:finding_provenance", args=[mine.finding_id])).status_code == 200
    assert clinician_client.get(reverse("ledger:finding_provenance", args=[other.finding_id])).status_code == 403
    assert clinician_client.get(reverse("ledger:finding_provenance_export", args=[other.finding_id])).status_code == 403
    assert clinician_client.get(reverse("ledger:finding_provenance", args=[999999])).status_code == 403  # same answer
    assert AuditEvent.objects.filter(action="access", outcome="denied").count() == 3


def test_the_finding_page_links_to_its_provenance(nurse_client) -> None:  # type: ignore[no-untyped-def]
    item = item_create()
    page = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert reverse("ledger:finding_provenance", args=[item.finding_id]) in page
    assert reverse("ledger:memory_correct", args=[item.finding.memory_id]) in page

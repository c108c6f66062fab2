"""Small factories: real rows from Patient to Finding, so triage is tested on the true schema."""
from __future__ import annotations

import hashlib
import itertools
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Any

from reconcile_app.fhir.models import Patient, RecordSnapshot
from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.reconciliation.models import Finding, ReconciliationRun
from reconcile_app.transcripts.models import Session, Turn, Upload

_seq = itertools.count(1)
BASE_TIME = datetime(2026, 1, 5, 18, 0, tzinfo=dt_timezone.utc)

LISINOPRIL = {
    "resourceType": "MedicationRequest", "id": "medrx-lisinopril", "status": "active", "intent": "order",
    "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "314076",
                                              "display": "lisinopril 10 MG Oral Tablet"}], "text": "Lisinopril 10 mg tablet"},
    "authoredOn": "2025-06-01", "requester": {"display": "Dr. Rivera"},
    "dosageInstruction": [{"text": "1 tablet by mouth daily"}],
}
PENICILLIN = {
    "resourceType": "AllergyIntolerance", "id": "allergy-pcn",
    "clinicalStatus": {"coding": [{"code": "active"}]},
    "code": {"coding": [{"system": "http://snomed.info/sct", "code": "764146007", "display": "Penicillin"}]},
    "reaction": [{"manifestation": [{"text": "Hives"}]}],
}
DIABETES = {
    "resourceType": "Condition", "id": "cond-t2dm", "clinicalStatus": {"coding": [{"code": "active"}]},
    "code": {"coding": [{"system": "http://snomed.info/sct", "code": "44054006", "display": "Type 2 diabetes mellitus"}]},
    "onsetDateTime": "2019-03-01",
}


def patient_create(*, name: str = "", fhir_id: str = "", registration: Any = None, resources: list[dict] | None = None) -> Patient:
    n = next(_seq)
    fhir_id = fhir_id or f"pat-{n}"
    patient = Patient.objects.create(fhir_id=fhir_id, display_name=name or f"Test Patient {n}", registration=registration,
                                     birth_date=datetime(1960, 4, 2).date(), sex="female")
    resources = resources if resources is not None else [LISINOPRIL, PENICILLIN, DIABETES]
    all_resources = [{"resourceType": "Patient", "id": fhir_id, "birthDate": "1960-04-02", "gender": "female",
                      "name": [{"text": patient.display_name}]}, *resources]
    body = repr(all_resources).encode()
    RecordSnapshot.objects.create(patient=patient, version=1, source=RecordSnapshot.Source.BUNDLE, fetched_at=BASE_TIME,
                                  content_sha256=hashlib.sha256(body).hexdigest(), resources=all_resources,
                                  resource_counts={"MedicationRequest": 1})
    return patient


def session_create(*, patient: Patient, turns: list[tuple[str, str]] | None = None, platform: Any = None) -> Session:
    n = next(_seq)
    raw = f"upload {n}".encode()
    upload = Upload.objects.create(patient=patient, patient_ref=patient.reference, source=Upload.Source.API, raw=raw,
                                   sha256=hashlib.sha256(raw).hexdigest(), size=len(raw), status=Upload.Status.IMPORTED, platform=platform)
    session = Session.objects.create(patient=patient, upload=upload, external_id=f"s{n:02d}", started_at=BASE_TIME,
                                     content_sha256=hashlib.sha256(raw).hexdigest(), pipeline_status=Session.Pipeline.DONE)
    turns = turns or [
        ("coach", "How have the blood pressure pills been going?"),
        ("patient", "I stopped the lisinopril about two weeks ago, the cough was driving me crazy."),
        ("coach", "Thanks for telling me. Did you let Dr. Rivera know?"),
        ("patient", "Not yet."),
    ]
    for i, (speaker, text) in enumerate(turns, start=1):
        Turn.objects.create(session=session, external_id=f"{session.external_id}-t{i:02d}", seq=i, speaker=speaker,
                            at=BASE_TIME + timedelta(minutes=i), text=text)
    return session


def memory_create(*, session: Session, turn_seq: int = 2, content: str = "Stopped lisinopril two weeks ago because of a cough",
                  quote: str = "I stopped the lisinopril about two weeks ago", category: str = "medication",
                  chain_key: str = "medication:lisinopril", **extra: Any) -> Memory:
    run, _ = ExtractionRun.objects.get_or_create(session=session, engine="rules", engine_version="1", input_sha256=session.content_sha256,
                                                 defaults={"status": ExtractionRun.Status.DONE})
    turn = session.turns.get(seq=turn_seq)
    return Memory.objects.create(
        patient=session.patient, session=session, run=run, turn=turn, turn_ids=[turn.external_id], seq=next(_seq),
        category=category, content=content, quote=quote, quote_start=0, quote_end=len(quote), speaker=turn.speaker,
        event_time_text="about two weeks ago", mention_time=turn.at, engine="rules", engine_version="1", chain_key=chain_key,
        content_sha256=hashlib.sha256(f"{content}{next(_seq)}".encode()).hexdigest(), **extra,
    )


def finding_create(*, patient: Patient | None = None, kind: str = "contradiction", severity: str = "high",
                   safety_critical: bool = True, category: str = "medication", citations: list[dict] | None = None,
                   session: Session | None = None, memory: Memory | None = None, created_at: datetime | None = None) -> Finding:
    patient = patient or patient_create()
    session = session or session_create(patient=patient)
    memory = memory or memory_create(session=session)
    snapshot = patient.snapshots.order_by("-version").first()
    run, _ = ReconciliationRun.objects.get_or_create(session=session, snapshot=snapshot, engine="rules", engine_version="1",
                                                     defaults={"status": ReconciliationRun.Status.DONE})
    if citations is None:
        citations = [{"resourceType": "MedicationRequest", "id": "medrx-lisinopril", "system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                      "code": "314076", "display": "lisinopril 10 MG Oral Tablet"}]
    finding = Finding.objects.create(
        run=run, memory=memory, patient=patient, session=session, snapshot=snapshot, kind=kind, severity=severity,
        safety_critical=safety_critical, category=category, citations=citations,
        explanation="The record lists lisinopril as active; the patient says they stopped it.",
        rule="med.stopped_active", engine="rules", engine_version="1",
    )
    if created_at is not None:
        Finding.objects.filter(pk=finding.pk).update(created_at=created_at)
        finding.refresh_from_db()
    return finding


def item_create(**kwargs: Any):  # type: ignore[no-untyped-def]
    """A finding routed through the real service (default rules from the data migration)."""
    from reconcile_app.triage.services import triage_items_route

    finding = finding_create(**kwargs)
    (item,) = triage_items_route(findings=[finding])
    return item

"""Write side of the clinical stream: patients and versioned snapshots."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import date

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from .clinical import build_clinical_record, resources_from_bundle
from .models import Patient, RecordSnapshot


def resources_sha256(resources: list[dict]) -> str:
    """Order-independent content hash: the same record pulled twice hashes the same."""
    canonical = sorted(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in resources)
    return hashlib.sha256("\n".join(canonical).encode()).hexdigest()


@transaction.atomic
def patient_upsert_from_resource(*, resource: dict, registration: object | None = None) -> Patient:
    """Create or refresh the local Patient row from a FHIR Patient resource."""
    info = build_clinical_record([resource]).patient
    if not info.id:
        raise ValueError("Patient resource has no id")
    birth: date | None
    try:
        birth = date.fromisoformat(info.birth_date[:10]) if info.birth_date else None
    except ValueError:
        birth = None
    patient, _ = Patient.objects.update_or_create(
        registration=registration,
        fhir_id=info.id,
        defaults={
            "display_name": info.name[:200],
            "birth_date": birth,
            "sex": info.sex[:20],
            "identifiers": [{"system": s, "value": v} for s, v in info.identifiers],
        },
    )
    return patient


def snapshot_store(*, patient: Patient, resources: list[dict], source: str) -> RecordSnapshot:
    """Store a snapshot; the same content as an existing version returns that version."""
    digest = resources_sha256(resources)
    existing = RecordSnapshot.objects.filter(patient=patient, content_sha256=digest).first()
    if existing is not None:
        return existing
    record = build_clinical_record(resources)
    counts = Counter(str(r.get("resourceType", "?")) for r in resources if isinstance(r, dict))
    for _ in range(3):  # two concurrent pulls may race for the next version number
        try:
            with transaction.atomic():
                latest = RecordSnapshot.objects.filter(patient=patient).aggregate(v=Max("version"))["v"] or 0
                return RecordSnapshot.objects.create(
                    patient=patient,
                    version=latest + 1,
                    source=source,
                    fetched_at=timezone.now(),
                    content_sha256=digest,
                    resources=resources,
                    resource_counts=dict(counts),
                    warnings=record.warnings,
                )
        except IntegrityError:
            existing = RecordSnapshot.objects.filter(patient=patient, content_sha256=digest).first()
            if existing is not None:
                return existing
    raise IntegrityError("could not allocate a snapshot version")


@transaction.atomic
def snapshot_import_bundle(*, bundle: dict, registration: object | None = None) -> RecordSnapshot:
    """Load a FHIR Bundle (collection) as a patient's record: used by replay and demo data."""
    resources = resources_from_bundle(bundle)
    patients = [r for r in resources if r.get("resourceType") == "Patient"]
    if len(patients) != 1:
        raise ValueError(f"bundle must hold exactly one Patient, found {len(patients)}")
    patient = patient_upsert_from_resource(resource=patients[0], registration=registration)
    return snapshot_store(patient=patient, resources=resources, source=RecordSnapshot.Source.BUNDLE)

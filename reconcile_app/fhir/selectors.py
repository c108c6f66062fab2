"""Reads of the clinical stream."""
from __future__ import annotations

from functools import lru_cache

from .clinical import ClinicalRecord, build_clinical_record
from .models import Patient, RecordSnapshot


def snapshot_latest(*, patient: Patient) -> RecordSnapshot | None:
    return RecordSnapshot.objects.filter(patient=patient).order_by("-version").first()


@lru_cache(maxsize=64)
def _record_for(snapshot_id: int, content_sha256: str) -> ClinicalRecord:
    snapshot = RecordSnapshot.objects.get(pk=snapshot_id)
    return build_clinical_record(snapshot.resources)


def clinical_record_for(*, snapshot: RecordSnapshot) -> ClinicalRecord:
    """Snapshots are immutable, so the normalized view is cached by id + hash."""
    return _record_for(snapshot.pk, snapshot.content_sha256)

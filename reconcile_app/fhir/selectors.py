"""Reads of the clinical stream."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Max, OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest
from django.utils import timezone

from reconcile_app.core.decorators import deny
from reconcile_app.core.roles import Role, user_roles

from .clinical import ClinicalRecord, SafetyContext, build_clinical_record, safety_context
from .models import Patient, RecordPull, RecordSnapshot


def snapshot_latest(*, patient: Patient | int) -> RecordSnapshot | None:
    """Without its resources: the raw JSON (megabytes for a long record) is read only by
    clinical_record_for, once per snapshot, not on every call that needs the row."""
    return RecordSnapshot.objects.filter(patient=patient).defer("resources").order_by("-version").first()


# Normalized records by (snapshot id, content hash): snapshots never change. Least recently used out first.
_RECORDS: OrderedDict[tuple[int, str], ClinicalRecord] = OrderedDict()
RECORDS_MAX = 64
_RECORDS_LOCK = threading.Lock()


def _record_for(snapshot_id: int, content_sha256: str) -> ClinicalRecord:
    key = (snapshot_id, content_sha256)
    record = _RECORDS.get(key)
    if record is None:
        resources = RecordSnapshot.objects.filter(pk=snapshot_id).values_list("resources", flat=True).get()
        record = build_clinical_record(resources)
    record_cache_put(snapshot_id=snapshot_id, content_sha256=content_sha256, record=record)
    return record


def record_cache_put(*, snapshot_id: int, content_sha256: str, record: ClinicalRecord) -> None:
    """Keep the normalized record of a snapshot (snapshot_store gives the one it built from the resources it
    stored, so the first read of a new snapshot does not decode its JSON again)."""
    with _RECORDS_LOCK:  # threaded servers share it
        _RECORDS[(snapshot_id, content_sha256)] = record
        _RECORDS.move_to_end((snapshot_id, content_sha256))
        while len(_RECORDS) > RECORDS_MAX:
            _RECORDS.popitem(last=False)


def clinical_record_for(*, snapshot: RecordSnapshot) -> ClinicalRecord:
    """Snapshots are immutable, so the normalized view is cached by id + hash."""
    return _record_for(snapshot.pk, snapshot.content_sha256)


def clinical_record_for_id(*, snapshot_id: int) -> ClinicalRecord:
    """The same by id alone (a finding's snapshot_id): one small query for the hash, never the row's
    resources, which a lazy `finding.snapshot` would read and decode whole."""
    digest = RecordSnapshot.objects.filter(pk=snapshot_id).values_list("content_sha256", flat=True).get()
    return _record_for(snapshot_id, digest)


def pull_latest(*, patient: Patient) -> RecordPull | None:
    return RecordPull.objects.filter(patient=patient).order_by("-started_at", "-pk").first()


def pull_last_ok(*, patient: Patient) -> RecordPull | None:
    return RecordPull.objects.filter(patient=patient, status=RecordPull.Status.OK).order_by("-finished_at", "-pk").first()


def pull_stalled(pull: RecordPull | None) -> bool:
    """A pull still RUNNING past the task time limit died with its worker: stop waiting for it."""
    if pull is None or pull.status != RecordPull.Status.RUNNING:
        return False
    limit = timedelta(seconds=int(getattr(settings, "CELERY_TASK_TIME_LIMIT", 900)))
    return pull.started_at < timezone.now() - limit


@dataclass
class ClinicalState:
    """What every patient page shows of the clinical stream, and whether a pull is still on its way."""

    snapshot: RecordSnapshot | None
    record: ClinicalRecord | None
    safety: SafetyContext | None
    pull: RecordPull | None
    last_ok: RecordPull | None
    stalled: bool

    @property
    def pending(self) -> bool:
        """A pull was requested and has not finished: pages poll until it has."""
        return self.pull is not None and self.pull.status == RecordPull.Status.RUNNING and not self.stalled


def patient_clinical_state(*, patient: Patient) -> ClinicalState:
    snapshot = snapshot_latest(patient=patient)
    record = clinical_record_for(snapshot=snapshot) if snapshot else None
    pull = pull_latest(patient=patient)
    return ClinicalState(
        snapshot=snapshot, record=record, safety=safety_context(record) if record else None,
        pull=pull, last_ok=pull_last_ok(patient=patient), stalled=pull_stalled(pull),
    )


def patient_list() -> QuerySet[Patient]:
    """Patients with their latest snapshot version and last pull, for the nurse's list."""
    last_pull = RecordPull.objects.filter(patient=OuterRef("pk")).order_by("-started_at", "-pk")
    return (
        Patient.objects.select_related("registration")
        .annotate(
            snapshot_version=Max("snapshots__version"),
            last_pull_status=Subquery(last_pull.values("status")[:1]),
            last_pull_at=Subquery(last_pull.values("started_at")[:1]),
        )
        .order_by("display_name", "pk")
    )


def patient_get_for_user(*, request: HttpRequest, patient_pk: int) -> Patient:
    """The one gate to a patient's data: nurses and admins see any patient; a clinician only the
    patient of the SMART launch bound to this browser session. Denials are audited (403)."""
    roles = user_roles(request.user)
    if roles & {Role.NURSE, Role.ADMIN}:
        patient = Patient.objects.select_related("registration").filter(pk=patient_pk).first()
        if patient is None:
            raise Http404("No such patient")
        return patient
    if Role.CLINICIAN in roles and request.session.get("smart_patient_pk") == patient_pk:
        patient = Patient.objects.select_related("registration").filter(pk=patient_pk).first()
        if patient is not None:
            return patient
    # Same answer whether or not the patient exists: a clinician learns nothing about other records.
    raise deny(request, reason="patient_not_in_launch", patient_pk=patient_pk)

"""Reads of transcripts: patient matching, upload and session lists, pipeline progress, platform tokens."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from reconcile_app.fhir.models import Patient

from .models import CoachingPlatform, Session, Upload


def patient_match(*, reference: str) -> Patient | None:
    """`Patient/<id>` by FHIR id, or `system|value` against Patient.identifier; None unless exactly one."""
    if not reference:
        return None
    if reference.startswith("Patient/"):
        found = list(Patient.objects.filter(fhir_id=reference.removeprefix("Patient/"))[:2])
        return found[0] if len(found) == 1 else None
    system, _, value = reference.partition("|")
    if not value:
        return None
    # JSON containment is not portable to SQLite, so narrow by text and compare exactly in Python.
    candidates = Patient.objects.filter(identifiers__icontains=value).only("id", "identifiers", "fhir_id")
    found = [p for p in candidates if any(i.get("system") == system and i.get("value") == value for i in p.identifiers or [])]
    return found[0] if len(found) == 1 else None


def upload_list(*, patient: Patient | None = None, status: str = "") -> QuerySet[Upload]:
    qs = Upload.objects.select_related("patient", "uploaded_by", "platform").defer("raw").order_by("-created_at", "-id")
    if patient is not None:
        qs = qs.filter(patient=patient)
    if status:
        qs = qs.filter(status=status)
    return qs.annotate(
        n_sessions=Count("sessions", distinct=True),
        n_done=Count("sessions", filter=Q(sessions__pipeline_status=Session.Pipeline.DONE), distinct=True),
    )


def session_list_for_upload(*, upload: Upload) -> QuerySet[Session]:
    return Session.objects.filter(upload=upload).order_by("started_at", "id").annotate(n_turns=Count("turns"))


def session_get(*, pk: int) -> Session:
    return Session.objects.select_related("patient", "upload").get(pk=pk)


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int
    withdrawn: int
    active: int  # pending or running

    @property
    def finished(self) -> bool:
        return self.active == 0

    @property
    def percent(self) -> int:
        counted = self.total - self.withdrawn
        return 100 if counted <= 0 else int(100 * self.done / counted)


def _progress(qs: QuerySet[Session]) -> Progress:
    return _progress_from_counts(dict(qs.values_list("pipeline_status").annotate(n=Count("id")).order_by()))


def upload_progress(*, upload: Upload) -> Progress:
    return _progress(Session.objects.filter(upload=upload))


def patient_progress(*, patient: Patient) -> Progress:
    return _progress(Session.objects.filter(patient=patient))


def _progress_from_counts(rows: dict[str, int]) -> Progress:
    total = sum(rows.values())
    done = rows.get(Session.Pipeline.DONE, 0)
    failed = rows.get(Session.Pipeline.FAILED, 0)
    withdrawn = rows.get(Session.Pipeline.WITHDRAWN, 0)
    return Progress(total=total, done=done, failed=failed, withdrawn=withdrawn, active=total - done - failed - withdrawn)


def patient_progress_list(*, limit: int = 200) -> list[tuple[Patient, Progress]]:
    """Every patient with sessions, in two queries (one count per patient and status)."""
    counts: dict[int, dict[str, int]] = {}
    for patient_id, status, n in Session.objects.values_list("patient_id", "pipeline_status").annotate(n=Count("id")).order_by():
        counts.setdefault(patient_id, {})[status] = n
    patients = Patient.objects.filter(pk__in=counts).order_by("display_name", "id")[:limit]
    return [(p, _progress_from_counts(counts[p.pk])) for p in patients]


def patient_blocking_session(*, patient: Patient) -> Session | None:
    """The failed session that holds back the patient's later sessions (order is strict)."""
    return Session.objects.filter(patient=patient, pipeline_status=Session.Pipeline.FAILED).order_by("started_at", "id").first()


def platform_for_token(*, token: str) -> CoachingPlatform | None:
    if not token:
        return None
    digest = hashlib.sha256(token.encode()).hexdigest()
    return CoachingPlatform.objects.filter(token_hash=digest, active=True, revoked_at__isnull=True).first()

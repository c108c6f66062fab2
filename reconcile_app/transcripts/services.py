"""Write side of transcripts: receive raw bytes, import all-or-nothing, map held uploads, withdraw consent."""
from __future__ import annotations

import hashlib
import json
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from reconcile_app.audit.services import audit_record
from reconcile_app.core.exceptions import PermanentError, ValidationFailed
from reconcile_app.fhir.models import Patient

from .access import PatientNotFound, patient_get_for_platform
from .models import CoachingPlatform, PatientPipeline, PlatformEnrolment, Session, Turn, Upload
from .parsers import ParsedSession, ParsedTranscript, lone_surrogate, parse_transcript, turns_collapse
from .selectors import patient_match
from .signals import session_withdrawn, sessions_pending

logger = logging.getLogger(__name__)


def max_upload_bytes() -> int:
    return int(getattr(settings, "TRANSCRIPT_MAX_BYTES", 5 * 1024 * 1024))


def filename_clean(name: str) -> str:
    """A file name fit to store and show: lone surrogates (undecodable bytes of a CLI path) and
    control characters replaced by U+FFFD. It is metadata, never clinical text."""
    chars = ["\ufffd" if lone_surrogate(c) is not None or not c.isprintable() else c for c in (name or "")]
    return "".join(chars)[:255]


def session_namespace(upload: Upload) -> str:
    """Whose session ids these are: a coaching platform's own, or the shared space of people and the CLI."""
    return f"platform:{upload.platform_id}" if upload.platform_id else ""


def parsed_session_sha256(session: ParsedSession) -> str:
    """Content hash of a session as imported: equal hashes mean the same conversation, word for word."""
    payload = [session.id, session.started_at.isoformat()] + [
        [t.id, t.speaker, t.speaker_label, t.at.isoformat(), t.text] for t in session.turns
    ]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def upload_receive(
    *,
    raw: bytes,
    filename: str = "",
    source: str,
    user: AbstractBaseUser | None = None,
    platform: CoachingPlatform | None = None,
    patient: Patient | None = None,
    total_size: int | None = None,
) -> Upload:
    """Store the bytes first, committed on their own, so nothing received is ever lost.

    An oversized file is recorded (size, uploader, time) but its bytes are not kept: storing them
    would defeat the limit. Callers that stop reading at the limit pass the declared `total_size`
    (the hash of an oversized file is left empty). `patient` is the intended patient, when chosen.
    """
    limit = max_upload_bytes()
    size = max(len(raw), total_size or 0)
    too_large = size > limit
    with transaction.atomic():
        upload = Upload.objects.create(
            patient=patient,
            source=source,
            filename=filename_clean(filename),
            raw=b"" if too_large else raw,
            sha256="" if too_large else hashlib.sha256(raw).hexdigest(),
            size=size,
            uploaded_by=user if user is not None and user.is_authenticated else None,
            platform=platform,
            status=Upload.Status.INVALID if too_large else Upload.Status.RECEIVED,
            errors=[f"the file is {size} bytes; the limit is {limit}"] if too_large else [],
            rejection="the file is too large" if too_large else "",
        )
        audit_record(
            action="transcript.upload",
            actor=user,
            outcome="error" if too_large else "ok",
            patient_pk=patient.pk if patient else None,
            object_type="upload",
            object_id=upload.pk,
            details={"source": source, "size": size, "sha256": upload.sha256[:16], "platform": platform.pk if platform else None},
        )
    return upload


def _check_intended_patient(parsed: ParsedTranscript, intended: Patient, *, mapped: bool) -> None:
    """A file that names another patient is refused: filing a conversation under the wrong
    person is worse than not filing it. An admin's mapping of a held upload overrides a
    reference that matches nobody (that is why it was held), never one that matches someone else."""
    if not parsed.patient:
        return
    matched = patient_match(reference=parsed.patient)
    if matched is not None and matched.pk != intended.pk:
        raise ValidationFailed("the file names another patient", errors=[f"patient: the file names {parsed.patient[:60]}, not the patient this upload is for"])
    if not mapped and matched is None and parsed.patient.startswith("Patient/") and parsed.patient != intended.reference:
        raise ValidationFailed("the file names another patient", errors=[f"patient: the file names {parsed.patient[:60]}, not {intended.reference}"])


def _platform_patient(platform: CoachingPlatform, parsed: ParsedTranscript) -> Patient:
    """A platform's upload must name a patient the platform is enrolled for; it is never held."""
    if not parsed.patient:
        raise ValidationFailed("the file names no patient", errors=["patient: a coaching platform's file must name the patient ('Patient/<id>' or 'system|value')"])
    try:
        return patient_get_for_platform(platform=platform, patient_ref=parsed.patient)
    except PatientNotFound as exc:
        raise ValidationFailed("no enrolled patient matches", errors=[exc.message]) from None


def upload_import(*, upload_id: int, start_pipeline: bool = True, actor: AbstractBaseUser | None = None, mapped: bool = False) -> Upload:
    """Parse and validate all-or-nothing, match the patient (or hold), then add only new sessions.

    Idempotent: the same file again adds nothing; a longer export adds only the sessions not seen;
    a known session id with different content is reported as a conflict and left as it was; a
    withdrawn session is never brought back by a re-sent export. Always ends in a status: an
    unexpected error marks the upload FAILED (the bytes stay) instead of escaping.
    """
    try:
        return _upload_import(upload_id=upload_id, start_pipeline=start_pipeline, actor=actor, mapped=mapped)
    except Exception as exc:  # noqa: BLE001 - whatever broke, the upload ends in a terminal status
        return upload_fail(upload_id=upload_id, reason=f"internal error ({exc.__class__.__name__}); the file is kept", actor=actor)


TERMINAL = (Upload.Status.IMPORTED, Upload.Status.WITHDRAWN, Upload.Status.INVALID, Upload.Status.FAILED)


def upload_fail(*, upload_id: int, reason: str, actor: AbstractBaseUser | None = None) -> Upload:
    """Mark an upload whose import broke off as failed, with the reason; the raw bytes stay."""
    logger.error("upload %s import failed: %s", upload_id, reason[:80])
    with transaction.atomic():
        upload = Upload.objects.select_for_update().get(pk=upload_id)
        if upload.status not in TERMINAL and upload.status != Upload.Status.HELD:
            upload.status = Upload.Status.FAILED
            upload.rejection = reason[:200]
            upload.errors = [reason[:300]]
            upload.save(update_fields=["status", "rejection", "errors", "updated_at"])
            audit_record(action="transcript.import", actor=actor, outcome="error", patient_pk=upload.patient_id,
                         object_type="upload", object_id=upload.pk, details={"reason": reason[:100]})
    return upload


def uploads_fail_stuck() -> int:
    """Beat: uploads still "received" long after they arrived never finished importing (the process
    died mid-request): they end as failed, with the reason, instead of waiting forever."""
    cutoff = timezone.now() - timedelta(seconds=int(getattr(settings, "TRANSCRIPT_STUCK_AFTER_SECONDS", 600)))
    stuck = list(Upload.objects.filter(status=Upload.Status.RECEIVED, created_at__lt=cutoff).values_list("pk", flat=True)[:500])
    for pk in stuck:
        upload_fail(upload_id=pk, reason="the import did not finish (the server stopped while reading it); upload the file again")
    return len(stuck)


def upload_refuse(*, upload_id: int, reason: str, rejection: str) -> Upload:
    """A stored upload that will not be imported (e.g. over the platform's rate limit): kept, rejected."""
    with transaction.atomic():
        upload = Upload.objects.select_for_update().get(pk=upload_id)
        if upload.status == Upload.Status.RECEIVED:
            upload.status = Upload.Status.INVALID
            upload.rejection = rejection[:200]
            upload.errors = [reason[:300]]
            upload.save(update_fields=["status", "rejection", "errors", "updated_at"])
    return upload


def _limits() -> dict[str, int]:
    return {"max_sessions": int(getattr(settings, "TRANSCRIPT_MAX_SESSIONS", 500)),
            "max_turns": int(getattr(settings, "TRANSCRIPT_MAX_TURNS", 1000))}


def _upload_import(*, upload_id: int, start_pipeline: bool, actor: AbstractBaseUser | None, mapped: bool) -> Upload:
    with transaction.atomic():
        # Lock the upload row only: PostgreSQL refuses FOR UPDATE on the nullable side of the platform join.
        upload = Upload.objects.select_for_update(of=("self",)).select_related("platform").get(pk=upload_id)
        if upload.sealed_at is not None or upload.status in TERMINAL:
            return upload
        try:
            parsed = parse_transcript(bytes(upload.raw), filename=upload.filename, max_bytes=max_upload_bytes(), **_limits())
            if upload.patient is not None:
                _check_intended_patient(parsed, upload.patient, mapped=mapped)
            elif upload.platform is not None:
                upload.patient = _platform_patient(upload.platform, parsed)
        except ValidationFailed as exc:
            upload.status = Upload.Status.INVALID
            upload.errors = exc.errors or [exc.message]
            upload.rejection = exc.message[:200]
            upload.format = str(exc.extra.get("format") or "")[:30]
            upload.save(update_fields=["status", "errors", "rejection", "format", "updated_at"])
            audit_record(action="transcript.import", actor=actor, outcome="error", patient_pk=upload.patient_id, object_type="upload",
                         object_id=upload.pk, details={"reason": "invalid", "errors": len(upload.errors)})
            return upload
        upload.format = parsed.format
        upload.patient_ref = parsed.patient[:200]
        patient = upload.patient or (patient_match(reference=parsed.patient) if parsed.patient else None)
        if patient is None:
            upload.status = Upload.Status.HELD
            upload.summary = {"sessions": [s.id for s in parsed.sessions]}
            upload.save(update_fields=["format", "patient_ref", "status", "summary", "updated_at"])
            audit_record(action="transcript.import", actor=actor, object_type="upload", object_id=upload.pk,
                         details={"outcome": "held", "sessions": len(parsed.sessions)})
            return upload
        summary = _sessions_store(upload=upload, patient=patient, parsed=parsed)
        upload.patient = patient
        upload.status = Upload.Status.IMPORTED
        upload.errors = []
        upload.summary = summary
        upload.save(update_fields=["patient", "format", "patient_ref", "status", "errors", "summary", "updated_at"])
        audit_record(action="transcript.import", actor=actor, patient_pk=patient.pk, object_type="upload", object_id=upload.pk,
                     details={"added": len(summary["added"]), "unchanged": len(summary["unchanged"]),
                              "conflicts": len(summary["conflicts"]), "withdrawn": len(summary["withdrawn"])})
        if start_pipeline and summary["added"]:
            sessions_pending.send(sender=Upload, patient_id=patient.pk)
    return upload


def _sessions_store(*, upload: Upload, patient: Patient, parsed: ParsedTranscript) -> dict[str, Any]:
    # Serialize imports per patient on the pipeline row, so two uploads of one export cannot
    # race for the same session id (the unique constraint would turn one into an error).
    PatientPipeline.objects.get_or_create(patient=patient)
    PatientPipeline.objects.select_for_update().get(patient=patient)
    namespace = session_namespace(upload)
    existing = {s.external_id: s for s in Session.objects.filter(patient=patient, namespace=namespace,
                                                                 external_id__in=[p.id for p in parsed.sessions])}
    summary: dict[str, Any] = {"sessions": [s.id for s in parsed.sessions], "added": [], "unchanged": [], "conflicts": [], "withdrawn": [],
                               "collapsed_turns": 0}
    added: list[tuple[Session, list[tuple[Any, int]]]] = []
    for ps in parsed.sessions:
        digest = parsed_session_sha256(ps)
        known = existing.get(ps.id)
        if known is not None:
            if known.withdrawn_at is not None:
                summary["withdrawn"].append(ps.id)
            elif known.content_sha256 == digest:
                summary["unchanged"].append(ps.id)
            else:
                summary["conflicts"].append({"session": ps.id, "reason": "a session with this id was imported before with different content"})
            continue
        kept = turns_collapse(ps.turns)  # a statement repeated in the session is extracted once
        added.append((Session(patient=patient, upload=upload, namespace=namespace, external_id=ps.id, started_at=ps.started_at,
                              content_sha256=digest), kept))
        summary["collapsed_turns"] += len(ps.turns) - len(kept)
        summary["added"].append(ps.id)
    # The new sessions in one INSERT and all their turns in another (in the same order as one by one: same ids).
    Session.objects.bulk_create([session for session, _ in added])
    Turn.objects.bulk_create(
        Turn(session=session, external_id=t.id, seq=i, speaker=t.speaker, speaker_label=t.speaker_label[:60], at=t.at, text=t.text,
             repeats=repeats)
        for session, kept in added for i, (t, repeats) in enumerate(kept, start=1)
    )
    return summary


def upload_map(*, upload_id: int, patient: Patient, user: AbstractBaseUser) -> Upload:
    """An admin names the patient of a held upload; the import then runs as if it had matched."""
    with transaction.atomic():
        upload = Upload.objects.select_for_update().get(pk=upload_id)
        if upload.status != Upload.Status.HELD or upload.sealed_at is not None:
            raise PermanentError("only a held upload can be mapped to a patient")
        upload.patient = patient
        upload.status = Upload.Status.RECEIVED
        upload.save(update_fields=["patient", "status", "updated_at"])
        audit_record(action="transcript.map", actor=user, patient_pk=patient.pk, object_type="upload", object_id=upload.pk,
                     details={"from_status": "held"})
    return upload_import(upload_id=upload.pk, actor=user, mapped=True)


@transaction.atomic
def session_withdraw(*, session_id: int, user: AbstractBaseUser | None, reason: str = "") -> Session:
    """Consent withdrawal for one session: everything derived from it is revoked (the pipeline's
    receiver hands it to the ledger: memories keep their rows without the words, findings and queue
    items close, write-backs are retracted in the EHR), the turns' text goes, the session row stays as
    a tombstone so a re-sent export cannot bring it back, and the audit trail keeps the decision."""
    session = Session.objects.select_for_update().get(pk=session_id)
    if session.withdrawn_at is not None:
        return session
    responses = session_withdrawn.send(sender=Session, session=session, user=user, reason=reason)
    revoked = sum(r for _, r in responses if isinstance(r, int))
    session.turns.all().delete()
    session.withdrawn_at = timezone.now()
    session.pipeline_status = Session.Pipeline.WITHDRAWN
    session.pipeline_error = ""
    session.save(update_fields=["withdrawn_at", "pipeline_status", "pipeline_error"])
    audit_record(action="transcript.withdraw", actor=user, patient_pk=session.patient_id, object_type="session", object_id=session.pk,
                 details={"memories_removed": revoked, "reason": reason[:100]})
    return session


@transaction.atomic
def upload_withdraw(*, upload_id: int, user: AbstractBaseUser | None, reason: str = "") -> Upload:
    """Withdraw every session the upload contains; keep its raw bytes, sealed (never processed again)."""
    upload = Upload.objects.select_for_update().get(pk=upload_id)
    names = list((upload.summary or {}).get("sessions", []))
    sessions = Session.objects.filter(upload=upload) | (
        Session.objects.filter(patient_id=upload.patient_id, namespace=session_namespace(upload), external_id__in=names)
        if upload.patient_id else Session.objects.none()
    )
    for session in sessions.distinct():
        session_withdraw(session_id=session.pk, user=user, reason=reason)
    upload.sealed_at = upload.sealed_at or timezone.now()
    upload.status = Upload.Status.WITHDRAWN
    upload.save(update_fields=["sealed_at", "status", "updated_at"])
    audit_record(action="transcript.withdraw", actor=user, patient_pk=upload.patient_id, object_type="upload", object_id=upload.pk,
                 details={"sessions": len(names), "reason": reason[:100]})
    return upload


def session_retry(*, session_id: int, user: AbstractBaseUser | None) -> Session:
    """Put a failed session back in the queue (its runs are reused or redone idempotently)."""
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session_id)
        if session.pipeline_status != Session.Pipeline.FAILED:
            raise PermanentError("only a failed session can be retried")
        session.pipeline_status = Session.Pipeline.PENDING
        session.pipeline_error = ""
        session.save(update_fields=["pipeline_status", "pipeline_error"])
        audit_record(action="transcript.retry", actor=user, patient_pk=session.patient_id, object_type="session", object_id=session.pk)
        sessions_pending.send(sender=Session, patient_id=session.patient_id)
    return session


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def platform_create(*, name: str, webhook_url: str = "") -> tuple[CoachingPlatform, str]:
    """A platform and its bearer token; only the hash is stored, so the token is shown once."""
    token = "rct_" + secrets.token_urlsafe(32)
    platform = CoachingPlatform.objects.create(name=name, token_hash=token_sha256(token), token_prefix=token[:12], webhook_url=webhook_url)
    audit_record(action="platform.create", object_type="platform", object_id=platform.pk, details={"prefix": platform.token_prefix})
    return platform, token


@transaction.atomic
def platform_revoke(*, platform_id: int, user: AbstractBaseUser | None = None) -> CoachingPlatform:
    platform = CoachingPlatform.objects.select_for_update().get(pk=platform_id)
    platform.active = False
    platform.revoked_at = platform.revoked_at or timezone.now()
    platform.save(update_fields=["active", "revoked_at", "updated_at"])
    audit_record(action="platform.revoke", actor=user, object_type="platform", object_id=platform.pk)
    return platform


@transaction.atomic
def platform_enrol(*, platform: CoachingPlatform, patient: Patient | None = None, organization_system: str = "",
                   user: AbstractBaseUser | None = None) -> PlatformEnrolment:
    """Let a platform file transcripts for one patient, or for every patient of an organisation."""
    if (patient is None) == (not organization_system):
        raise PermanentError("enrol a platform for one patient or for one organisation's identifier system")
    enrolment, _ = PlatformEnrolment.objects.get_or_create(platform=platform, patient=patient, organization_system=organization_system)
    audit_record(action="platform.enrol", actor=user, patient_pk=patient.pk if patient else None, object_type="platform",
                 object_id=platform.pk, details={"organization": bool(organization_system)})
    return enrolment

"""Uploads (raw, sealed, never lost), coaching sessions and their turns."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from reconcile_app.core.models import TimeStampedModel


class CoachingPlatform(TimeStampedModel):
    """A coaching platform allowed to push transcripts; one revocable token each (stored hashed)."""

    name = models.CharField(max_length=120, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=12)
    webhook_url = models.URLField(max_length=400, blank=True, help_text="Where clarification requests are delivered.")
    active = models.BooleanField(default=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class PlatformEnrolment(TimeStampedModel):
    """What a coaching platform may file transcripts for: one patient, or every patient of an
    organisation, named by the identifier system of its patient numbers (a patient is in scope when
    one of its identifiers is in that system). A platform with no enrolment can file for nobody."""

    platform = models.ForeignKey(CoachingPlatform, on_delete=models.CASCADE, related_name="enrolments")
    patient = models.ForeignKey("fhir.Patient", null=True, blank=True, on_delete=models.CASCADE, related_name="platform_enrolments")
    organization_system = models.CharField(
        max_length=200, blank=True,
        help_text="Identifier system of an organisation's patient numbers (e.g. its MRN namespace URI).",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(patient__isnull=False) & models.Q(organization_system=""))
                | (models.Q(patient__isnull=True) & ~models.Q(organization_system="")),
                name="enrolment_patient_xor_organization",
            ),
            models.UniqueConstraint(fields=["platform", "patient"], condition=models.Q(patient__isnull=False), name="enrolment_unique_patient"),
            models.UniqueConstraint(fields=["platform", "organization_system"], condition=~models.Q(organization_system=""),
                                    name="enrolment_unique_organization"),
        ]

    def __str__(self) -> str:
        return f"Enrolment #{self.pk} of platform #{self.platform_id}"


class Upload(TimeStampedModel):
    class Source(models.TextChoices):
        UI = "ui", "Upload page"
        API = "api", "Coaching platform API"
        CLI = "cli", "Command line"
        REPLAY = "replay", "Replay"

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        INVALID = "invalid", "Rejected"
        HELD = "held", "Waiting for patient mapping"
        IMPORTED = "imported", "Imported"
        WITHDRAWN = "withdrawn", "Consent withdrawn"
        # The import broke off (an internal error, or the process died): kept, with the reason.
        FAILED = "failed", "Import failed"

    patient = models.ForeignKey("fhir.Patient", null=True, blank=True, on_delete=models.PROTECT, related_name="uploads")
    patient_ref = models.CharField(max_length=200, blank=True, help_text="Patient reference or identifier named by the file.")
    source = models.CharField(max_length=10, choices=Source.choices)
    format = models.CharField(max_length=30, blank=True)
    filename = models.CharField(max_length=255, blank=True)
    raw = models.BinaryField()  # exactly the bytes received; never edited
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.PositiveIntegerField()
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    platform = models.ForeignKey(CoachingPlatform, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RECEIVED)
    errors = models.JSONField(default=list, blank=True)  # precise, user-facing validation errors
    # Why a rejected upload was rejected, in a few words ("not valid JSON", "the file is too large").
    rejection = models.CharField(max_length=200, blank=True)
    summary = models.JSONField(default=dict, blank=True)  # sessions added / unchanged / conflicting
    sealed_at = models.DateTimeField(null=True, blank=True, help_text="Set on consent withdrawal: kept, never processed again.")

    def __str__(self) -> str:
        return f"Upload #{self.pk}"


class Session(models.Model):
    class Pipeline(models.TextChoices):
        PENDING = "pending", "Queued"
        EXTRACTING = "extracting", "Extracting memories"
        RECONCILING = "reconciling", "Reconciling"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        WITHDRAWN = "withdrawn", "Withdrawn"

    patient = models.ForeignKey("fhir.Patient", on_delete=models.CASCADE, related_name="sessions")
    upload = models.ForeignKey(Upload, on_delete=models.PROTECT, related_name="sessions")
    # Session ids are the sender's: each coaching platform has its own ("platform:<pk>"), uploads by
    # people and the CLI share "". So a platform never collides with, or learns of, another's sessions.
    namespace = models.CharField(max_length=40, blank=True, default="")
    external_id = models.CharField(max_length=100)
    started_at = models.DateTimeField()
    content_sha256 = models.CharField(max_length=64)
    pipeline_status = models.CharField(max_length=12, choices=Pipeline.choices, default=Pipeline.PENDING)
    pipeline_error = models.CharField(max_length=300, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        constraints = [models.UniqueConstraint(fields=["patient", "namespace", "external_id"], name="session_unique_per_sender")]
        indexes = [models.Index(fields=["patient", "pipeline_status", "started_at"], name="session_pipeline_idx")]

    def __str__(self) -> str:
        return f"Session {self.external_id}"


class Turn(models.Model):
    class Speaker(models.TextChoices):
        PATIENT = "patient", "Patient"
        COACH = "coach", "Coach"
        OTHER = "other", "Other"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    external_id = models.CharField(max_length=100)
    seq = models.PositiveIntegerField()
    speaker = models.CharField(max_length=10, choices=Speaker.choices)
    speaker_label = models.CharField(max_length=60, blank=True, help_text="As written in the file (e.g. 'daughter').")
    at = models.DateTimeField()
    text = models.TextField()
    # How many times the speaker said this exact statement in the session: repeats are collapsed
    # into the first (the raw upload keeps every one), so a repeated sentence is extracted once.
    repeats = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "external_id"], name="turn_unique_id"),
            models.UniqueConstraint(fields=["session", "seq"], name="turn_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"Turn {self.external_id}"


class PatientPipeline(models.Model):
    """Per-patient lease: at most one pipeline run per patient, claimed with a conditional UPDATE.

    The lease holder is the Celery task id; a redelivered message (same id, after a lost worker)
    reclaims its own lease at once instead of waiting for `lease_until` to pass.
    """

    patient = models.OneToOneField("fhir.Patient", on_delete=models.CASCADE, related_name="pipeline")
    lease_token = models.CharField(max_length=64, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Pipeline of patient #{self.patient_id}"

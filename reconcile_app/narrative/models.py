"""Extraction runs and memories: append-only deltas with provenance, chains, a lifecycle and its log."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class ExtractionRun(models.Model):
    """One engine over one session's content. Unique on content hash + engine version, so a
    redelivered task finds its run instead of extracting twice."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    session = models.ForeignKey("transcripts.Session", on_delete=models.CASCADE, related_name="extraction_runs")
    engine = models.CharField(max_length=40)
    engine_version = models.CharField(max_length=40)
    input_sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    retryable = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    stats = models.JSONField(default=dict, blank=True)  # counts, token usage: never text

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "engine", "engine_version", "input_sha256"], name="extraction_run_idempotent")
        ]


class Memory(models.Model):
    """One statement. Never overwritten or deleted: a change of state is a new status with a MemoryEvent
    saying who, when and why (narrative/lifecycle.py holds the allowed transitions). A correction is a
    new memory linked to the one it corrects. Consent withdrawal keeps the row, revoked, without the
    patient's words (the content hash, turn ids and session remain for provenance)."""

    class Status(models.TextChoices):
        CURRENT = "current", "Current"
        OUTDATED = "outdated", "Outdated"
        REVOKED = "revoked", "Revoked (consent withdrawn)"
        CORRECTED = "corrected", "Corrected"
        NEEDS_REVIEW = "needs_review", "Needs review"
        REJECTED = "rejected", "Correction rejected"

    class Origin(models.TextChoices):
        EXTRACTED = "extracted", "Extracted from the conversation"
        STAFF_CORRECTION = "staff_correction", "Correction by the care team"
        PATIENT_CORRECTION = "patient_correction", "Correction by the patient"

    patient = models.ForeignKey("fhir.Patient", on_delete=models.CASCADE, related_name="memories")
    session = models.ForeignKey("transcripts.Session", on_delete=models.CASCADE, related_name="memories")
    run = models.ForeignKey(ExtractionRun, on_delete=models.CASCADE, related_name="memories")
    # SET_NULL: a withdrawn session's turns are deleted, its memories stay (revoked) with `turn_ids`.
    turn = models.ForeignKey("transcripts.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="memories")
    turn_ids = models.JSONField(default=list)  # external turn ids, anchor first, context after
    seq = models.PositiveIntegerField(default=0)  # order within the run
    category = models.CharField(max_length=20, db_index=True)
    subject = models.CharField(max_length=10, default="patient")
    subject_relation = models.CharField(max_length=40, blank=True)
    assertion = models.CharField(max_length=15, default="affirmed")
    attributes = models.JSONField(default=dict, blank=True)
    content = models.TextField()
    quote = models.TextField()
    quote_start = models.PositiveIntegerField()
    quote_end = models.PositiveIntegerField()
    speaker = models.CharField(max_length=60)
    event_time_text = models.CharField(max_length=120, blank=True)
    event_start = models.DateTimeField(null=True, blank=True)
    event_end = models.DateTimeField(null=True, blank=True)
    mention_time = models.DateTimeField()
    confidence = models.FloatField(default=0.5)
    engine = models.CharField(max_length=40)
    engine_version = models.CharField(max_length=40)
    chain_key = models.CharField(max_length=120, blank=True, db_index=True)
    op = models.CharField(max_length=10, default="insert")
    supersedes = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.CURRENT)
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.EXTRACTED)
    corrects = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="corrections")
    # Evolving states (goals, routines) become outdated on their own after this; safety facts never do.
    expires_at = models.DateTimeField(null=True, blank=True)
    content_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["mention_time", "seq", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "content_sha256"], name="memory_unique_in_run")]
        indexes = [
            models.Index(fields=["patient", "status", "category"], name="memory_current_idx"),
            # The time-to-live sweep: current memories that carry an expiry.
            models.Index(fields=["expires_at"], condition=models.Q(status="current", expires_at__isnull=False), name="memory_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"Memory #{self.pk} ({self.category})"

    @property
    def is_revoked(self) -> bool:
        return self.status == self.Status.REVOKED


class MemoryEvent(models.Model):
    """Append-only log of a memory's lifecycle: who (a user, a platform or the system), when, why.
    `reason` holds codes and ids, never the patient's words."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=60, blank=True)  # "system", "platform #3", or the username
    action = models.CharField(max_length=30)
    from_status = models.CharField(max_length=12, blank=True)
    to_status = models.CharField(max_length=12, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    related = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.action} of memory #{self.memory_id}"

    def save(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if self.pk is not None:
            raise RuntimeError("memory events are append-only")
        super().save(*args, **kwargs)


class LexiconCandidate(models.Model):
    """A near match that was not admitted (PIA's rule): reviewed before it joins the dictionary."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending review"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    term = models.CharField(max_length=120)
    suggestion = models.CharField(max_length=200)
    kind = models.CharField(max_length=20)
    score = models.FloatField(default=0)
    count = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["term", "suggestion", "kind"], name="lexicon_candidate_unique")]

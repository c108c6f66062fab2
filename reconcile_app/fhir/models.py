"""Patients, record pulls and versioned, content-hashed snapshots of the FHIR record."""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from reconcile_app.core.models import TimeStampedModel


class Patient(TimeStampedModel):
    # Null for records loaded from a bundle (replay, demo imports) rather than pulled from an EHR.
    registration = models.ForeignKey("smart.EhrRegistration", null=True, blank=True, on_delete=models.PROTECT)
    fhir_id = models.CharField(max_length=64)
    display_name = models.CharField(max_length=200, blank=True)
    birth_date = models.DateField(null=True, blank=True)
    sex = models.CharField(max_length=20, blank=True)
    # [{"system": ..., "value": ...}] from Patient.identifier, for matching transcripts.
    identifiers = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["registration", "fhir_id"], condition=Q(registration__isnull=False), name="patient_unique_per_ehr"),
            models.UniqueConstraint(fields=["fhir_id"], condition=Q(registration__isnull=True), name="patient_unique_local"),
        ]

    def __str__(self) -> str:
        return f"Patient #{self.pk}"

    @property
    def reference(self) -> str:
        return f"Patient/{self.fhir_id}"


class RecordSnapshot(models.Model):
    """One version of a patient's record. A new version only when the content differs from the latest
    (a record that changes back to an earlier content is a new version again)."""

    class Source(models.TextChoices):
        EHR = "ehr", "SMART launch"
        BACKEND = "backend", "Backend Services"
        BUNDLE = "bundle", "Bundle import"

    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="snapshots")
    version = models.PositiveIntegerField()
    source = models.CharField(max_length=10, choices=Source.choices)
    fetched_at = models.DateTimeField()
    content_sha256 = models.CharField(max_length=64)
    resources = models.JSONField(default=list)  # raw resources as received, off-spec ones included
    resource_counts = models.JSONField(default=dict)
    warnings = models.JSONField(default=list)  # [{"resourceType", "id", "problem"}], no clinical text

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["patient", "version"], name="snapshot_version_unique"),
        ]
        indexes = [models.Index(fields=["patient", "-version"], name="snapshot_latest_idx")]

    def __str__(self) -> str:
        return f"Snapshot v{self.version} of patient #{self.patient_id}"


class RecordPull(models.Model):
    """One attempt to pull the record; failures keep the last good snapshot in place."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "Succeeded"
        FAILED = "failed", "Failed"

    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="pulls")
    launch = models.ForeignKey("smart.SmartLaunch", null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pages = models.PositiveIntegerField(default=0)
    resources = models.PositiveIntegerField(default=0)
    snapshot = models.ForeignKey(RecordSnapshot, null=True, blank=True, on_delete=models.SET_NULL)
    error = models.CharField(max_length=300, blank=True)
    retryable = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["patient", "-started_at"], name="pull_latest_idx")]

"""Reconciliation runs and findings, each citing the exact FHIR resources it rests on."""
from __future__ import annotations

from django.db import models


class ReconciliationRun(models.Model):
    """One engine over one session's memories against one snapshot; idempotent on that triple."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    session = models.ForeignKey("transcripts.Session", on_delete=models.CASCADE, related_name="reconciliation_runs")
    snapshot = models.ForeignKey("fhir.RecordSnapshot", on_delete=models.PROTECT, related_name="reconciliation_runs")
    engine = models.CharField(max_length=40)
    engine_version = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    retryable = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    stats = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "snapshot", "engine", "engine_version"], name="reconciliation_run_idempotent")
        ]


class Finding(models.Model):
    class Kind(models.TextChoices):
        AGREEMENT = "agreement", "Agreement"
        CONTRADICTION = "contradiction", "Contradiction"
        GAP = "gap", "Gap"
        NO_CLINICAL_RELEVANCE = "no_clinical_relevance", "No clinical relevance"

    class Severity(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"

    run = models.ForeignKey(ReconciliationRun, on_delete=models.CASCADE, related_name="findings")
    memory = models.ForeignKey("narrative.Memory", on_delete=models.CASCADE, related_name="findings")
    patient = models.ForeignKey("fhir.Patient", on_delete=models.CASCADE, related_name="findings")
    session = models.ForeignKey("transcripts.Session", on_delete=models.CASCADE, related_name="findings")
    snapshot = models.ForeignKey("fhir.RecordSnapshot", on_delete=models.PROTECT, related_name="findings")
    kind = models.CharField(max_length=25, choices=Kind.choices, db_index=True)
    severity = models.CharField(max_length=6, choices=Severity.choices)
    safety_critical = models.BooleanField(default=False)
    category = models.CharField(max_length=20, blank=True)
    # [{"resourceType", "id", "system", "code", "display"}]: every entry exists in `snapshot`.
    citations = models.JSONField(default=list)
    explanation = models.TextField()
    rule = models.CharField(max_length=80)
    engine = models.CharField(max_length=40)
    engine_version = models.CharField(max_length=40)
    gate_notes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "memory"], name="finding_one_per_memory_per_run")]
        indexes = [models.Index(fields=["patient", "kind"], name="finding_patient_kind_idx")]

    def __str__(self) -> str:
        return f"Finding #{self.pk} ({self.kind})"

    @property
    def is_discrepancy(self) -> bool:
        return self.kind in (self.Kind.CONTRADICTION, self.Kind.GAP)

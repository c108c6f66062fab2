"""Reconciliation runs and findings, each citing (and justified by) the exact FHIR resource versions it rests on."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ReconciliationRun(models.Model):
    """One engine over one session's memories against one snapshot; a pipeline run is idempotent on that
    triple. A re-evaluation (the record or a memory changed) or a correction is a run of its own over
    the memories it concerns, never mistaken for the session's pipeline run."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Purpose(models.TextChoices):
        PIPELINE = "pipeline", "Pipeline"
        REEVALUATION = "reevaluation", "Re-evaluation after a record change"
        MEMORY_CHANGE = "memory_change", "Re-evaluation after a memory changed"

    session = models.ForeignKey("transcripts.Session", on_delete=models.CASCADE, related_name="reconciliation_runs")
    purpose = models.CharField(max_length=15, choices=Purpose.choices, default=Purpose.PIPELINE)
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
            models.UniqueConstraint(fields=["session", "snapshot", "engine", "engine_version"], condition=Q(purpose="pipeline"),
                                    name="reconciliation_run_idempotent")
        ]


class Finding(models.Model):
    """One verdict on one memory against one snapshot. Never edited: a re-evaluation that reaches another
    verdict writes a new finding and marks this one superseded by it; a withdrawn source revokes it
    (open) or marks it (reviewed findings are kept). FindingEvent says who, when and why."""

    class Status(models.TextChoices):
        CURRENT = "current", "Current"
        SUPERSEDED = "superseded", "Superseded by a later finding"
        CLOSED = "closed", "Closed (its memory no longer stands)"
        REVOKED = "revoked", "Revoked (source withdrawn)"
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
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.CURRENT)
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="supersedes")
    # Why it stopped being current, as a code: resolved_by_ehr_update, reevaluated, memory_outdated, ...
    closed_reason = models.CharField(max_length=40, blank=True)
    # reconciliation/justification.py: the memory, the snapshot and the cited resources' exact versions.
    justification = models.JSONField(default=dict, blank=True)
    # The latest snapshot this verdict was checked against (it moves when a refresh leaves it standing).
    checked_snapshot = models.ForeignKey("fhir.RecordSnapshot", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # A reviewed finding whose source was withdrawn is kept, and marked here.
    source_revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "memory"], name="finding_one_per_memory_per_run")]
        indexes = [
            models.Index(fields=["patient", "kind"], name="finding_patient_kind_idx"),
            # Re-evaluation after a refresh reads one patient's current findings.
            models.Index(fields=["patient", "status"], name="finding_patient_status_idx"),
        ]

    def __str__(self) -> str:
        return f"Finding #{self.pk} ({self.kind})"

    @property
    def is_discrepancy(self) -> bool:
        return self.kind in (self.Kind.CONTRADICTION, self.Kind.GAP)


class FindingEvent(models.Model):
    """Append-only log of a finding's life: created, re-checked (the record changed, the verdict
    stands, with the new justification), superseded, revoked, marked. Codes and ids, never clinical text."""

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=60, blank=True)
    action = models.CharField(max_length=30)
    from_status = models.CharField(max_length=12, blank=True)
    to_status = models.CharField(max_length=12, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    snapshot = models.ForeignKey("fhir.RecordSnapshot", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    justification = models.JSONField(default=dict, blank=True)
    related = models.ForeignKey(Finding, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["action", "at"], name="finding_event_action_idx")]

    def __str__(self) -> str:
        return f"{self.action} of finding #{self.finding_id}"

    def save(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if self.pk is not None:
            raise RuntimeError("finding events are append-only")
        super().save(*args, **kwargs)

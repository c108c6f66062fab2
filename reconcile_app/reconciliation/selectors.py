"""Reads of reconciliation: findings and the exact resource versions a snapshot holds."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db.models import QuerySet

from reconcile_app.fhir.models import Patient, RecordSnapshot

from .justification import Key, ResourceVersion, justification_for, record_versions
from .models import Finding


@lru_cache(maxsize=32)
def _versions(snapshot_id: int, content_sha256: str) -> dict[Key, ResourceVersion]:
    resources = RecordSnapshot.objects.filter(pk=snapshot_id).values_list("resources", flat=True).get()
    return record_versions(resources)


def snapshot_versions(*, snapshot: RecordSnapshot) -> dict[Key, ResourceVersion]:
    """(type, id) -> exact version of every resource in the snapshot. Snapshots never change, so this
    is cached by id + content hash."""
    return _versions(snapshot.pk, snapshot.content_sha256)


def finding_justification(finding: Finding) -> dict[str, Any]:
    """The stored justification, or (findings written before justifications were kept) the one their
    memory, citations and snapshot imply."""
    if finding.justification:
        return finding.justification
    snapshot = finding.snapshot
    return justification_for(
        memory_id=finding.memory_id, memory_sha256=finding.memory.content_sha256, category=finding.memory.category,
        citations=finding.citations or [], snapshot_id=snapshot.pk, snapshot_version=snapshot.version,
        snapshot_sha256=snapshot.content_sha256, versions=snapshot_versions(snapshot=snapshot),
    )


def findings_current_for_patient(*, patient: Patient | int) -> QuerySet[Finding]:
    """Current findings whose memory the patient still stands by (current, or waiting for a correction's review)."""
    return (
        Finding.objects.filter(patient=patient, status=Finding.Status.CURRENT,
                               memory__status__in=("current", "needs_review"))
        .select_related("memory", "memory__turn", "snapshot", "checked_snapshot", "session")
        .defer("snapshot__resources", "checked_snapshot__resources")  # megabytes per row otherwise; records are cached per snapshot
        .order_by("session__started_at", "memory__seq", "id")
    )


def finding_current_for_memory(*, memory_id: int) -> Finding | None:
    return Finding.objects.filter(memory_id=memory_id, status=Finding.Status.CURRENT).order_by("-created_at", "-id").first()

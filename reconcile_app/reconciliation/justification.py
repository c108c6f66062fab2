"""What a finding rests on, and which record changes touch it: pure functions over plain data (no ORM).

A finding rests on its memory and on the exact versions of the FHIR resources it cites (`versionId`,
`lastUpdated` and a content hash, for servers that keep neither), in one snapshot. A gap rests on an
absence as well: a resource of its category added later may close it. So a record change touches a
finding when a cited resource changed or went, or when a resource of the finding's scope (the record
types its memory's category is reconciled against) was added or changed. Only those are re-evaluated.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# Memory category -> the record's resource types its verdict can depend on.
CATEGORY_SCOPE: dict[str, tuple[str, ...]] = {
    "medication": ("MedicationRequest", "MedicationStatement", "Medication", "AllergyIntolerance"),
    "allergy": ("AllergyIntolerance",),
    "condition": ("Condition",),
    "symptom": ("Condition", "Observation"),
    "measurement": ("Observation",),
    "procedure": ("Procedure",),
    "immunization": ("Immunization",),
    "care_activity": ("CarePlan", "Procedure"),
    "goal": ("CarePlan", "Goal"),
}

Key = tuple[str, str]  # (resourceType, id)


@dataclass(frozen=True)
class ResourceVersion:
    resource_type: str
    id: str
    version_id: str = ""
    last_updated: str = ""
    sha256: str = ""

    @property
    def key(self) -> Key:
        return (self.resource_type, self.id)

    def as_dict(self) -> dict[str, str]:
        return {"resourceType": self.resource_type, "id": self.id, "versionId": self.version_id,
                "lastUpdated": self.last_updated, "sha256": self.sha256}


def resource_version(resource: Mapping[str, Any]) -> ResourceVersion:
    meta = resource.get("meta") if isinstance(resource.get("meta"), dict) else {}
    canonical = json.dumps(resource, sort_keys=True, separators=(",", ":"), default=str)
    return ResourceVersion(
        resource_type=str(resource.get("resourceType") or ""), id=str(resource.get("id") or ""),
        version_id=str(meta.get("versionId") or ""), last_updated=str(meta.get("lastUpdated") or ""),
        sha256=hashlib.sha256(canonical.encode()).hexdigest(),
    )


def record_versions(resources: Iterable[Any]) -> dict[Key, ResourceVersion]:
    """Every identified resource of a snapshot, by (type, id)."""
    out: dict[Key, ResourceVersion] = {}
    for resource in resources:
        if isinstance(resource, dict) and resource.get("resourceType") and resource.get("id"):
            version = resource_version(resource)
            out[version.key] = version
    return out


def record_changes(before: Mapping[Key, ResourceVersion], after: Mapping[Key, ResourceVersion]) -> dict[Key, str]:
    """(type, id) -> "added" / "updated" / "removed" between two snapshots; unchanged ones are absent."""
    changes: dict[Key, str] = {}
    for key, version in after.items():
        old = before.get(key)
        if old is None:
            changes[key] = "added"
        elif old.sha256 != version.sha256 or old.version_id != version.version_id:
            changes[key] = "updated"
    for key in before:
        if key not in after:
            changes[key] = "removed"
    return changes


def justification_for(*, memory_id: int, memory_sha256: str, category: str, citations: Iterable[Mapping[str, Any]],
                      snapshot_id: int, snapshot_version: int, snapshot_sha256: str,
                      versions: Mapping[Key, ResourceVersion]) -> dict[str, Any]:
    """The stored justification: the memory, the snapshot, the exact versions of the cited resources,
    and the scope of types whose change may alter the verdict."""
    cited: list[dict[str, str]] = []
    seen: set[Key] = set()
    for citation in citations:
        key = (str(citation.get("resourceType") or ""), str(citation.get("id") or ""))
        if not all(key) or key in seen:
            continue
        seen.add(key)
        version = versions.get(key)
        cited.append(version.as_dict() if version else {"resourceType": key[0], "id": key[1], "versionId": "",
                                                          "lastUpdated": "", "sha256": ""})
    return {
        "memory": {"id": memory_id, "sha256": memory_sha256},
        "snapshot": {"id": snapshot_id, "version": snapshot_version, "sha256": snapshot_sha256},
        "resources": cited,
        "scope": list(CATEGORY_SCOPE.get(category, ())),
    }


def is_touched(justification: Mapping[str, Any], changes: Mapping[Key, str]) -> bool:
    """Whether any of `changes` can alter the verdict the justification supports."""
    if not changes:
        return False
    cited = {(str(r.get("resourceType")), str(r.get("id"))) for r in justification.get("resources") or []}
    if cited & changes.keys():
        return True
    scope = set(justification.get("scope") or ())
    return any(kind in ("added", "updated") and rtype in scope for (rtype, _), kind in changes.items())


def verdict_key(*, kind: str, severity: str, safety_critical: bool, citations: Iterable[Mapping[str, Any]]) -> tuple:
    """What makes two findings of one memory the same verdict: a new version of a cited resource that
    leaves this unchanged changes nothing a person would see."""
    cited = frozenset((str(c.get("resourceType")), str(c.get("id"))) for c in citations if isinstance(c, Mapping))
    return (kind, severity, bool(safety_critical), cited)


def autoclose_allowed(*, earlier_autocloses: Iterable[datetime], now: datetime, window: timedelta, limit: int) -> bool:
    """Flapping guard: a record that changes back and forth must not close and reopen a discrepancy on
    every refresh. A memory's discrepancy closes on its own at most `limit` times within `window`;
    after that it stays open for a person to decide."""
    recent = [at for at in earlier_autocloses if now - at <= window]
    return len(recent) < limit

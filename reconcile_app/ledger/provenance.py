"""Provenance of a finding as FHIR R4 JSON: pure builders over plain data (no ORM), and their validation.

finding -> memory -> quoted turns -> the upload's sha256; finding -> the exact versions of the FHIR
resources it cites, in one record snapshot. Two Provenance resources (the finding's, the memory's) and
one AuditEvent per lifecycle change, in a collection Bundle.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SYSTEM_BASE = "https://reconcile.example.org/fhir"
FINDING_SYSTEM = f"{SYSTEM_BASE}/finding"  # the same system the written-back resources carry
MEMORY_SYSTEM = f"{SYSTEM_BASE}/memory"
TURN_SYSTEM = f"{SYSTEM_BASE}/turn"
SNAPSHOT_SYSTEM = f"{SYSTEM_BASE}/record-snapshot"
UPLOAD_SYSTEM = f"{SYSTEM_BASE}/upload-sha256"
EVENT_SYSTEM = f"{SYSTEM_BASE}/CodeSystem/ledger-event"
DATA_OPERATION = "http://terminology.hl7.org/CodeSystem/v3-DataOperation"
PARTICIPANT_TYPE = "http://terminology.hl7.org/CodeSystem/provenance-participant-type"
DICOM = "http://dicom.nema.org/resources/ontology/DCM"
NAMESPACE = uuid.UUID("8d9ee5c4-c523-4ef0-a000-000000000013")


@dataclass(frozen=True)
class TurnFact:
    session_id: str
    turn_id: str
    speaker: str = ""
    text: str = ""  # empty once consent for the session was withdrawn


@dataclass(frozen=True)
class ResourceFact:
    resource_type: str
    id: str
    version_id: str = ""
    last_updated: str = ""
    sha256: str = ""
    display: str = ""

    @property
    def reference(self) -> str:
        base = f"{self.resource_type}/{self.id}"
        return f"{base}/_history/{self.version_id}" if self.version_id else base


@dataclass(frozen=True)
class EventFact:
    """One lifecycle change: of the memory, the finding, or the queue item that holds it."""

    source: str  # memory | finding | item
    source_id: int
    event_id: int
    action: str
    at: datetime
    actor: str  # a username, "platform #3" or "system"
    by_person: bool
    from_status: str = ""
    to_status: str = ""
    reason: str = ""


@dataclass(frozen=True)
class WriteFact:
    ehr_base: str
    resource_type: str
    resource_id: str
    status: str
    written_at: datetime | None = None
    retraction_status: str = ""
    retraction_method: str = ""


@dataclass(frozen=True)
class ProvenanceFacts:
    patient_reference: str
    finding_id: int
    finding_kind: str
    finding_status: str
    finding_severity: str
    finding_safety_critical: bool
    finding_created: datetime
    finding_engine: str
    finding_rule: str
    memory_id: int
    memory_status: str
    memory_origin: str
    memory_sha256: str
    memory_created: datetime
    memory_mentioned: datetime
    memory_engine: str
    snapshot_id: int
    snapshot_version: int
    snapshot_sha256: str
    snapshot_fetched: datetime
    snapshot_source: str
    upload_id: int
    upload_sha256: str
    upload_received: datetime
    upload_source: str
    corrects_id: int | None = None
    turns: tuple[TurnFact, ...] = ()
    resources: tuple[ResourceFact, ...] = ()
    events: tuple[EventFact, ...] = ()
    written: WriteFact | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _instant(at: datetime) -> str:
    return at.isoformat(timespec="seconds") if at.tzinfo else at.isoformat(timespec="seconds") + "Z"


def _identifier(system: str, value: object, display: str = "") -> dict[str, Any]:
    ref: dict[str, Any] = {"identifier": {"system": system, "value": str(value)}}
    if display:
        ref["display"] = display[:200]
    return ref


def _id(*parts: object) -> str:
    return str(uuid.uuid5(NAMESPACE, "/".join(str(p) for p in parts)))


def finding_provenance(facts: ProvenanceFacts) -> dict[str, Any]:
    """What the finding was made from: the memory, and the cited resources at their exact versions."""
    target = [_identifier(FINDING_SYSTEM, facts.finding_id, f"Finding #{facts.finding_id}: {facts.finding_kind} ({facts.finding_status})")]
    if facts.written and facts.written.resource_id:
        target.append({"reference": f"{facts.written.ehr_base.rstrip('/')}/{facts.written.resource_type}/{facts.written.resource_id}",
                       "display": f"written back to the EHR ({facts.written.status})"})
    entities: list[dict[str, Any]] = [
        {"role": "source", "what": _identifier(MEMORY_SYSTEM, facts.memory_id, f"Memory #{facts.memory_id} ({facts.memory_status})")},
        {"role": "source", "what": _identifier(SNAPSHOT_SYSTEM, f"{facts.patient_reference}/v{facts.snapshot_version}",
                                               f"Record snapshot v{facts.snapshot_version}, sha256 {facts.snapshot_sha256}")},
    ]
    for resource in facts.resources:
        detail = ", ".join(part for part in (
            f"versionId {resource.version_id}" if resource.version_id else "",
            f"lastUpdated {resource.last_updated}" if resource.last_updated else "",
            f"sha256 {resource.sha256}" if resource.sha256 else "") if part)
        entities.append({"role": "source", "what": {"reference": resource.reference, "type": resource.resource_type,
                                                    "display": (f"{resource.display} ({detail})" if resource.display else detail)[:300]}})
    return {
        "resourceType": "Provenance",
        "id": _id("finding", facts.finding_id),
        "target": target,
        "recorded": _instant(facts.finding_created),
        "activity": {"coding": [{"system": DATA_OPERATION, "code": "CREATE", "display": "create"}],
                     "text": "reconciliation of a conversation memory against the FHIR record"},
        "agent": [{"type": {"coding": [{"system": PARTICIPANT_TYPE, "code": "assembler", "display": "Assembler"}]},
                   "who": {"display": f"reconcile {facts.finding_engine} (rule {facts.finding_rule or '-'})"[:200]}}],
        "entity": entities,
    }


def memory_provenance(facts: ProvenanceFacts) -> dict[str, Any]:
    """Where the memory came from: the quoted turns of the session and the upload's sha256 (and the
    memory it corrects, for a correction)."""
    entities: list[dict[str, Any]] = [
        {"role": "quotation", "what": _identifier(TURN_SYSTEM, f"{t.session_id}/{t.turn_id}",
                                                  f"{t.speaker}: {t.text}" if t.text else "turn removed (consent withdrawn)")}
        for t in facts.turns
    ]
    entities.append({"role": "source", "what": _identifier(UPLOAD_SYSTEM, facts.upload_sha256,
                                                            f"Upload #{facts.upload_id} ({facts.upload_source}), "
                                                            f"received {_instant(facts.upload_received)}")})
    if facts.corrects_id:
        entities.append({"role": "revision", "what": _identifier(MEMORY_SYSTEM, facts.corrects_id, f"Memory #{facts.corrects_id}")})
    author = "the care team" if facts.memory_origin == "staff_correction" else (
        "the patient, through the coaching platform" if facts.memory_origin == "patient_correction" else f"reconcile {facts.memory_engine}")
    return {
        "resourceType": "Provenance",
        "id": _id("memory", facts.memory_id),
        "target": [_identifier(MEMORY_SYSTEM, facts.memory_id, f"Memory #{facts.memory_id} ({facts.memory_status})")],
        "occurredDateTime": _instant(facts.memory_mentioned),
        "recorded": _instant(facts.memory_created),
        "activity": {"coding": [{"system": DATA_OPERATION, "code": "CREATE", "display": "create"}],
                     "text": "memory extracted from a coaching conversation" if facts.memory_origin == "extracted" else "correction of a memory"},
        "agent": [{"type": {"coding": [{"system": PARTICIPANT_TYPE, "code": "author" if facts.memory_origin != "extracted" else "assembler"}]},
                   "who": {"display": author}}],
        "entity": entities,
    }


ACTION_CODES = {"created": "C", "propose": "C", "revoke": "U", "revoked": "U", "rechecked": "E"}


def audit_event(event: EventFact) -> dict[str, Any]:
    system = {"memory": MEMORY_SYSTEM, "finding": FINDING_SYSTEM}.get(event.source, f"{SYSTEM_BASE}/{event.source}")
    change = f"{event.from_status or '-'} -> {event.to_status or '-'}"
    return {
        "resourceType": "AuditEvent",
        "id": _id(event.source, "event", event.event_id),
        "type": {"system": DICOM, "code": "110100", "display": "Application Activity"},
        "subtype": [{"system": EVENT_SYSTEM, "code": event.action}],
        "action": ACTION_CODES.get(event.action, "U"),
        "recorded": _instant(event.at),
        "outcome": "0",
        "outcomeDesc": f"{change}; {event.reason}"[:500] if event.reason else change,
        "agent": [{"who": {"display": event.actor or "system"}, "requestor": event.by_person}],
        "source": {"observer": {"display": "reconcile"}},
        "entity": [{"what": _identifier(system, event.source_id, f"{event.source.capitalize()} #{event.source_id}")}],
    }


def provenance_bundle(facts: ProvenanceFacts, *, generated: datetime) -> dict[str, Any]:
    resources = [finding_provenance(facts), memory_provenance(facts), *(audit_event(e) for e in sorted(facts.events, key=lambda e: (e.at, e.source, e.event_id)))]
    return {
        "resourceType": "Bundle",
        "id": _id("provenance-bundle", facts.finding_id, _instant(generated)),
        "type": "collection",
        "timestamp": _instant(generated),
        "entry": [{"fullUrl": f"urn:uuid:{r['id']}", "resource": r} for r in resources],
    }


class ProvenanceInvalid(ValueError):
    """The export does not validate as FHIR (a bug: it is never served)."""


def provenance_validate(bundle: dict[str, Any]) -> None:
    """Validate the Bundle and each resource with fhir.resources (R4B: Provenance and AuditEvent as in R4)."""
    from fhir.resources.R4B.auditevent import AuditEvent
    from fhir.resources.R4B.bundle import Bundle
    from fhir.resources.R4B.provenance import Provenance
    from pydantic import ValidationError

    models = {"Provenance": Provenance, "AuditEvent": AuditEvent}
    try:
        Bundle.model_validate(bundle)
        for entry in bundle.get("entry", []):
            resource = entry["resource"]
            models[resource["resourceType"]].model_validate(resource)
    except (ValidationError, KeyError) as exc:
        raise ProvenanceInvalid(str(exc)[:500]) from exc


def resources_of(bundle: dict[str, Any], kind: str) -> Sequence[dict[str, Any]]:
    return [e["resource"] for e in bundle.get("entry", []) if e["resource"].get("resourceType") == kind]

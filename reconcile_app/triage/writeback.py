"""Pure builders of the FHIR resources written back on confirm: DetectedIssue, else Task, else Communication."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

APP_SYSTEM = "https://reconcile.example.org/fhir/CodeSystem/finding-kind"
SEVERITY_TO_FHIR = {"high": "high", "medium": "moderate", "low": "low"}
KIND_TEXT = {"contradiction": "Patient report contradicts the record", "gap": "Patient report missing from the record"}


@dataclass(frozen=True)
class WriteBackFacts:
    finding_id: int
    patient_fhir_id: str
    kind: str
    severity: str
    category: str
    explanation: str
    memory_content: str
    quote: str
    speaker: str
    mentioned_at: datetime
    citations: tuple[dict, ...]
    identified_at: datetime
    author_reference: str = ""  # the reviewer's fhirUser, e.g. "Practitioner/123"
    author_display: str = ""


def _implicated(facts: WriteBackFacts) -> list[dict]:
    out = []
    for c in facts.citations:
        if c.get("resourceType") and c.get("id"):
            ref = {"reference": f"{c['resourceType']}/{c['id']}"}
            if c.get("display"):
                ref["display"] = str(c["display"])[:200]
            out.append(ref)
    return out


def _author(facts: WriteBackFacts) -> dict | None:
    if facts.author_reference:
        ref = {"reference": facts.author_reference}
        if facts.author_display:
            ref["display"] = facts.author_display
        return ref
    if facts.author_display:
        return {"display": facts.author_display}
    return None


def _identifier(facts: WriteBackFacts) -> list[dict]:
    # Lets a re-sent write be recognised on the EHR side (and by us on read-back).
    return [{"system": "https://reconcile.example.org/fhir/finding", "value": str(facts.finding_id)}]


def _code(facts: WriteBackFacts) -> dict:
    return {
        "coding": [{"system": APP_SYSTEM, "code": facts.kind, "display": KIND_TEXT.get(facts.kind, facts.kind)}],
        "text": f"{KIND_TEXT.get(facts.kind, facts.kind)} ({facts.category or 'uncategorized'})",
    }


def _evidence_text(facts: WriteBackFacts) -> str:
    return f'{facts.speaker.capitalize()} on {facts.mentioned_at:%Y-%m-%d}: "{facts.quote}"'


def detected_issue_for(facts: WriteBackFacts) -> dict:
    resource: dict = {
        "resourceType": "DetectedIssue",
        "identifier": _identifier(facts),
        "status": "final",
        "code": _code(facts),
        "severity": SEVERITY_TO_FHIR.get(facts.severity, "low"),
        "patient": {"reference": f"Patient/{facts.patient_fhir_id}"},
        "identifiedDateTime": facts.identified_at.isoformat(),
        "implicated": _implicated(facts),
        "evidence": [{"detail": [{"display": f"Coaching conversation memory: {facts.memory_content}"[:1000]},
                                 {"display": _evidence_text(facts)[:1000]}]}],
        "detail": f"{facts.explanation}\n\nPatient-reported: {facts.memory_content}",
    }
    author = _author(facts)
    if author:
        resource["author"] = author
    return resource


def task_for(facts: WriteBackFacts) -> dict:
    implicated = _implicated(facts)
    resource: dict = {
        "resourceType": "Task",
        "identifier": _identifier(facts),
        "status": "requested",
        "intent": "order",
        "priority": "urgent" if facts.severity == "high" else "routine",
        "code": _code(facts),
        "description": f"Review the record: {facts.explanation} Patient-reported: {facts.memory_content} ({_evidence_text(facts)})"[:2000],
        "for": {"reference": f"Patient/{facts.patient_fhir_id}"},
        "authoredOn": facts.identified_at.isoformat(),
    }
    if implicated:
        resource["focus"] = implicated[0]
        resource["input"] = [{"type": {"text": "implicated"}, "valueReference": ref} for ref in implicated]
    author = _author(facts)
    if author:
        resource["requester"] = author
    return resource


def communication_for(facts: WriteBackFacts) -> dict:
    resource: dict = {
        "resourceType": "Communication",
        "identifier": _identifier(facts),
        "status": "completed",
        "category": [{"text": "Patient-reported discrepancy"}],
        "subject": {"reference": f"Patient/{facts.patient_fhir_id}"},
        "about": _implicated(facts),
        "sent": facts.identified_at.isoformat(),
        "payload": [{"contentString": f"{KIND_TEXT.get(facts.kind, facts.kind)}: {facts.explanation} "
                                      f"Patient-reported: {facts.memory_content} ({_evidence_text(facts)})"[:2000]}],
    }
    author = _author(facts)
    if author:
        resource["sender"] = author
    return resource


# Tried in order: a server that rejects DetectedIssue as unsupported gets a Task, then a Communication.
BUILDERS = (detected_issue_for, task_for, communication_for)


RETRACTED_TEXT = "Retracted: the patient withdrew consent for the conversation this was drawn from."


def retracted_version(resource: dict) -> dict:
    """The written resource marked entered-in-error, with the patient's words taken out: what stays is
    who wrote it, about whom, which record entries it pointed at, and why it was retracted."""
    body = {k: v for k, v in resource.items() if k not in ("text", "meta")}
    body["status"] = "entered-in-error"
    kind = body.get("resourceType")
    if kind == "DetectedIssue":
        body.pop("evidence", None)
        body["detail"] = RETRACTED_TEXT
    elif kind == "Task":
        body["description"] = RETRACTED_TEXT
    elif kind == "Communication":
        body["payload"] = [{"contentString": RETRACTED_TEXT}]
    return body

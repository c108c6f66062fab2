"""The results document of FORMAT.md for one patient, read from the database (what production stored)."""
from __future__ import annotations

from typing import Any

from reconcile_app.fhir.models import Patient
from reconcile_app.narrative.selectors import memory_list_for_session
from reconcile_app.reconciliation.models import ReconciliationRun
from reconcile_app.transcripts.models import Session

REF_KEYS = ("resourceType", "id", "system", "code")


def results_for_patient(*, patient: Patient) -> dict[str, Any]:
    memories: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    sessions = Session.objects.filter(patient=patient, withdrawn_at__isnull=True).order_by("started_at", "id")
    for session in sessions:
        for memory in memory_list_for_session(session=session):
            memories.append({
                "id": f"m{memory.pk}",
                "session_id": session.external_id,
                "turn_ids": list(memory.turn_ids) or [memory.turn.external_id],
                "subject": memory.subject,
                "category": memory.category,
                "content": memory.content,
            })
        # The pipeline's run: a later re-evaluation (record or memory changed) covers only some memories.
        run = (
            ReconciliationRun.objects.filter(session=session, status=ReconciliationRun.Status.DONE,
                                             purpose=ReconciliationRun.Purpose.PIPELINE)
            .order_by("-finished_at", "-id")
            .first()
        )
        if run is None:
            continue
        for finding in run.findings.select_related("memory", "memory__turn").order_by("memory__seq", "id"):
            findings.append({
                "id": f"f{finding.pk}",
                "memory_id": f"m{finding.memory_id}",
                "session_id": session.external_id,
                "turn_ids": list(finding.memory.turn_ids) or [finding.memory.turn.external_id],
                "kind": finding.kind,
                "severity": finding.severity,
                "safety_critical": finding.safety_critical,
                "fhir_refs": [{k: c.get(k, "") for k in REF_KEYS} for c in finding.citations],
                "explanation": finding.explanation,
            })
    return {"patient": patient.reference, "memories": memories, "findings": findings}


def results_problems(results: Any) -> list[str]:
    """Check a results document against FORMAT.md (shared/eval/validate.py checks datasets only)."""
    problems: list[str] = []
    if not isinstance(results, dict) or not str(results.get("patient", "")).startswith("Patient/"):
        return ["results: not an object with a 'patient' reference"]
    memory_ids = set()
    for m in results.get("memories", []):
        for key, kind in (("id", str), ("session_id", str), ("turn_ids", list), ("subject", str), ("category", str), ("content", str)):
            if not isinstance(m.get(key), kind):
                problems.append(f"memory {m.get('id')}: {key} must be {kind.__name__}")
        memory_ids.add(m.get("id"))
    for f in results.get("findings", []):
        where = f"finding {f.get('id')}"
        for key, kind in (("id", str), ("memory_id", str), ("session_id", str), ("turn_ids", list), ("kind", str),
                          ("severity", str), ("safety_critical", bool), ("fhir_refs", list), ("explanation", str)):
            if not isinstance(f.get(key), kind):
                problems.append(f"{where}: {key} must be {kind.__name__}")
        if f.get("memory_id") not in memory_ids:
            problems.append(f"{where}: memory {f.get('memory_id')} is not listed")
        if f.get("kind") not in ("agreement", "contradiction", "gap", "no_clinical_relevance"):
            problems.append(f"{where}: kind {f.get('kind')!r}")
        if f.get("severity") not in ("low", "medium", "high"):
            problems.append(f"{where}: severity {f.get('severity')!r}")
        for ref in f.get("fhir_refs", []) or []:
            if not isinstance(ref, dict) or not ref.get("resourceType") or not ref.get("id"):
                problems.append(f"{where}: a fhir_ref lacks resourceType or id")
    return problems

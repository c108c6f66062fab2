"""The results document of FORMAT.md for one patient, read from the database (what production stored)."""
from __future__ import annotations

from typing import Any

from reconcile_app.evaluation.breakdown import learned_change, origin_of
from reconcile_app.fhir.models import Patient
from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.reconciliation.models import Finding, ReconciliationRun
from reconcile_app.transcripts.models import Session

REF_KEYS = ("resourceType", "id", "system", "code")


def _latest_done(runs: list[Any]) -> dict[int, Any]:
    """The latest finished run per session (finished_at, then id), as memory_list_for_session picks it."""
    def key(run: Any) -> tuple[float, int]:
        return (run.finished_at.timestamp() if run.finished_at else float("-inf"), run.pk)

    latest: dict[int, Any] = {}
    for run in runs:
        held = latest.get(run.session_id)
        if held is None or key(run) > key(held):
            latest[run.session_id] = run
    return latest


def results_for_patient(*, patient: Patient) -> dict[str, Any]:
    """Five queries for the whole patient (sessions, runs of both kinds, memories, findings), where one
    per session and kind was the rule: what production stored, read the way its selectors read it."""
    sessions = list(Session.objects.filter(patient=patient, withdrawn_at__isnull=True).order_by("started_at", "id"))
    ids = [s.pk for s in sessions]
    extraction = _latest_done(list(ExtractionRun.objects.filter(session_id__in=ids, status=ExtractionRun.Status.DONE)
                                   .only("id", "session_id", "finished_at")))
    # The pipeline's runs only: a ledger re-evaluation (the record or a memory changed) covers some memories.
    reconciliation = _latest_done(list(ReconciliationRun.objects.filter(session_id__in=ids, status=ReconciliationRun.Status.DONE,
                                                                        purpose=ReconciliationRun.Purpose.PIPELINE)
                                       .only("id", "session_id", "finished_at")))
    # Plain values rather than model instances (two per memory, three per finding with the turn): the document
    # needs a few columns of thousands of rows, and building the instances was most of its cost.
    by_run: dict[int, list[tuple[Any, ...]]] = {}
    for row in (Memory.objects.filter(run_id__in=[r.pk for r in extraction.values()], origin=Memory.Origin.EXTRACTED)
                .exclude(status=Memory.Status.REVOKED).order_by("seq")
                .values_list("run_id", "pk", "turn_ids", "turn__external_id", "subject", "category", "content")):
        by_run.setdefault(row[0], []).append(row)
    findings_by_run: dict[int, list[tuple[Any, ...]]] = {}
    for row in (Finding.objects.filter(run_id__in=[r.pk for r in reconciliation.values()]).order_by("memory__seq", "id")
                .values_list("run_id", "pk", "memory_id", "memory__turn_ids", "memory__turn__external_id", "kind", "severity",
                             "safety_critical", "citations", "explanation", "category", "rule", "gate_notes")):
        findings_by_run.setdefault(row[0], []).append(row)
    memories: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for session in sessions:
        run = extraction.get(session.pk)
        for _run, pk, turn_ids, turn_external_id, subject, category, content in by_run.get(run.pk, []) if run is not None else []:
            memories.append({
                "id": f"m{pk}",
                "session_id": session.external_id,
                "turn_ids": list(turn_ids) or [turn_external_id],
                "subject": subject,
                "category": category,
                "content": content,
            })
        rrun = reconciliation.get(session.pk)
        for (_run, pk, memory_id, turn_ids, turn_external_id, kind, severity, safety_critical, citations, explanation,
             category, rule, gate_notes) in findings_by_run.get(rrun.pk, []) if rrun is not None else []:
            findings.append({
                "id": f"f{pk}",
                "memory_id": f"m{memory_id}",
                "session_id": session.external_id,
                "turn_ids": list(turn_ids) or [turn_external_id],
                "kind": kind,
                "severity": severity,
                "safety_critical": safety_critical,
                "fhir_refs": [{k: c.get(k, "") for k in REF_KEYS} for c in citations],
                "explanation": explanation,
                # how it was raised, as codes (evaluation/breakdown.py counts false alarms by them; no clinical text)
                "category": category,
                "rule": rule,
                "origin": origin_of(rule, gate_notes),
                "learned": learned_change(gate_notes),
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

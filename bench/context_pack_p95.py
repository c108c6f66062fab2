"""Benchmark: GET /api/patients/<id>/context for a 1,000-resource record, p50 / p95 / max per rendering.

    python bench/context_pack_p95.py [--resources 1000] [--sessions 30] [--requests 300]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/reconcile_bench_context python bench/context_pack_p95.py

A scratch database (a fresh SQLite file in var/, or the PostgreSQL database named by DATABASE_URL, created and
emptied) is migrated and seeded with real rows: the record (tests/data/fhir/large_patient.json cut to --resources
resources: every allergy, medication, condition and the rest in file order), --sessions sessions of the platform with
ten memories each (one about someone else), open triage items routed through the real service, and 20 other patients
with their own sessions. Requests go through Django's test client: the whole middleware stack, the bearer token,
issue 12's enrolment gate, the pack, and the audit row each serve writes. The first request of the process (record
parsed, record index and knowledge tables loaded) is reported apart as `cold`. A pack is cached per process by the
facts that determine it, which are read on every request: `after_change` measures requests that each follow a new
memory, so every one of them builds the pack again. Target: p95 under 50 ms.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
SQLITE = ROOT / "var" / "bench_context.sqlite3"
os.environ.setdefault("DATABASE_URL", f"sqlite:///{SQLITE}")


def _database_fresh(url: str) -> None:
    if url.startswith("sqlite"):
        SQLITE.parent.mkdir(exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{SQLITE}{suffix}").unlink(missing_ok=True)
        return
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


_database_fresh(os.environ["DATABASE_URL"])

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from reconcile_app.audit.models import AuditEvent  # noqa: E402
from reconcile_app.fhir.clinical import resources_from_bundle  # noqa: E402
from reconcile_app.fhir.services import snapshot_import_bundle  # noqa: E402
from reconcile_app.narrative.models import ExtractionRun, Memory  # noqa: E402
from reconcile_app.reconciliation.models import Finding, ReconciliationRun  # noqa: E402
from reconcile_app.transcripts.models import Session, Turn, Upload  # noqa: E402
from reconcile_app.transcripts.services import platform_create, platform_enrol  # noqa: E402
from reconcile_app.triage.services import triage_items_route  # noqa: E402

BASE = datetime(2025, 6, 2, 17, 0, tzinfo=dt_timezone.utc)
SAFETY = {"AllergyIntolerance", "MedicationRequest", "MedicationStatement", "Condition", "Patient", "Medication"}
# (category, attributes, subject, relation): ten memories a session, one of them about someone else.
MEMORIES = [
    ("medication", {"drug": "lisinopril", "action": "taking", "frequency": "every morning"}, "patient", ""),
    ("medication", {"drug": "ibuprofen", "action": "took_once", "source": "otc"}, "patient", ""),
    ("symptom", {"name": "knee pain", "stated_status": "worse"}, "patient", ""),
    ("measurement", {"kind": "blood_pressure", "value": 148, "value2": 92, "unit": "mm[Hg]", "setting": "home"}, "patient", ""),
    ("measurement", {"kind": "glucose", "value": 182, "unit": "mg/dL", "setting": "home"}, "patient", ""),
    ("care_activity", {"name": "walking", "action": "started", "detail": "20 minutes after dinner"}, "patient", ""),
    ("goal", {"name": "weight", "detail": "lose 10 pounds by summer"}, "patient", ""),
    ("preference", {"name": "morning calls", "detail": "calls before 9"}, "patient", ""),
    ("condition", {"name": "sleep apnea", "stated_status": "ongoing"}, "patient", ""),
    ("condition", {"name": "diabetes", "stated_status": "diagnosed"}, "other", "mother"),
]


def record_bundle(resources: int) -> dict:
    """The large synthetic record cut to `resources`: every safety resource kept, the rest in file order."""
    all_resources = resources_from_bundle(json.loads((ROOT / "tests" / "data" / "fhir" / "large_patient.json").read_text()))
    keep = [r for r in all_resources if r["resourceType"] in SAFETY]
    keep += [r for r in all_resources if r["resourceType"] not in SAFETY][: max(0, resources - len(keep))]
    return {"resourceType": "Bundle", "type": "collection", "entry": [{"resource": r} for r in keep]}


def sessions_seed(*, patient, platform, sessions: int, open_items: int) -> None:  # type: ignore[no-untyped-def]
    namespace = f"platform:{platform.pk}" if platform else ""
    snapshot = patient.snapshots.order_by("-version").first()
    findings = []
    for n in range(sessions):
        at = BASE + timedelta(days=7 * n)
        raw = f"{patient.fhir_id} session {n}".encode()
        upload = Upload.objects.create(patient=patient, patient_ref=patient.reference, source=Upload.Source.API, raw=raw, platform=platform,
                                       sha256=hashlib.sha256(raw).hexdigest(), size=len(raw), status=Upload.Status.IMPORTED)
        session = Session.objects.create(patient=patient, upload=upload, namespace=namespace, external_id=f"s{n + 1:02d}", started_at=at,
                                         content_sha256=upload.sha256, pipeline_status=Session.Pipeline.DONE)
        turns = Turn.objects.bulk_create(
            Turn(session=session, external_id=f"s{n + 1:02d}-t{k:02d}", seq=k, speaker="patient", at=at + timedelta(minutes=k),
                 text="What the patient said.") for k in range(1, len(MEMORIES) + 1))
        run = ExtractionRun.objects.create(session=session, engine="bench", engine_version="1", input_sha256=upload.sha256,
                                           status=ExtractionRun.Status.DONE, finished_at=at)
        memories = Memory.objects.bulk_create(
            Memory(patient=patient, session=session, run=run, turn=turn, turn_ids=[turn.external_id], seq=k, category=category,
                   subject=subject, subject_relation=relation, attributes=attributes, content=f"{category} {k}",
                   quote="What the patient said.", quote_start=0, quote_end=22, speaker="patient", event_time_text="this week",
                   mention_time=turn.at, engine="bench", engine_version="1",
                   content_sha256=hashlib.sha256(f"{session.pk}-{k}".encode()).hexdigest())
            for k, (turn, (category, attributes, subject, relation)) in enumerate(zip(turns, MEMORIES)))
        if n < open_items:
            rrun = ReconciliationRun.objects.create(session=session, snapshot=snapshot, engine="bench", engine_version="1",
                                                    status=ReconciliationRun.Status.DONE)
            findings.append(Finding.objects.create(
                run=rrun, memory=memories[n % 2], patient=patient, session=session, snapshot=snapshot, kind="gap", severity="medium",
                category="medication", citations=[], explanation="bench", rule="bench", engine="bench", engine_version="1"))
    triage_items_route(findings=findings)


def measure(client: Client, url: str, n: int, **headers: str) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per request: on a shared machine the CPU time says what the request costs."""
    wall, cpu = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        response = client.get(url, **headers)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        assert response.status_code in (200, 304), response.status_code
    return wall, cpu


def measure_after_change(client: Client, url: str, patient, n: int) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    """Each request after a new memory: the pack is built again (no cached pack can serve it)."""
    template = Memory.objects.filter(patient=patient, subject="patient").order_by("-id").first()
    wall, cpu = [], []
    for k in range(n):
        Memory.objects.create(
            patient=patient, session_id=template.session_id, run_id=template.run_id, turn_id=template.turn_id, turn_ids=template.turn_ids,
            seq=1000 + k, category="symptom", attributes={"name": f"new symptom {k}"}, content=f"symptom {k}", quote="What the patient said.",
            quote_start=0, quote_end=22, speaker="patient", mention_time=template.mention_time, engine="bench", engine_version="1",
            content_sha256=hashlib.sha256(f"change-{k}".encode()).hexdigest())
        t0, c0 = time.perf_counter(), time.process_time()
        response = client.get(url)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        assert response.status_code == 200 and f"new symptom {k}" in response.content.decode()
    return wall, cpu


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[int(0.95 * (len(ordered) - 1))], 1)


def summary(times: tuple[list[float], list[float]]) -> dict[str, float]:
    wall, cpu = times
    return {"p50": round(statistics.median(wall), 1), "p95": _p95(wall), "max": round(max(wall), 1), "n": len(wall),
            "cpu_p50": round(statistics.median(cpu), 1), "cpu_p95": _p95(cpu)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--changes", type=int, default=60, help="requests each after a new memory (the pack rebuilt)")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    snapshot = snapshot_import_bundle(bundle=record_bundle(args.resources))
    patient = snapshot.patient
    platform, token = platform_create(name="Bench Coaching")
    platform_enrol(platform=platform, patient=patient)
    sessions_seed(patient=patient, platform=platform, sessions=args.sessions, open_items=5)
    for i in range(20):  # other patients: their rows share the tables the pack's queries narrow
        other = snapshot_import_bundle(bundle={"resourceType": "Bundle", "type": "collection", "entry": [
            {"resource": {"resourceType": "Patient", "id": f"bench-other-{i}"}}]}).patient
        sessions_seed(patient=other, platform=platform if i % 2 else None, sessions=5, open_items=1)
    print(f"seeded in {time.perf_counter() - t0:.1f}s on {connection.vendor}: {len(snapshot.resources)} resources, "
          f"{Memory.objects.filter(patient=patient).count()} memories of the patient", flush=True)

    load_before = os.getloadavg()[0]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = f"/api/patients/{patient.fhir_id}/context"
    t0 = time.perf_counter()
    first = client.get(url)
    cold = (time.perf_counter() - t0) * 1000
    pack = first.json()
    text_url = f"{url}?format=text&budget=2000"
    results = {
        "json": summary(measure(client, url, args.requests)),
        "json_304": summary(measure(client, url, args.requests, HTTP_IF_NONE_MATCH=first["ETag"])),
        "text_2000": summary(measure(client, text_url, args.requests)),
        "after_change": summary(measure_after_change(client, url, patient, args.changes)),
    }
    audited = AuditEvent.objects.filter(action="api.context", outcome="ok").count()
    out = {
        "database": connection.vendor, "resources": len(snapshot.resources), "cold_ms": round(cold, 1),
        "pack_bytes": len(first.content), "safety_lines": sum(len(pack["safety"][k]) for k in ("allergies", "medications", "conditions")),
        "do_not_suggest": len(pack["do_not_suggest"]), "memories": sum(len(v) for v in pack["memories"].values()),
        "about_others": len(pack["about_others"]), "open_discrepancies": len(pack["open_discrepancies"]),
        "audit_rows": audited, "cpus": os.cpu_count(), "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        **results,
    }
    for name, r in results.items():
        print(f"{name:12s} p50 {r['p50']:6.1f} ms   p95 {r['p95']:6.1f} ms   max {r['max']:6.1f} ms   "
              f"CPU p50 {r['cpu_p50']:5.1f} ms  p95 {r['cpu_p95']:5.1f} ms   ({r['n']} requests)")
    print(f"cold first request {cold:.1f} ms; pack {len(first.content):,} bytes; {audited} audit rows; "
          f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(json.dumps(out))
    worst = max(r["p95"] for r in results.values())
    print(f"target p95 < 50 ms: {'met' if worst < 50 else 'NOT met'} (worst wall p95 {worst:.1f} ms; "
          f"worst CPU p95 {max(r['cpu_p95'] for r in results.values()):.1f} ms)")


if __name__ == "__main__":
    main()

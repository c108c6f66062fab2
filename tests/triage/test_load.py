"""Twenty nurses at once on the queue, in CI: gunicorn on the test PostgreSQL database and locust over
loopback (bench/load_queue.py's nurse: queue with filters, findings, notes, claims) for a short run.
Every request must succeed; the 60-second figures are bench/load_queue.py's."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
from django.db import connection

from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create
from tests.conftest import need

from .factories import item_create, patient_create

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "Quiet-harbour-pines-2026"


def test_twenty_nurses_working_the_queue_get_no_error() -> None:
    need(connection.vendor == "postgresql", "DATABASE_URL (PostgreSQL) not set")
    sys.path.insert(0, str(ROOT / "bench"))
    import load_queue

    patients = [patient_create() for _ in range(3)]
    findings = []
    for n in range(30):
        item = item_create(patient=patients[n % 3], kind=("gap", "contradiction")[n % 2], severity=("low", "medium", "high")[n % 3],
                           safety_critical=n % 3 == 2, category=("medication", "condition", "allergy")[n % 3])
        findings.append(item.finding_id)
    names = [f"load-nurse-{i:02d}" for i in range(20)]
    for name in names:
        user_create(username=name, role=Role.NURSE, password=PASSWORD)
    db = connection.settings_dict
    url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    with tempfile.TemporaryDirectory(prefix="test-load-") as tmp:
        users_file = Path(tmp) / "users.json"
        users_file.write_text(json.dumps({"users": names, "password": PASSWORD, "findings": findings}))
        port = load_queue.free_port()
        server = load_queue.server_start(port=port, workers=2, env={"DATABASE_URL": url, "DB_CONN_MAX_AGE": "0"},
                                         log=Path(tmp) / "gunicorn.log")
        try:
            rows, failures, _code = load_queue.locust_run(host=f"http://127.0.0.1:{port}", users_file=users_file, users=20,
                                                          seconds=15, prefix=Path(tmp) / "stats")
        finally:
            server.terminate()
            server.wait(timeout=30)
    total = next(r for r in rows if r["Name"] == "Aggregated")
    by_name = {r["Name"]: int(r["Request Count"]) for r in rows}
    assert int(total["Request Count"]) > 100, rows
    assert by_name.get("/login/ (POST)", 0) == 20 and by_name.get("/triage/ (queue)", 0) > 0  # every nurse signed in and worked
    assert int(total["Failure Count"]) == 0, failures

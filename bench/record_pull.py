"""Benchmark: pull the 2,000+ resource patient from @medplum/fhir-router (wall time, pages, peak memory).

Run from the repository root (Node.js and `npm ci` in tests/fhir_server needed):

    python bench/record_pull.py [--runs 3] [--page-sizes default,100,1000] [--json OUT]

It starts tests/fhir_server/server.mjs on a free port, migrates a throw-away SQLite database, and times
`record_pull` (every page over HTTP with the bearer, same-host checks, snapshot hashing and storage).
Peak memory is the Python heap peak of one traced pull (tracemalloc) and the process's max RSS.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--page-sizes", default="default,100,1000",
                        help="_count values to time; 'default' leaves FHIR_PAGE_SIZE and FHIR_PULL_CONCURRENCY as configured")
    parser.add_argument("--json", default="", help="also write the figures to this file")
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench-pull-")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.utils import timezone

    from reconcile_app.fhir.models import Patient, RecordPull, RecordSnapshot
    from reconcile_app.fhir.services import record_pull
    from reconcile_app.smart.models import EhrRegistration, SmartLaunch
    from tests.fhir_server.fixtures import LARGE_PATIENT, LARGE_PATIENT_ID, medplum_start, medplum_stop

    from reconcile_app.smart import client as smart_client

    # Time spent waiting on the server (HTTP + JSON decode), to tell it apart from our own work.
    http_seconds = [0.0]
    real_fhir_get = smart_client.fhir_get

    def timed_fhir_get(**kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return real_fhir_get(**kwargs)
        finally:
            http_seconds[0] += time.perf_counter() - started

    smart_client.fhir_get = timed_fhir_get
    call_command("migrate", verbosity=0)
    proc, base = medplum_start(bundles=[LARGE_PATIENT])
    try:
        registration = EhrRegistration.objects.create(name="medplum", iss=base, client_id="bench")
        launch = SmartLaunch.objects.create(
            registration=registration, kind=SmartLaunch.Kind.EHR, status=SmartLaunch.Status.ACTIVE,
            patient_fhir_id=LARGE_PATIENT_ID, client_state={"server": {"auth": {"access_token": "bench-token"}}},
            expires_at=timezone.now() + timedelta(hours=1),
        )
        patient = Patient.objects.create(registration=registration, fhir_id=LARGE_PATIENT_ID)
        print(f"server {base}  patient {LARGE_PATIENT_ID}  runs {args.runs}")
        print(f"{'_count':>7} {'pages':>6} {'resources':>10} {'wall s (median)':>16} {'min':>7} {'max':>7} "
              f"{'HTTP s (median)':>16} {'heap peak MiB':>14}")
        configured = settings.FHIR_PAGE_SIZE
        figures = []
        for label in args.page_sizes.split(","):
            size = configured if label == "default" else int(label)
            settings.FHIR_PAGE_SIZE = size
            record_pull(patient=patient, launch=launch)  # warm-up: connections, first snapshot store
            times, waits = [], []
            pull = None
            for _ in range(args.runs):
                RecordSnapshot.objects.filter(patient=patient).delete()  # store a new snapshot every time
                http_seconds[0] = 0.0
                started = time.perf_counter()
                pull = record_pull(patient=patient, launch=launch)
                times.append(time.perf_counter() - started)
                waits.append(http_seconds[0])
                assert pull.status == RecordPull.Status.OK, pull.error
            RecordSnapshot.objects.filter(patient=patient).delete()
            tracemalloc.start()
            record_pull(patient=patient, launch=launch)
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            print(f"{size:>7} {pull.pages:>6} {pull.resources:>10} {statistics.median(times):>16.2f} "
                  f"{min(times):>7.2f} {max(times):>7.2f} {statistics.median(waits):>16.2f} {peak:>14.1f}"
                  f"{'  (default settings, concurrency %d)' % settings.FHIR_PULL_CONCURRENCY if label == 'default' else ''}")
            figures.append({"label": label, "count": size, "pages": pull.pages, "resources": pull.resources,
                            "wall_s_median": round(statistics.median(times), 3), "wall_s_all": [round(t, 3) for t in times],
                            "http_s_median": round(statistics.median(waits), 3), "heap_peak_mib": round(peak, 1),
                            "concurrency": settings.FHIR_PULL_CONCURRENCY})
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"process max RSS {rss:.0f} MiB")
        if args.json:
            import json

            Path(args.json).write_text(json.dumps({"runs": args.runs, "pulls": figures, "max_rss_mib": round(rss)}, indent=2) + "\n")
    finally:
        medplum_stop(proc)


if __name__ == "__main__":
    main()

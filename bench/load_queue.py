#!/usr/bin/env python
"""Benchmark: 20 nurses working the triage queue at once for 60 s, on PostgreSQL, over loopback (locust).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/reconcile_bench_triage python bench/load_queue.py \\
        [--users 20] [--seconds 60] [--workers 2] [--json OUT]

The data is bench/queue_p95.py's (100,000 findings; seeded first if the database has fewer). Twenty nurse
accounts sign in to a gunicorn server (config.settings.test: DEBUG off, the deployed counts cache) and
each runs bench/locust_queue.py's nurse: the queue with the usual filters, findings opened side by side, a
note, a claim. Locust (a tool venv in var/bench-tools, not a dependency of the app) reports every request:
p50/p95/max and errors, overall and per kind. Target: no errors; p95 under the queue's 150 ms budget is
reported for what it is on this machine (2 cores shared by the server, PostgreSQL and the 20 users).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "var" / "bench-tools"
LOCUST = "locust==2.47.0"
PASSWORD = "Quiet-harbour-pines-2026"


def tools_python() -> Path:
    python = TOOLS / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(TOOLS)], check=True)
    if subprocess.run([str(python), "-c", "import locust"], capture_output=True).returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", LOCUST], check=True)
    return python


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare(users: int, findings: int) -> dict:
    """Seed (bench/queue_p95.py's data) and create the nurses; returns what the locust users need."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    script = f"""
import json, sys
sys.argv = ["queue_p95"]
sys.path.insert(0, {str(ROOT / "bench")!r})
import queue_p95 as q
from django.contrib.auth.models import User
from django.core.management import call_command
from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create
from reconcile_app.reconciliation.models import Finding
from reconcile_app.triage.models import TriageItem
call_command("migrate", verbosity=0)
nurses = [User.objects.filter(username=f"bench-n{{i}}").first() or user_create(username=f"bench-n{{i}}", role=Role.NURSE, password=None) for i in range(4)]
if Finding.objects.count() < {findings}:
    q.seed(findings={findings} - Finding.objects.count(), patients=3000, nurses=nurses)
names = []
for i in range({users}):
    name = f"load-nurse-{{i:02d}}"
    user = User.objects.filter(username=name).first() or user_create(username=name, role=Role.NURSE, password={PASSWORD!r})
    user.set_password({PASSWORD!r}); user.save(update_fields=["password"])
    names.append(name)
ids = list(TriageItem.objects.filter(status__in=("new", "in_review", "escalated")).order_by("band", "created_at")
           .values_list("finding_id", flat=True)[:2000])
print(json.dumps({{"users": names, "password": {PASSWORD!r}, "findings": ids}}))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def server_start(*, port: int, workers: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    """gunicorn on loopback; returns once it answers. The test settings (DEBUG off): production's over plain
    http would drop its Secure cookies, and their password hasher matches the accounts prepare() creates."""
    server_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test",
                  "ALLOWED_HOSTS": "127.0.0.1,localhost", "CELERY_BROKER_URL": os.environ.get("LOAD_BROKER_URL", "memory://"),
                  "DB_CONN_MAX_AGE": "600", "LOG_LEVEL": "WARNING", "LOGIN_FAILURE_LIMIT": "1000", **env}
    server = subprocess.Popen(
        # keep-alive longer than a nurse's pause between clicks (locust waits 0.5-2 s): with gunicorn's 2 s default a
        # client reuses a connection the server is closing at that moment and gets "connection reset by peer"
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", str(workers), "--threads", "4", "--keep-alive", "5",
         "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT, env=server_env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))  # noqa: SIM115
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2)
            return server
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(0.5)
    server.terminate()
    raise RuntimeError("the server did not start: " + log.read_text()[-2000:])


def locust_run(*, host: str, users_file: Path, users: int, seconds: int, prefix: Path) -> tuple[list[dict], list[dict], int]:
    """Locust headless against host; returns its stats rows, failure rows and exit code."""
    run = subprocess.run(
        [str(tools_python()), "-m", "locust", "-f", str(ROOT / "bench" / "locust_queue.py"), "--headless", "--users", str(users),
         "--spawn-rate", str(users), "--run-time", f"{seconds}s", "--host", host, "--csv", str(prefix),
         "--only-summary", "--loglevel", "WARNING"],
        cwd=ROOT, env={**os.environ, "LOAD_USERS_FILE": str(users_file)}, capture_output=True, text=True)
    rows = list(csv.DictReader(open(f"{prefix}_stats.csv", encoding="utf-8")))  # noqa: SIM115
    failures = list(csv.DictReader(open(f"{prefix}_failures.csv", encoding="utf-8")))  # noqa: SIM115
    return rows, failures, run.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (4 threads each)")
    parser.add_argument("--findings", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reconcile_bench_triage")
    if not os.environ["DATABASE_URL"].startswith("postgres"):
        raise SystemExit("this benchmark needs PostgreSQL (DATABASE_URL=postgres://...)")
    tools_python()
    data = prepare(args.users, args.findings)
    port = free_port()
    host = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        users_file = Path(tmp) / "users.json"
        users_file.write_text(json.dumps(data))
        server = server_start(port=port, workers=args.workers, env={}, log=Path(tmp) / "gunicorn.log")
        try:
            load_before = os.getloadavg()[0]
            rows, failures, code = locust_run(host=host, users_file=users_file, users=args.users, seconds=args.seconds,
                                              prefix=Path(tmp) / "stats")
        finally:
            server.terminate()
            server.wait(timeout=30)

    def figures(row: dict) -> dict:
        return {"requests": int(row["Request Count"]), "failures": int(row["Failure Count"]), "p50_ms": float(row["50%"] or 0),
                "p95_ms": float(row["95%"] or 0), "max_ms": float(row["Max Response Time"] or 0), "rps": float(row["Requests/s"] or 0)}

    total = next(r for r in rows if r["Name"] == "Aggregated")
    result = {"users": args.users, "seconds": args.seconds, "gunicorn_workers": args.workers, "overall": figures(total),
              "by_request": {f"{r['Type']} {r['Name']}": figures(r) for r in rows if r["Name"] != "Aggregated"},
              "failures": [{k: f[k] for k in ("Method", "Name", "Error", "Occurrences")} for f in failures][:10],
              "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)], "cpus": os.cpu_count(),
              "locust_exit": code}
    o = result["overall"]
    print(f"{args.users} nurses for {args.seconds} s on PostgreSQL over loopback: {o['requests']} requests ({o['rps']:.1f}/s), "
          f"{o['failures']} errors; p50 {o['p50_ms']:.0f} ms, p95 {o['p95_ms']:.0f} ms, max {o['max_ms']:.0f} ms "
          f"(load average {result['load_average'][0]} -> {result['load_average'][1]} on {result['cpus']} CPUs)")
    for name, f in sorted(result["by_request"].items()):
        print(f"  {name:40s} n={f['requests']:5d}  errors {f['failures']:3d}  p50 {f['p50_ms']:6.0f}  p95 {f['p95_ms']:6.0f}  max {f['max_ms']:6.0f}")
    for f in result["failures"]:
        print(f"  error: {f['Method']} {f['Name']}: {f['Error'][:120]} x{f['Occurrences']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if o["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

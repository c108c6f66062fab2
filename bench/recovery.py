"""Benchmark: how long the pipeline takes to resume after a worker is killed with SIGKILL, and after a
Redis outage (issue 12's bound: two minutes).

Run from the repository root with PostgreSQL and redis-server on the machine:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench CELERY_BROKER_URL=redis://127.0.0.1:6379/13 \\
        python bench/recovery.py [--runs 3]

Each run is one pass of tests/transcripts/test_recovery.py (its own Redis on a free port, real workers
running their own beat, gunicorn for the API, production lease, sweep and visibility timeout); the
tests print the measured times, which are collected here: from the SIGKILL to the survivor's first
extraction of the killed patient, and from Redis coming back to the last pending session done.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = {
    "SIGKILL -> patient resumed": re.compile(r"resumed ([\d.]+) s after the SIGKILL"),
    "Redis back -> pipeline caught up": re.compile(r"pipeline caught up ([\d.]+) s after Redis came back"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("set DATABASE_URL to PostgreSQL (and CELERY_BROKER_URL to any redis:// URL)")
    times: dict[str, list[float]] = {name: [] for name in PATTERNS}
    for run in range(1, args.runs + 1):
        done = subprocess.run([sys.executable, "-m", "pytest", "tests/transcripts/test_recovery.py", "-q", "-s", "-p", "no:xdist",
                               "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "REQUIRE_SERVICES": "1"})
        for name, pattern in PATTERNS.items():
            times[name] += [float(m) for m in pattern.findall(done.stdout)]
        print(f"run {run}: exit {done.returncode}", flush=True)
        if done.returncode != 0:
            print(done.stdout[-3000:])
    print(f"\n{'what':<36} {'runs':>4} {'median s':>9} {'max s':>7}  (bound 120 s)")
    for name, values in times.items():
        if values:
            print(f"{name:<36} {len(values):>4} {statistics.median(values):>9.1f} {max(values):>7.1f}")


if __name__ == "__main__":
    main()

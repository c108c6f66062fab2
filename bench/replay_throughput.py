#!/usr/bin/env python
"""Benchmark: a 20-patient replay through the production services, start-up included (patient turns/s).

    python bench/replay_throughput.py [DATASET_DIR] [--patients 20] [--runs 3] [--jobs N] [--single] [--json OUT.json]

DATASET_DIR defaults to corpus/tune. Twenty patients are taken round-robin across the authors (the
letters of the folder name), so one voice does not dominate; in the tune split only the fifteen authors it held
when the figure was first taken (PINNED_AUTHORS), so the same twenty patients are timed as the split grows. Each run is a fresh process:
`python manage.py replay SET --out OUT --no-progress --timings T.json --jobs N` (N: one per CPU by default), timed
from spawn to exit (Python
and Django start-up, the engines' load, a scratch database, the import, extraction, reconciliation,
routing and the results files). The command's own breakdown separates the engines (their load and every
extract/reconcile call) from the services around them. Peak memory is the child's max RSS.
Target: >= 200 patient turns/s on the 2-core machine, start-up included. The headline figure is the default,
one replay process per CPU; `--single` adds one run in a single process (--jobs 1), reported apart (`single_process`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_TURNS_PER_S = 200.0
# The tune split's authors when the replay figure was first taken (rounds 1, 2, 4 and 6): later rounds add authors,
# and a round-robin over all of them would time different patients each time the split grows.
PINNED_AUTHORS = frozenset({"abe", "ava", "ben", "cal", "dee", "gus", "hal", "ivy", "pia", "quy", "raf", "sol", "xia", "yul", "zoe"})


def pick(dataset: Path, n: int) -> list[Path]:
    """n patient folders, round-robin over author prefixes (ava01, ben01, ..., ava02, ...)."""
    folders = sorted(p for p in dataset.iterdir() if (p / "bundle.json").is_file() and (p / "transcript.json").is_file())
    by_author: dict[str, list[Path]] = defaultdict(list)
    for folder in folders:
        by_author[re.sub(r"[^a-z].*$", "", folder.name.lower()) or folder.name].append(folder)
    authors = [a for a in sorted(by_author) if a in PINNED_AUTHORS] or sorted(by_author)
    queues = [by_author[a] for a in authors]
    chosen: list[Path] = []
    while len(chosen) < n and any(queues):
        for queue in queues:
            if queue and len(chosen) < n:
                chosen.append(queue.pop(0))
    return chosen


def run_once(dataset: Path, work: Path, index: int, jobs: int) -> dict[str, Any]:
    out, timings = work / f"out{index}", work / f"timings{index}.json"
    cmd = [sys.executable, "manage.py", "replay", str(dataset), "--out", str(out), "--no-progress", "--timings", str(timings),
           "--jobs", str(jobs)]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.local")}
    # Bytecode as an installed deployment has it: where the environment forbids writing .pyc files next to the source
    # (PYTHONDONTWRITEBYTECODE), every replay would otherwise compile the whole project at start-up (~2 CPU-s).
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "reconcile-bench-pycache"))
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    stdout, stderr = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"replay failed ({proc.returncode}):\n{stderr[-2000:]}")
    report = json.loads(timings.read_text())
    report.update(
        wall_s=round(wall, 3), process_cpu_s=round(usage.ru_utime + usage.ru_stime, 3), peak_rss_mib=round(usage.ru_maxrss / 1024, 1),
        startup_s=round(wall - report["total_s"], 3), problems_text=[line for line in stderr.splitlines() if line.startswith("PROBLEM")][:5],
        stdout=stdout.strip().splitlines()[-1:],
    )
    report["patient_turns_per_s"] = round(report["patient_turns"] / wall, 1)
    report["sessions_per_s"] = round(report["sessions"] / wall, 2)
    return report


def measure(dataset: Path, patients: int, runs: int, jobs: int, single: bool = False) -> dict[str, Any]:
    chosen = pick(dataset, patients)
    if len(chosen) < patients:
        raise SystemExit(f"{dataset} holds {len(chosen)} patient folders; {patients} wanted")
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        work = Path(tmp)
        subset = work / "set"
        subset.mkdir()
        for folder in chosen:
            (subset / folder.name).symlink_to(folder.resolve(), target_is_directory=True)
        reports = [run_once(subset, work, i, jobs) for i in range(runs)]
        alone = run_once(subset, work, runs, 1) if single else None
    best = sorted(reports, key=lambda r: r["wall_s"])[len(reports) // 2]  # the median run, whole
    extra = {} if alone is None else {"single_process": {
        "patient_turns_per_s": alone["patient_turns_per_s"], "wall_s": alone["wall_s"], "run": alone,
        "services_cpu_ms_per_session": round(1000 * alone["cpu_s"]["services"] / max(alone["sessions"], 1), 1)}}
    return {**extra,
        "dataset": str(dataset), "patients": [p.name for p in chosen], "runs": runs, "jobs": jobs,
        "wall_s_all": [r["wall_s"] for r in reports], "median_run": best,
        "patient_turns_per_s": best["patient_turns_per_s"],
        "patient_turns_per_s_all": [r["patient_turns_per_s"] for r in reports],
        "engine_only_turns_per_s": round(best["patient_turns"] / max(best["extraction_engine_s"] + best["reconciliation_engine_s"], 1e-9), 1),
        "target_turns_per_s": TARGET_TURNS_PER_S, "meets_target": best["patient_turns_per_s"] >= TARGET_TURNS_PER_S,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=ROOT / "corpus" / "tune")
    parser.add_argument("--patients", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="replay worker processes (default: one per CPU)")
    parser.add_argument("--single", action="store_true", help="also one run in a single process (--jobs 1), reported apart")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    if not args.dataset.is_dir():
        raise SystemExit(f"{args.dataset} is not a directory (pass a dataset folder)")
    result = measure(args.dataset, args.patients, args.runs, args.jobs, args.single)
    r = result["median_run"]
    print(f"{len(result['patients'])} patients, {r['sessions']} sessions, {r['patient_turns']} patient turns; runs {result['runs']}; "
          f"{result['jobs']} replay processes; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"wall (start-up included), all runs: {', '.join(f'{w:.2f}s' for w in result['wall_s_all'])}")
    print(f"median run: {r['wall_s']:.2f}s wall = {result['patient_turns_per_s']:.0f} patient turns/s, "
          f"{r['sessions_per_s']:.1f} sessions/s (target {TARGET_TURNS_PER_S:.0f} turns/s: {'met' if result['meets_target'] else 'NOT met'})")
    print(f"  process start-up (python, django) {r['startup_s']:.2f}s; engines' load {r['engines_load_s']:.2f}s; "
          f"extraction engine {r['extraction_engine_s']:.2f}s; reconciliation engine {r['reconciliation_engine_s']:.2f}s; "
          f"services {r['services_s']:.2f}s")
    print(f"  engines alone {result['engine_only_turns_per_s']:.0f} patient turns/s; CPU s {r['process_cpu_s']:.1f} (all processes; in the workers: "
          f"extraction {r['cpu_s']['extraction']:.1f}, reconciliation {r['cpu_s']['reconciliation']:.1f}, services {r['cpu_s']['services']:.1f}); "
          f"peak RSS {r['peak_rss_mib']:.0f} MiB; "
          f"problems {r['problems']}")
    if "single_process" in result:
        one = result["single_process"]
        c = one["run"]["cpu_s"]
        print(f"single process (--jobs 1): {one['wall_s']:.2f}s wall = {one['patient_turns_per_s']:.0f} patient turns/s; CPU s in the process: "
              f"engines' load {c['engines_load']:.1f}, extraction {c['extraction']:.1f}, reconciliation {c['reconciliation']:.1f}, "
              f"services {c['services']:.1f} ({one['services_cpu_ms_per_session']:.0f} ms per session)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

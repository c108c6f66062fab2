#!/usr/bin/env python
"""Run every benchmark of bench/ and write one JSON file; optionally regenerate the README's figures table.

    python bench/run_all.py --out bench/results.json [--only replay,pull] [--readme]
    python bench/run_all.py --readme-from bench/results.json      # the table again from an earlier run

Each benchmark runs as its own command (the one the README names beside its figure) with its own JSON
output where it has one, else its printed summary lines; both are kept in the results file with the
command, its exit code and wall time, and the machine it ran on (CPU model, cores, memory, load average
before and after, commit). --readme replaces the table between the README's `figures:start` and
`figures:end` markers with one generated from the results file: every figure there is one this
command printed. Benchmarks that need a service the machine lacks (PostgreSQL, Node) are recorded as
skipped, with the reason.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PG_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reconcile_bench_triage")


@dataclass
class Bench:
    key: str
    what: str  # the README's "what" column
    command: list[str]  # {json} is replaced by a temporary file the benchmark writes
    needs: list[str] = field(default_factory=list)  # "postgres", "node", "tune"
    env: dict[str, str] = field(default_factory=dict)
    summary: Callable[[dict[str, Any]], str] | None = None  # the README's figure, from the JSON
    timeout: int = 3600
    printed: list[str] = field(default_factory=list)  # without JSON: the printed lines holding these, as printed


def _replay(r: dict[str, Any]) -> str:
    m = r["median_run"]
    return (f"{r['patient_turns_per_s']:.0f} patient turns/s ({m['patient_turns']} turns, {m['sessions']} sessions, "
            f"{len(r['patients'])} patients in {m['wall_s']:.1f} s, start-up included, {r['jobs']} processes; target 200: "
            f"{'met' if r['meets_target'] else 'not met'}); engines alone {r['engine_only_turns_per_s']:.0f} turns/s; "
            f"start-up {m['startup_s']:.1f} s, engines' load {m['engines_load_s']:.1f} s; CPU s: extraction "
            f"{m['cpu_s']['extraction']:.1f}, reconciliation {m['cpu_s']['reconciliation']:.1f}, services {m['cpu_s']['services']:.1f}; "
            f"peak RSS {m['peak_rss_mib']:.0f} MiB")


def _pull(r: dict[str, Any]) -> str:
    parts = []
    for p in r["pulls"]:
        label = "default settings" if p["label"] == "default" else f"_count={p['count']}"
        parts.append(f"{p['resources']} resources, {p['pages']} pages in {p['wall_s_median']:.2f} s median at {label}"
                     + (f" (_count={p['count']}, {p['concurrency']} searches at once)" if p["label"] == "default" else ""))
    return "; ".join(parts) + f"; process RSS {r['max_rss_mib']} MiB"


def _queue(r: dict[str, Any]) -> str:
    live, cached = r["live_counts"], r["cached_counts"]
    return (f"p95 {live['p95_ms']:.0f} ms with live facet counts (computed on every request), {cached['p95_ms']:.0f} ms as "
            f"deployed (counts cached 30 s); web CPU p95 {live['cpu_p95_ms']:.0f} ms live; {r['findings']:,} findings in "
            f"{r['items']:,} items ({r['open_items']:,} open, {r['quotes']:,} quotes); load average {r['load_average']} on {r['cpus']} CPUs")


def _load(r: dict[str, Any]) -> str:
    o = r["overall"]
    return (f"{r['users']} nurses for {r['seconds']} s: {o['requests']} requests ({o['rps']:.1f}/s), {o['failures']} errors, "
            f"p50 {o['p50_ms']:.0f} ms, p95 {o['p95_ms']:.0f} ms, max {o['max_ms']:.0f} ms; load average {r['load_average'][1]} "
            f"on {r['cpus']} CPUs")


BENCHES = [
    Bench("replay", "Replay of 20 tune patients through the production services (start-up included)",
          [PY, "bench/replay_throughput.py", "corpus/tune", "--runs", "1", "--json", "{json}"], needs=["tune"], summary=_replay),
    Bench("pull", "Record pull of the 2,110-resource patient from `@medplum/fhir-router`",
          [PY, "bench/record_pull.py", "--runs", "5", "--page-sizes", "default,100", "--json", "{json}"], needs=["node"], summary=_pull),
    Bench("queue", "Queue page, 100,000 findings in PostgreSQL (Django test client, full middleware)",
          [PY, "bench/queue_p95.py", "--requests", "240", "--json", "{json}"], needs=["postgres"], env={"DATABASE_URL": PG_URL},
          summary=_queue),
    Bench("load", "20 concurrent nurses working the queue for 60 s (gunicorn + PostgreSQL, locust over loopback)",
          [PY, "bench/load_queue.py", "--json", "{json}"], needs=["postgres"], env={"DATABASE_URL": PG_URL}, summary=_load),
    Bench("extraction", "Extraction speed (rules engine alone, one process, the dev set's patient turns)", [PY, "bench/extraction_speed.py"],
          printed=["patient turns / s", "extraction s (best pass)", "lexicon load s", "lexicon first build", "max RSS"]),
    Bench("parse", "Transcript parsing", [PY, "bench/replay_speed.py", "--parse-only"]),
    Bench("context", "Context pack of a 1,000-resource record (`GET /api/patients/<id>/context`, SQLite; issue 15's benchmark)",
          [PY, "bench/context_pack_p95.py"], printed=["json ", "json_304", "text_2000", "after_change", "target p95"]),
]


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")  # noqa: SIM115
    except OSError:
        pass
    mem = 0
    try:
        mem = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal"))) // 1024  # noqa: SIM115
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"cpu": cpu, "cpus": os.cpu_count(), "memory_mib": mem, "python": platform.python_version(), "os": platform.platform(),
            "commit": commit, "load_average": [round(x, 2) for x in os.getloadavg()]}


def missing(bench: Bench) -> str:
    for need in bench.needs:
        if need == "node" and not shutil.which("node"):
            return "Node.js not installed"
        if need == "tune" and not (ROOT / "corpus" / "tune").is_dir():
            return "corpus/tune not present"
        if need == "postgres":
            import socket

            try:
                socket.create_connection(("127.0.0.1", 5432), timeout=2).close()
            except OSError:
                return "PostgreSQL not reachable on 127.0.0.1:5432"
    return ""


def run(bench: Bench) -> dict[str, Any]:
    shown = " ".join(("X.json" if part == "{json}" else part) for part in bench.command).replace(PY, "python")
    prefix = " ".join(f"{k}={v}" for k, v in bench.env.items())
    entry: dict[str, Any] = {"what": bench.what, "command": f"{prefix} {shown}".strip()}
    reason = missing(bench)
    if reason:
        entry.update(status="skipped", reason=reason)
        return entry
    with tempfile.TemporaryDirectory(prefix=f"bench-{bench.key}-") as tmp:
        out = Path(tmp) / "figures.json"
        cmd = [str(out) if part == "{json}" else part for part in bench.command]
        started, load = time.monotonic(), os.getloadavg()[0]
        proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **bench.env}, capture_output=True, text=True, timeout=bench.timeout)
        entry.update(exit_code=proc.returncode, seconds=round(time.monotonic() - started, 1),
                     load_average=[round(load, 2), round(os.getloadavg()[0], 2)],
                     printed=[line for line in proc.stdout.splitlines() if line.strip()][-25:])
        if out.exists():
            entry["figures"] = json.loads(out.read_text())
        entry["status"] = "ok" if proc.returncode == 0 else "failed"
        if proc.returncode != 0:
            entry["stderr"] = proc.stderr[-1500:]
    entry["figure"] = figure_of(bench, entry)
    return entry


def figure_of(bench: Bench, entry: dict[str, Any]) -> str:
    """The README's figure: the benchmark's summary of its JSON, else the printed lines it names."""
    if bench.summary is not None and "figures" in entry:
        return bench.summary(entry["figures"])
    if entry.get("printed"):
        lines = [line for line in entry["printed"] if not line.lstrip().startswith("{")]  # a JSON dump is not a figure
        chosen = [line for line in lines if any(key in line for key in bench.printed)] if bench.printed else lines[-3:]
        return "; ".join(" ".join(line.split()) for line in chosen)
    return ""


def readme_table(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"Generated by `python bench/run_all.py --out bench/results.json --readme` on {results['finished_at'][:16].replace('T', ' ')} UTC, "
        f"commit {m['commit']}: {m['cpu'] or 'unknown CPU'}, {m['cpus']} CPUs, {m['memory_mib']:,} MiB, Python {m['python']}; "
        f"load average {m['load_average'][0]} at the start (other jobs shared the machine). Each figure is what its command printed.",
        "",
        "| what | figure | command |",
        "|---|---|---|",
    ]
    benches = {b.key: b for b in BENCHES}
    for key, entry in results["benchmarks"].items():
        if key in benches and entry.get("status") != "skipped":
            entry["figure"] = figure_of(benches[key], entry)
        if entry.get("status") == "skipped":
            figure = f"not measured here: {entry['reason']}"
        elif entry.get("status") == "failed":
            figure = f"failed (exit {entry.get('exit_code')}): " + (entry.get("figure") or "")
        else:
            figure = entry.get("figure", "")
        figure = figure.replace("|", "\\|")
        lines.append(f"| {entry['what']} | {figure} | `{entry['command']}` |")
    return "\n".join(lines)


def readme_update(results: dict[str, Any]) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    start, end = "<!-- figures:start (generated by bench/run_all.py; do not edit by hand) -->", "<!-- figures:end -->"
    block = f"{start}\n{readme_table(results)}\n{end}"
    if start in text and end in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _m: block, text, flags=re.S)
    else:
        raise SystemExit("README.md has no figures markers")
    readme.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results.json")
    parser.add_argument("--only", default="", help=f"comma-separated keys among {', '.join(b.key for b in BENCHES)}")
    parser.add_argument("--readme", action="store_true", help="regenerate the README's figures table from the results")
    parser.add_argument("--readme-from", type=Path, default=None, help="only regenerate the table from this results file")
    args = parser.parse_args()
    if args.readme_from is not None:
        readme_update(json.loads(args.readme_from.read_text()))
        return 0
    only = {k for k in args.only.split(",") if k}
    results: dict[str, Any] = {"started_at": datetime.now(timezone.utc).isoformat(), "machine": machine(), "benchmarks": {}}
    if only and args.out.exists():  # a partial run updates the earlier file
        results["benchmarks"] = json.loads(args.out.read_text()).get("benchmarks", {})
    for bench in BENCHES:
        if only and bench.key not in only:
            continue
        print(f"== {bench.key}: {bench.what}", flush=True)
        entry = run(bench)
        results["benchmarks"][bench.key] = entry
        print(f"   {entry.get('status')}: {entry.get('figure') or entry.get('reason') or ''}", flush=True)
        results["finished_at"] = datetime.now(timezone.utc).isoformat()
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    results["benchmarks"] = {b.key: results["benchmarks"][b.key] for b in BENCHES if b.key in results["benchmarks"]}
    results["finished_at"] = datetime.now(timezone.utc).isoformat()
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.readme:
        readme_update(results)
    return 0 if all(e.get("status") != "failed" for e in results["benchmarks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

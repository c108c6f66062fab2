"""Score the sealed split end to end (replay, then evaluate) and print aggregates only.

    python bench/sealed_eval.py                       # once per engine minor version; appends to SCORES.jsonl
    python bench/sealed_eval.py --force "why again"   # a second score of the same minor version, with the reason kept
    python bench/sealed_eval.py --validation          # the validation split (corpus/val): aggregates only, any number of times
    python bench/sealed_eval.py --validation --breakdown   # plus false alarms and traps taken in counts, by how they were raised
    python bench/sealed_eval.py --fresh               # the fresh split (corpus/fresh): a second sealed test, once per version

The sealed patients live in corpus/sealed/sealed.tar.gz and are never opened by whoever changes the engines:
this script unpacks them into a private temporary folder, runs `manage.py replay` and `manage.py evaluate
--json` there with their output swallowed (it could quote the transcripts), prints only the aggregate
numbers, logs them with the engine versions in corpus/sealed/SCORES.jsonl, and deletes the folder.

The validation split (corpus/val/val.tar.gz, authors who wrote after the engines' last change) is handled the
same way but may be scored as often as needed: it is the yardstick for choosing between engine changes without
reading the text, so that the sealed split's one score per version stays a test.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from reconcile_app.evaluation.breakdown import breakdown_report  # noqa: E402  (pure: no Django needed)
SEALED = ROOT / "corpus" / "sealed"
ARCHIVE = SEALED / "sealed.tar.gz"
LOG = SEALED / "SCORES.jsonl"
VALIDATION = ROOT / "corpus" / "val"
# Written after every engine change of a session (briefs round 10): sealed like corpus/sealed (aggregates only, once
# per engine minor version), a second held-out reading by authors the engines have never met.
FRESH = ROOT / "corpus" / "fresh"
KEYS = (
    "scenarios", "detection_rate", "resource_informed_detection", "safety_scenarios", "safety_recall", "safety_recall_strict",
    "severity_within_one", "severity_exact", "kind_accuracy", "resource_recall", "resource_precision", "plain_sessions",
    "false_discrepancies_per_plain_session", "false_contradictions", "traps", "trap_violations",
)


def engine_versions() -> dict[str, str]:
    code = (
        "import django, json; django.setup();"
        "from reconcile_app.narrative.engines import get_extractor;"
        "from reconcile_app.reconciliation.engines import get_reconciler;"
        "e, r = get_extractor(None), get_reconciler(None);"
        "print(json.dumps({'extractor': f'{e.name}/{e.version}', 'reconciler': f'{r.name}/{r.version}'}))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.test")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def minor(version: str) -> str:
    name, _, number = version.partition("/")
    return name + "/" + ".".join(number.split(".")[:2])


def already_scored(versions: dict[str, str], log: Path) -> dict | None:
    if not log.exists():
        return None
    key = (minor(versions["extractor"]), minor(versions["reconciler"]))
    for line in log.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if (minor(row["extractor"]), minor(row["reconciler"])) == key:
            return row
    return None


def score(archive: Path, engine: str | None, *, breakdown: bool = False) -> tuple[dict, float, dict | None]:
    with tempfile.TemporaryDirectory(prefix="sealed-") as tmp:
        os.chmod(tmp, 0o700)
        data, results = Path(tmp) / "data", Path(tmp) / "results"
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(data, filter="data")
        roots = [p for p in data.iterdir() if p.is_dir()]
        dataset = roots[0] if len(roots) == 1 and not (roots[0] / "labels.json").exists() else data
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.test")}
        replay = [sys.executable, "manage.py", "replay", str(dataset), "--out", str(results), "--no-progress"]
        if engine:
            replay += ["--engine", engine]
        started = time.monotonic()
        # Output swallowed on purpose: replay's PROBLEM lines and evaluate's tables may quote sealed text.
        done = subprocess.run(replay, cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"replay failed (exit {done.returncode}); rerun on a non-sealed set to debug")
        elapsed = time.monotonic() - started
        summary_path, breakdown_path = Path(tmp) / "summary.json", Path(tmp) / "breakdown.json"
        evaluate = [sys.executable, "manage.py", "evaluate", str(dataset), str(results), "--json", str(summary_path)]
        if breakdown:
            evaluate += ["--breakdown-json", str(breakdown_path)]
        done = subprocess.run(evaluate, cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"evaluate failed (exit {done.returncode})")
        counts = json.loads(breakdown_path.read_text(encoding="utf-8")) if breakdown else None
        return json.loads(summary_path.read_text(encoding="utf-8"))["end_to_end"], elapsed, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", default="", help="score again at the same engine minor version; the reason is logged")
    parser.add_argument("--engine", choices=["rules", "llm", "hybrid"], default=None)
    parser.add_argument("--archive", type=Path, default=ARCHIVE, help="another sealed archive (tests)")
    parser.add_argument("--log", type=Path, default=LOG, help="where scores are logged")
    parser.add_argument("--validation", action="store_true",
                        help="score the validation split (corpus/val) instead: aggregates only, no once-per-version limit")
    parser.add_argument("--fresh", action="store_true",
                        help="score the fresh split (corpus/fresh) instead: aggregates only, once per engine minor version")
    parser.add_argument("--breakdown", action="store_true",
                        help="validation only: false discrepancies and traps taken in counts, by category, kind, severity, "
                             "how they were raised and the rule's family (no text, no ids)")
    args = parser.parse_args(argv)
    if args.breakdown and not args.validation:
        # the sealed and fresh splits are tests: one aggregate score per version, nothing that could steer a rule
        print("--breakdown is for the validation split only (--validation); the sealed and fresh splits give aggregates only",
              file=sys.stderr)
        return 2
    if args.validation:
        args.archive, args.log = VALIDATION / "val.tar.gz", VALIDATION / "SCORES.jsonl"
    elif args.fresh:
        args.archive, args.log = FRESH / "fresh.tar.gz", FRESH / "SCORES.jsonl"
    if not args.archive.exists():
        print(f"no sealed archive at {args.archive}", file=sys.stderr)
        return 2
    versions = engine_versions()
    earlier = None if args.validation else already_scored(versions, args.log)
    if earlier and not args.force:
        print(f"already scored at {minor(versions['extractor'])} + {minor(versions['reconciler'])} on {earlier['at']}; "
              "bump the engine minor version, or pass --force \"reason\"", file=sys.stderr)
        return 3
    summary, elapsed, counts = score(args.archive, args.engine, breakdown=args.breakdown)
    row = {
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **versions,
        "engine_setting": args.engine or "configured",
        "archive_sha256": hashlib.sha256(args.archive.read_bytes()).hexdigest(),
        "forced": args.force,
        "replay_seconds": round(elapsed, 1),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
        "scores": {k: summary[k] for k in KEYS if k in summary},
    }
    with args.log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
    split = "validation" if args.validation else "fresh" if args.fresh else "sealed"
    print(f"{split} split: {versions['extractor']} + {versions['reconciler']} ({row['engine_setting']}), replay {elapsed:.0f}s")
    for k in KEYS:
        v = row["scores"].get(k)
        if v is not None:
            print(f"  {k:40s} {v:.3f}" if isinstance(v, float) else f"  {k:40s} {v}")
    if counts is not None:
        print()
        print(breakdown_report(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

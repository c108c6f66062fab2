#!/usr/bin/env python
"""Replay speed over a dataset: seconds per patient and sessions per second, through `manage.py replay`.

Usage: python bench/replay_speed.py [DATASET_DIR] [--engine rules] [--patients p01,p02] [--parse-only]
Runs in a scratch database (the replay command's own); prints one line per patient and a total.
--parse-only measures the transcript parsers alone (MB/s for JSON, CSV and text of the same data).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")


def parse_speed(dataset: Path) -> None:
    from reconcile_app.transcripts.parsers import format_csv, format_text, parse_csv, parse_json, parse_text, parse_transcript

    raws = [p.read_bytes() for p in sorted(dataset.glob("*/transcript.json"))]
    parsed = [parse_transcript(r, filename="t.json", max_bytes=10**8) for r in raws]
    for name, texts, parse in (
        ("json", [r.decode() for r in raws], parse_json),
        ("csv", [format_csv(t) for t in parsed], parse_csv),
        ("text", [format_text(t) for t in parsed], parse_text),
    ):
        size = sum(len(t.encode()) for t in texts)
        started = time.perf_counter()
        for _ in range(5):
            for text in texts:
                parse(text)
        elapsed = time.perf_counter() - started
        print(f"parse {name:4s}: {5 * size / elapsed / 1e6:6.2f} MB/s ({size / 1e3:.0f} kB x5 in {elapsed:.2f}s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=ROOT.parent / "shared" / "eval" / "dev")
    parser.add_argument("--engine", default=None)
    parser.add_argument("--patients", default="")
    parser.add_argument("--parse-only", action="store_true")
    args = parser.parse_args()
    import django

    django.setup()
    if args.parse_only:
        parse_speed(args.dataset)
        return 0
    from django.core.management import call_command

    from reconcile_app.evaluation.runner import dataset_folders

    folders = dataset_folders(args.dataset, [p for p in args.patients.split(",") if p] or None)
    total_sessions, total_time = 0, 0.0
    with tempfile.TemporaryDirectory() as out:
        # The first patient also pays the engines' one-off start-up (lexicons): shown separately.
        for folder in folders:
            extra = ["--engine", args.engine] if args.engine else []
            started = time.perf_counter()
            call_command("replay", str(args.dataset), "--out", out, "--patients", folder.name, "--no-progress", *extra, stdout=open(os.devnull, "w"))
            elapsed = time.perf_counter() - started
            import json

            sessions = len(json.loads((folder / "transcript.json").read_text())["sessions"])
            total_sessions += sessions
            total_time += elapsed
            print(f"{folder.name}: {sessions} sessions in {elapsed:6.2f}s ({sessions / elapsed:5.2f} sessions/s)")
    print(f"total: {len(folders)} patients, {total_sessions} sessions in {total_time:.1f}s ({total_sessions / total_time:.2f} sessions/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

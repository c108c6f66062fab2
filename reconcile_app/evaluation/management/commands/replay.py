"""Replay a dataset through the production services into a scratch database and write results files."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from reconcile_app.evaluation.results import results_problems
from reconcile_app.evaluation.runner import dataset_folders, replay_patient
from reconcile_app.evaluation.scratch import celery_in_process, quiet_logs, scratch_database
from reconcile_app.evaluation.timing import engines_timed
from reconcile_app.transcripts.models import Turn


class Command(BaseCommand):
    help = "Replay DATASET_DIR (bundle.json + transcript.json per patient) and write RESULTS_DIR/<patient>.json."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", type=Path)
        parser.add_argument("--out", type=Path, required=True, help="results directory (created)")
        parser.add_argument("--engine", choices=["rules", "llm", "hybrid"], default=None, help="default: the configured engines")
        parser.add_argument("--patients", default="", help="comma-separated folder names, e.g. p01,p02")
        parser.add_argument("--scratch-db", type=Path, default=None, help="keep the scratch SQLite database at this path")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--timings", type=Path, default=None,
                            help="write a JSON breakdown here: engines' load and calls apart from the services")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset: Path = options["dataset"]
        if not dataset.is_dir():
            raise CommandError(f"{dataset} is not a directory")
        only = [p.strip() for p in options["patients"].split(",") if p.strip()]
        try:
            folders = dataset_folders(dataset, only or None)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not folders:
            raise CommandError(f"{dataset} holds no patient folder with bundle.json and transcript.json")
        out: Path = options["out"]
        out.mkdir(parents=True, exist_ok=True)
        quiet = options["no_progress"] or options["verbosity"] == 0
        started, started_cpu = time.monotonic(), time.thread_time()
        total_sessions = patient_turns = 0
        problems: list[str] = []
        # The scratch database is created before any model is touched: the app's data stays as it was.
        level = logging.INFO if options["verbosity"] > 1 else logging.WARNING
        with quiet_logs(level), scratch_database(options["scratch_db"]), celery_in_process(), engines_timed(options["engine"]) as timings:
            for folder in tqdm(folders, desc="patients", unit="patient", disable=quiet):
                n = len(json.loads((folder / "transcript.json").read_text(encoding="utf-8")).get("sessions", []))
                with tqdm(total=n, desc=f"{folder.name} sessions", unit="session", leave=False, disable=quiet) as bar:
                    try:
                        run = replay_patient(folder=folder, engine=options["engine"], on_session=lambda _s: bar.update(1))
                    except ValueError as exc:
                        raise CommandError(str(exc)) from None
                total_sessions += run.sessions
                for failure in run.failed:
                    problems.append(f"{folder.name} session {failure['session']}: {failure['error'] or 'not processed'}")
                for problem in results_problems(run.results):
                    problems.append(f"{folder.name}: {problem}")
                (out / f"{folder.name}.json").write_text(json.dumps(run.results, ensure_ascii=False, indent=2), encoding="utf-8")
            patient_turns = Turn.objects.filter(speaker=Turn.Speaker.PATIENT, session__withdrawn_at__isnull=True).count()
        elapsed, elapsed_cpu = time.monotonic() - started, time.thread_time() - started_cpu
        for problem in problems:
            self.stderr.write(f"PROBLEM {problem}")
        self.stdout.write(
            f"replayed {len(folders)} patient(s), {total_sessions} session(s), {patient_turns} patient turn(s) in {elapsed:.1f}s "
            f"({total_sessions / elapsed if elapsed else 0:.1f} sessions/s, {patient_turns / elapsed if elapsed else 0:.0f} patient turns/s) -> {out}"
        )
        if options["timings"] is not None:
            report = {"patients": len(folders), "sessions": total_sessions, "patient_turns": patient_turns,
                      "problems": len(problems), **timings.as_dict(total=elapsed, total_cpu=elapsed_cpu)}
            options["timings"].write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

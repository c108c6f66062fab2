"""Replay a dataset through the production services into a scratch database and write results files."""
from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from reconcile_app.core.gcpolicy import gc_batch
from reconcile_app.evaluation.parallel import PatientOutcome, replay_one, replay_parallel
from reconcile_app.evaluation.runner import dataset_folders
from reconcile_app.evaluation.scratch import celery_in_process, quiet_logs, scratch_database
from reconcile_app.evaluation.timing import engines_timed


class Command(BaseCommand):
    help = "Replay DATASET_DIR (bundle.json + transcript.json per patient) and write RESULTS_DIR/<patient>.json."
    # A batch into a scratch database: the project's checks (URLs, templates, SMART settings) guard the site and
    # run with `check`, the server and the tests; here they were a third of a second of every replay's start-up.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", type=Path)
        parser.add_argument("--out", type=Path, required=True, help="results directory (created)")
        parser.add_argument("--engine", choices=["rules", "llm", "hybrid"], default=None, help="default: the configured engines")
        parser.add_argument("--patients", default="", help="comma-separated folder names, e.g. p01,p02")
        parser.add_argument("--scratch-db", type=Path, default=None, help="keep the scratch SQLite database at this path")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--jobs", type=int, default=1,
                            help="worker processes, each replaying whole patients in its own scratch database (default 1)")
        parser.add_argument("--timings", type=Path, default=None,
                            help="write a JSON breakdown here: engines' load and calls apart from the services")

    def run_from_argv(self, argv: list[str]) -> None:
        """From the command line the process ends once the results and timings are written and flushed, without
        the interpreter's teardown: freeing the engines, the lexicon and the caches object by object took 0.6-0.9 s
        wall of every replay (spawn to exit) and produced nothing. call_command (tests, other commands) never comes
        here: only a process of its own exits this way. An error still exits through SystemExit as usual, and so
        does a process under a profiler or tracer (cProfile, coverage), which writes its report at exit."""
        super().run_from_argv(argv)
        if sys.getprofile() is not None or sys.gettrace() is not None:
            return
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

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
        jobs = max(1, min(options["jobs"], len(folders)))
        if jobs > 1 and options["scratch_db"] is not None:
            raise CommandError("--scratch-db keeps one database: use it with --jobs 1")
        started, started_cpu = time.monotonic(), time.process_time()
        outcomes: list[PatientOutcome] = []
        # The scratch database is created before any model is touched: the app's data stays as it was.
        level = logging.INFO if options["verbosity"] > 1 else logging.WARNING
        # The engines are loaded and warmed before any patient, in one process or before the workers fork (warm: what
        # they load on first use is loaded then too), and frozen with the rest of the start-up's objects (gc_batch).
        with quiet_logs(level), engines_timed(options["engine"], warm=True) as timings, gc_batch():
            bar = tqdm(total=len(folders), desc="patients", unit="patient", disable=quiet)
            if jobs == 1:
                with scratch_database(options["scratch_db"]), celery_in_process():
                    for folder in folders:
                        outcomes.append(self._checked(replay_one(folder=folder, out=out, engine=options["engine"], timings=timings)))
                        bar.update(1)
            else:
                with tempfile.TemporaryDirectory(prefix="reconcile-replay-") as scratch_dir:
                    for outcome in replay_parallel(folders=folders, out=out, engine=options["engine"], jobs=jobs,
                                                   timings=timings, scratch_dir=Path(scratch_dir)):
                        outcomes.append(self._checked(outcome))
                        bar.update(1)
            bar.close()
        elapsed, elapsed_cpu = time.monotonic() - started, time.process_time() - started_cpu
        if jobs > 1:  # the workers' engine time and CPU, added up (the parent only waited)
            for outcome in outcomes:
                for part in ("extraction", "reconciliation"):
                    setattr(timings, part, getattr(timings, part) + outcome.engine_seconds.get(part, 0.0))
                    timings.cpu[part] += outcome.engine_cpu.get(part, 0.0)
                    timings.calls[part] += outcome.calls.get(part, 0)
                elapsed_cpu += outcome.cpu
        sessions = sum(o.sessions for o in outcomes)
        patient_turns = sum(o.patient_turns for o in outcomes)
        problems = [p for o in sorted(outcomes, key=lambda o: o.folder) for p in o.problems]
        for problem in problems:
            self.stderr.write(f"PROBLEM {problem}")
        self.stdout.write(
            f"replayed {len(folders)} patient(s), {sessions} session(s), {patient_turns} patient turn(s) in {elapsed:.1f}s "
            f"({sessions / elapsed if elapsed else 0:.1f} sessions/s, {patient_turns / elapsed if elapsed else 0:.0f} patient turns/s"
            f"{f', {jobs} processes' if jobs > 1 else ''}) -> {out}"
        )
        if options["timings"] is not None:
            report = {"patients": len(folders), "sessions": sessions, "patient_turns": patient_turns, "jobs": jobs,
                      "problems": len(problems), **timings.as_dict(total=elapsed, total_cpu=elapsed_cpu)}
            options["timings"].write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    @staticmethod
    def _checked(outcome: PatientOutcome) -> PatientOutcome:
        if outcome.error:
            raise CommandError(outcome.error)
        return outcome

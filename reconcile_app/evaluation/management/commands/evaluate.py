"""Score replay results against a dataset's labels (end to end), optionally against isolated reconciliation."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from reconcile_app.evaluation.breakdown import breakdown
from reconcile_app.evaluation.report import cascade_report, load_json, score_dataset, scores_report
from reconcile_app.evaluation.runner import dataset_folders, isolated_transcript, replay_patient
from reconcile_app.evaluation.scratch import celery_in_process, quiet_logs, scratch_database


class Command(BaseCommand):
    help = "Print the FORMAT.md scores of RESULTS_DIR against DATASET_DIR; --isolated adds Dimension 2 and the cascade."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", type=Path)
        parser.add_argument("results", type=Path)
        parser.add_argument("--isolated", action="store_true", help="also run each scenario's summary straight through the services")
        parser.add_argument("--engine", choices=["rules", "llm", "hybrid"], default=None)
        parser.add_argument("--patients", default="", help="comma-separated folder names")
        parser.add_argument("--json", type=Path, default=None, help="also write the summary numbers here")
        parser.add_argument("--breakdown-json", type=Path, default=None,
                            help="also write false discrepancies and traps taken here, in counts by how they were raised (no text)")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset: Path = options["dataset"]
        results_dir: Path = options["results"]
        if not dataset.is_dir() or not results_dir.is_dir():
            raise CommandError("DATASET_DIR and RESULTS_DIR must be directories")
        only = [p.strip() for p in options["patients"].split(",") if p.strip()] or None
        results = {p.stem: load_json(p) for p in sorted(results_dir.glob("*.json"))}
        scores, missing = score_dataset(dataset=dataset, results=results, only=only)
        for name in missing:
            self.stderr.write(f"WARNING no results for {name}: scored as no findings")
        self.stdout.write(scores_report(scores))
        summary: dict[str, Any] = {"end_to_end": scores.summary()}
        if options["isolated"]:
            isolated = self._isolated(dataset, only, options["engine"], quiet=options["verbosity"] == 0)
            iso_scores, _ = score_dataset(dataset=dataset, results=isolated, only=only)
            self.stdout.write("")
            self.stdout.write(cascade_report(scores, iso_scores))
            summary["isolated"] = iso_scores.summary()
        if options["breakdown_json"]:
            options["breakdown_json"].write_text(json.dumps(breakdown(scores), indent=1), encoding="utf-8")
        if options["json"]:
            options["json"].write_text(json.dumps(summary, indent=2), encoding="utf-8")

    def _isolated(self, dataset: Path, only: list[str] | None, engine: str | None, *, quiet: bool) -> dict[str, dict]:
        out: dict[str, dict] = {}
        folders = [f for f in dataset_folders(dataset, only) if (f / "labels.json").is_file()]
        with quiet_logs(logging.WARNING), scratch_database(), celery_in_process():
            for folder in tqdm(folders, desc="isolated", unit="patient", disable=quiet):
                raw = isolated_transcript(transcript=load_json(folder / "transcript.json"), labels=load_json(folder / "labels.json"))
                out[folder.name] = replay_patient(folder=folder, transcript_bytes=raw, engine=engine).results
        return out

"""Import a transcript file from the command line and follow its sessions through the pipeline."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from celery import current_app
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from reconcile_app.fhir.models import Patient
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.transcripts.parsers import surrogate_error
from reconcile_app.transcripts.selectors import patient_match, upload_progress
from reconcile_app.transcripts.services import upload_import, upload_receive

PIPELINE_TASK = "reconcile_app.pipeline.pipeline_patient_advance_task"


class Command(BaseCommand):
    help = "Import FILE (JSON, CSV or text). --patient Patient/<id> (or system|value) chooses the patient; else the file names it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--patient", default="", help="Patient/<id> or system|value of a known patient")
        parser.add_argument("--inline", action="store_true", help="run the pipeline in this process (no worker needed)")
        parser.add_argument("--no-wait", action="store_true", help="do not wait for the pipeline")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the workers")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path} is not a file")
        patient: Patient | None = None
        if options["patient"]:
            problem = surrogate_error(options["patient"], "--patient")  # undecodable bytes in the argument
            if problem:
                raise CommandError(problem)
            patient = patient_match(reference=options["patient"])
            if patient is None:
                raise CommandError(f"no single patient matches {options['patient']!r}")
        upload = upload_receive(raw=path.read_bytes(), filename=path.name, source=Upload.Source.CLI, patient=patient)
        upload = upload_import(upload_id=upload.pk, start_pipeline=not options["inline"])
        if upload.status == Upload.Status.INVALID:
            for error in upload.errors:
                self.stderr.write(f"  {error}")
            raise CommandError(f"upload #{upload.pk} stored but not imported: the file has errors")
        if upload.status == Upload.Status.FAILED:
            raise CommandError(f"upload #{upload.pk} stored but the import failed: {upload.rejection}")
        if upload.status == Upload.Status.HELD:
            self.stdout.write(f"upload #{upload.pk} held: patient {upload.patient_ref or '(none named)'} is not known; map it in the holding list")
            return
        summary = upload.summary
        self.stdout.write(f"upload #{upload.pk} imported: {len(summary['added'])} new, {len(summary['unchanged'])} known, "
                          f"{len(summary['conflicts'])} conflict(s), {len(summary['withdrawn'])} withdrawn before")
        for conflict in summary["conflicts"]:
            self.stderr.write(f"  conflict in session {conflict['session']}: {conflict['reason']}")
        if options["no_wait"] or not summary["added"]:
            return
        self._follow(upload, inline=options["inline"], timeout=options["timeout"], quiet=options["verbosity"] == 0)

    def _follow(self, upload: Upload, *, inline: bool, timeout: float, quiet: bool) -> None:
        progress = upload_progress(upload=upload)
        with tqdm(total=progress.total, desc="sessions", unit="session", disable=quiet) as bar:
            if inline:
                # The pipeline task by its registered name (transcripts never imports the pipeline),
                # run here one session at a time so the bar moves with each session.
                task = current_app.tasks[PIPELINE_TASK]
                outcome = "more"
                while outcome == "more":
                    outcome = task.apply(args=(upload.patient_id,), kwargs={"budget": 0, "chain": False}).get()
                    progress = upload_progress(upload=upload)
                    bar.n = progress.done + progress.failed + progress.withdrawn
                    bar.refresh()
            else:
                deadline = time.monotonic() + timeout
                while not progress.finished and time.monotonic() < deadline:
                    time.sleep(1)
                    progress = upload_progress(upload=upload)
                    bar.n = progress.done + progress.failed + progress.withdrawn
                    bar.refresh()
        progress = upload_progress(upload=upload)
        failed = Session.objects.filter(upload=upload, pipeline_status=Session.Pipeline.FAILED)
        for session in failed:
            self.stderr.write(f"  session {session.external_id} failed: {session.pipeline_error}")
        if not progress.finished:
            self.stdout.write(f"still running: {progress.active} session(s) pending; follow it on the upload page")
        else:
            self.stdout.write(f"done: {progress.done} session(s) processed, {progress.failed} failed")

"""demo: migrate, seed the demo data and run the web server plus a Celery worker (no services needed)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Start reconcile on its embedded default (SQLite + file-system broker) with demo data."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000")
        parser.add_argument("--seed-only", action="store_true", help="Seed and exit (no servers).")

    def handle(self, *args: Any, **options: Any) -> None:
        from reconcile_app.demo.services import DEMO_PASSWORD, demo_seed

        Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
        for sub in ("broker/queue", "broker/processed", "broker/control"):
            (Path(settings.VAR_DIR) / sub).mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        base_url = f"http://{options['addr']}"
        worker = None
        if not options["seed_only"]:
            # The worker starts first so the demo transcripts are processed as soon as they are queued.
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--beat", "--pool=solo",
                 "--loglevel=WARNING", "--quiet", "-s", str(Path(settings.VAR_DIR) / "celerybeat-schedule")],
                env={**os.environ, "PUBLIC_BASE_URL": base_url},
            )
        seed = demo_seed(base_url=base_url)
        self.stdout.write(self.style.SUCCESS(
            f"demo ready: {seed.patients} sandbox patients, {seed.uploads} transcripts queued"
        ))
        self.stdout.write(f"  EHR (sandbox) patient list: {base_url}/sandbox/ehr/   <- start here, launch the app for a patient")
        self.stdout.write(f"  Nurse queue:                {base_url}/triage/   (nurse / {DEMO_PASSWORD})")
        self.stdout.write(f"  Admin:                      {base_url}/triage/rules/   (admin / {DEMO_PASSWORD})")
        if options["seed_only"]:
            return
        try:
            call_command("runserver", options["addr"], use_reloader=False)
        finally:
            if worker is not None and worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    worker.kill()

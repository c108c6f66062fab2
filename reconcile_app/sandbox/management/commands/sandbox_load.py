"""Load FHIR Bundles into the sandbox EHR: `sandbox_load PATH...` (files or directories) or `--demo`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconcile_app.sandbox.services import sandbox_path_load, sandbox_seed_demo


class Command(BaseCommand):
    help = "Load FHIR R4 Bundles (a file, or every *.json Bundle under a directory) into the sandbox EHR."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", type=Path)
        parser.add_argument("--demo", action="store_true", help="Load the demo patients shipped with the app.")

    def handle(self, *args: Any, paths: list[Path], demo: bool, **options: Any) -> None:
        if not paths and not demo:
            raise CommandError("give a Bundle file or directory, or --demo")
        total = sandbox_seed_demo() if demo else 0
        for path in paths:
            if not path.exists():
                raise CommandError(f"{path} does not exist")
            try:
                total += sandbox_path_load(path=path)
            except ValueError as exc:
                raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(f"loaded {total} resources")

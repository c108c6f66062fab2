"""Enrol a coaching platform for a patient or an organisation: it may file transcripts only for those."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconcile_app.transcripts.models import CoachingPlatform, PlatformEnrolment
from reconcile_app.transcripts.selectors import patient_match
from reconcile_app.transcripts.services import platform_enrol


class Command(BaseCommand):
    help = "Let platform NAME file transcripts for --patient (Patient/<id> or system|value) or --organization SYSTEM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--patient", default="", help="a known patient: Patient/<id> or system|value")
        target.add_argument("--organization", default="", help="identifier system of an organisation's patient numbers")
        target.add_argument("--list", action="store_true", help="show the platform's enrolments")

    def handle(self, *args: Any, **options: Any) -> None:
        platform = CoachingPlatform.objects.filter(name=options["name"].strip()).first()
        if platform is None:
            raise CommandError(f"no platform named {options['name']!r}")
        if options["list"]:
            for e in PlatformEnrolment.objects.filter(platform=platform).select_related("patient"):
                self.stdout.write(e.patient.reference if e.patient else f"organization {e.organization_system}")
            return
        patient = None
        if options["patient"]:
            patient = patient_match(reference=options["patient"])
            if patient is None:
                raise CommandError(f"no single patient matches {options['patient']!r}")
        platform_enrol(platform=platform, patient=patient, organization_system=options["organization"].strip())
        self.stdout.write(f"{platform.name} may file transcripts for {patient.reference if patient else 'organization ' + options['organization']}")

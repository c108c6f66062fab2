"""Create a coaching platform and print its API token once (only its hash is stored); or revoke it."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconcile_app.transcripts.models import CoachingPlatform
from reconcile_app.transcripts.services import platform_create, platform_revoke


class Command(BaseCommand):
    help = "Create a coaching platform with a bearer token for POST /api/transcripts (printed once), or --revoke it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--webhook-url", default="", help="where clarification requests are delivered")
        parser.add_argument("--revoke", action="store_true", help="revoke the named platform's token")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"].strip()
        if options["revoke"]:
            platform = CoachingPlatform.objects.filter(name=name).first()
            if platform is None:
                raise CommandError(f"no platform named {name!r}")
            platform_revoke(platform_id=platform.pk)
            self.stdout.write(f"revoked the token of {name}")
            return
        if not name or CoachingPlatform.objects.filter(name=name).exists():
            raise CommandError(f"a platform named {name!r} exists already (or the name is empty)")
        _, token = platform_create(name=name, webhook_url=options["webhook_url"])
        self.stderr.write("Store this token now; it cannot be shown again:")
        self.stdout.write(token)

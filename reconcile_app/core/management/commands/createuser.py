"""createuser --role nurse --username ... : create a person with one of the three roles."""
from __future__ import annotations

import getpass
import os
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconcile_app.core.exceptions import ValidationFailed
from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create


class Command(BaseCommand):
    help = "Create a user with a role (clinician, nurse or admin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--role", required=True, choices=[r.value for r in Role])
        parser.add_argument("--username", required=True)
        parser.add_argument("--email", default="")
        parser.add_argument("--name", default="", help="Full name")
        parser.add_argument(
            "--password",
            default=None,
            help="Password (prefer RECONCILE_PASSWORD in the environment; prompted when neither is given)",
        )
        parser.add_argument("--no-password", action="store_true", help="SMART-only user without a password")

    def handle(self, *args: Any, **options: Any) -> None:
        if User.objects.filter(username=options["username"]).exists():
            raise CommandError(f"user {options['username']!r} already exists")
        password = None
        if not options["no_password"]:
            password = options["password"] or os.environ.get("RECONCILE_PASSWORD")
            if not password:
                password = getpass.getpass("Password: ")
        try:
            user = user_create(
                username=options["username"],
                role=Role(options["role"]),
                password=password,
                email=options["email"],
                full_name=options["name"],
            )
        except ValidationFailed as exc:
            raise CommandError(f"{exc.message}: " + " ".join(exc.errors)) from None
        self.stdout.write(self.style.SUCCESS(f"created {options['role']} {user.username} (id {user.pk})"))

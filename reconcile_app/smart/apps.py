"""App config for smart."""
import logging

from django.apps import AppConfig


class SmartConfig(AppConfig):
    name = "reconcile_app.smart"
    label = "smart"

    def ready(self) -> None:
        # fhirclient logs its authorize parameters and the whole token response (id_token
        # included) at DEBUG: keep that library quieter than DEBUG whatever the root level.
        logging.getLogger("fhirclient").setLevel(logging.INFO)
        from . import signals  # noqa: F401  (signing out ends the launch)

"""App config for core."""
from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "reconcile_app.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from . import checks, signals  # noqa: F401  (registers receivers and system checks)

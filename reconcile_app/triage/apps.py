"""App config for triage."""
from django.apps import AppConfig


class TriageConfig(AppConfig):
    name = "reconcile_app.triage"
    label = "triage"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (keeps items whole when a quote's finding is withdrawn)

"""App config for the ledger: truth maintenance across both streams (an orchestrator on top of triage)."""
from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "reconcile_app.ledger"
    label = "ledger"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (a new record version is re-evaluated after its commit)

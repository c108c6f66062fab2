"""App config for reconciliation."""
from django.apps import AppConfig


class ReconciliationConfig(AppConfig):
    name = "reconcile_app.reconciliation"
    label = "reconciliation"

"""App config for triage."""
from django.apps import AppConfig


class TriageConfig(AppConfig):
    name = "reconcile_app.triage"
    label = "triage"

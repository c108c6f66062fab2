"""App config for narrative."""
from django.apps import AppConfig


class NarrativeConfig(AppConfig):
    name = "reconcile_app.narrative"
    label = "narrative"

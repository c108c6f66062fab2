"""App config for transcripts."""
from django.apps import AppConfig


class TranscriptsConfig(AppConfig):
    name = "reconcile_app.transcripts"
    label = "transcripts"

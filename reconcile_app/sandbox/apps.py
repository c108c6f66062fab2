"""App config for sandbox."""
from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "reconcile_app.sandbox"
    label = "sandbox"

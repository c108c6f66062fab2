"""App config for smart."""
from django.apps import AppConfig


class SmartConfig(AppConfig):
    name = "reconcile_app.smart"
    label = "smart"

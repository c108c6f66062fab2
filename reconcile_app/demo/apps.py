"""App config for demo."""
from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "reconcile_app.demo"
    label = "demo"

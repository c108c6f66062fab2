"""App config for the context pack: what a coaching agent must know before it speaks to the patient."""
from django.apps import AppConfig


class ContextConfig(AppConfig):
    name = "reconcile_app.context"
    label = "context"

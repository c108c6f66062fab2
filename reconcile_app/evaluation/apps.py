"""App config for evaluation."""
from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "reconcile_app.evaluation"
    label = "evaluation"

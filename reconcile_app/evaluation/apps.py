"""App config for evaluation."""
from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "reconcile_app.evaluation"
    label = "evaluation"

    def ready(self) -> None:
        # The pipeline is the top-level orchestrator: loading it here connects its receivers to the
        # transcripts app's signals and registers its Celery tasks, in web and worker processes alike.
        from reconcile_app import pipeline  # noqa: F401

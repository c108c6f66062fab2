"""Celery application: JSON only, late acks with idempotent tasks, one message prefetched at a time."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("reconcile")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

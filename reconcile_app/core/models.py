"""Abstract base models shared by every app."""
from django.db import models


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class WorkerHeartbeat(models.Model):
    """One row per worker hostname, touched by a beat task; /healthz reads it."""

    hostname = models.CharField(max_length=200, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.hostname

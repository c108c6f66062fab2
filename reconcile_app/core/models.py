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


class UserPreference(models.Model):
    """Per-user display settings. The time zone is detected from the browser until the user picks one."""

    class ZoneSource(models.TextChoices):
        BROWSER = "browser", "Detected from the browser"
        EHR = "ehr", "From the EHR launch"
        USER = "user", "Chosen by the user"

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="preference")
    time_zone = models.CharField(max_length=64, blank=True)  # an IANA name, e.g. "America/New_York"
    time_zone_source = models.CharField(max_length=10, choices=ZoneSource.choices, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Preferences of user #{self.user_id}"

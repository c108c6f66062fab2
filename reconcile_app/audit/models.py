"""AuditEvent: who did what to which patient's data, when, from where, and how it ended."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    class Outcome(models.TextChoices):
        OK = "ok", "Allowed / succeeded"
        DENIED = "denied", "Denied"
        ERROR = "error", "Failed"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Kept as text too, so the trail survives a deleted account.
    actor_label = models.CharField(max_length=150, blank=True)
    role = models.CharField(max_length=20, blank=True)
    action = models.CharField(max_length=80, db_index=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.OK)
    # No FK: audit must not depend on downstream apps, and must outlive what it describes.
    patient_pk = models.BigIntegerField(null=True, blank=True, db_index=True)
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)
    path = models.CharField(max_length=200, blank=True)
    # Ids, counts, reasons and error classes only; audit_record rejects free text.
    details = models.JSONField(default=dict, blank=True)
    # Anonymous refusals are aggregated: one row per time window, action and reason, counting the
    # requests (an unauthenticated client must not be able to grow the trail without limit).
    # `window_key` names that bucket; it is empty on every ordinary, one-event row.
    count = models.PositiveIntegerField(default=1)
    window_key = models.CharField(max_length=160, blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["action", "outcome", "-at"], name="audit_action_idx")]
        constraints = [
            models.UniqueConstraint(fields=["window_key"], condition=~models.Q(window_key=""), name="audit_window_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label or '-'} {self.action} {self.outcome}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Append-only; an aggregated row's count grows by a queryset UPDATE (audit.services), never here.
        if self.pk is not None:
            raise RuntimeError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("audit events are append-only")

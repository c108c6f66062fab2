"""System checks for settings that a deployment must get right."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register(Tags.security, deploy=True)
def check_encryption_keys(app_configs: Any, **kwargs: Any) -> list:
    if not settings.FIELD_ENCRYPTION_KEYS:
        return [Error("FIELD_ENCRYPTION_KEYS is empty: tokens would be encrypted with a derived dev key.", id="reconcile.E001")]
    return []


@register(Tags.security, deploy=True)
def check_sandbox_disabled(app_configs: Any, **kwargs: Any) -> list:
    if settings.SMART_SANDBOX_ENABLED:
        return [Warning("SMART_SANDBOX_ENABLED is on: the test EHR is reachable.", id="reconcile.W001")]
    return []

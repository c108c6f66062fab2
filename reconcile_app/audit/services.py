"""audit_record: the one way to write an audit event."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest

from reconcile_app.core.request_context import request_id_var
from reconcile_app.core.roles import primary_role

from .models import AuditEvent

# Details are for ids, counts, codes and short reasons. Long strings are where clinical
# text would sneak in, so they are refused rather than silently stored.
MAX_DETAIL_STRING = 120


def _check_details(details: dict[str, Any]) -> dict[str, Any]:
    for key, value in details.items():
        if isinstance(value, str) and len(value) > MAX_DETAIL_STRING:
            raise ValueError(f"audit detail {key!r} is too long; audit never stores free text")
        if isinstance(value, dict):
            _check_details(value)
    return details


def _client_address(request: HttpRequest) -> str | None:
    # REMOTE_ADDR only: X-Forwarded-For is trivially forged unless a proxy is configured.
    return request.META.get("REMOTE_ADDR") or None


def audit_record(
    *,
    action: str,
    request: HttpRequest | None = None,
    actor: AbstractBaseUser | AnonymousUser | None = None,
    outcome: str = AuditEvent.Outcome.OK,
    patient_pk: int | None = None,
    object_type: str = "",
    object_id: str | int = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    if actor is None and request is not None:
        actor = getattr(request, "user", None)
    user = actor if actor is not None and actor.is_authenticated else None
    label = getattr(user, "username", "") if user else ("system" if request is None else "anonymous")
    return AuditEvent.objects.create(
        actor=user,
        actor_label=label,
        role=primary_role(actor) if actor is not None else "system",
        action=action,
        outcome=outcome,
        patient_pk=patient_pk,
        object_type=object_type,
        object_id=str(object_id),
        request_id=getattr(request, "request_id", "") if request is not None else request_id_var.get(),
        client_address=_client_address(request) if request is not None else None,
        path=(request.path[:200] if request is not None else ""),
        details=_check_details(details or {}),
    )

"""audit_record: the one way to write an audit event."""
from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import HttpRequest

from reconcile_app.core.http import client_address
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
    # REMOTE_ADDR unless TRUSTED_PROXY_COUNT says proxies stand in front (core.http.client_address).
    return client_address(request)


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
    # Refusals of anonymous requests that name no object (bad tokens, sign-in redirects, unknown
    # issuers, failed sign-ins) could be sent without limit: they are aggregated.
    if request is not None and user is None and outcome != AuditEvent.Outcome.OK and object_id in ("", None) and patient_pk is None:
        return _anonymous_refusal(request=request, action=action, outcome=outcome, patient_pk=patient_pk, details=details or {})
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


def _window_seconds() -> int:
    return max(1, int(getattr(settings, "AUDIT_ANONYMOUS_WINDOW_SECONDS", 300)))


def _anonymous_refusal(*, request: HttpRequest, action: str, outcome: str, patient_pk: int | None,
                       details: dict[str, Any]) -> AuditEvent:
    """One row per window, action, outcome and reason, counting the refused anonymous requests. The
    first request's address, path and request id stay on the row; only the reason is kept as detail."""
    reason = str(details.get("reason") or details.get("code") or "")[:40]
    window = _window_seconds()
    start = int(time.time()) // window * window
    key = f"{start}:{window}:{action}:{outcome}:{reason}"[:160]
    kept = {k: v for k, v in details.items() if k in ("reason", "code")}
    if AuditEvent.objects.filter(window_key=key).update(count=F("count") + 1):
        return AuditEvent.objects.get(window_key=key)
    try:
        with transaction.atomic():
            return AuditEvent.objects.create(
                actor=None, actor_label="anonymous", role="anonymous", action=action, outcome=outcome,
                patient_pk=patient_pk, request_id=getattr(request, "request_id", ""),
                client_address=_client_address(request), path=request.path[:200],
                details=_check_details(kept), window_key=key,
            )
    except IntegrityError:  # another request opened the window's row first
        AuditEvent.objects.filter(window_key=key).update(count=F("count") + 1)
        return AuditEvent.objects.get(window_key=key)

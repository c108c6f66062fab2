"""View decorators: role checks that audit every denial."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from .roles import Role, user_has_role


def deny(request: HttpRequest, *, reason: str, patient_pk: int | None = None) -> PermissionDenied:
    """Audit a denial and return the exception for the caller to raise."""
    from reconcile_app.audit.services import audit_record

    audit_record(request=request, action="access", outcome="denied", patient_pk=patient_pk, details={"reason": reason})
    return PermissionDenied(reason)


def role_required(*roles: Role) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not user_has_role(request.user, *roles):
                raise deny(request, reason="role:" + "|".join(r.value for r in roles))
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def public(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view as reachable without a login (LoginRequiredMiddleware reads the flag)."""
    view.public = True  # type: ignore[attr-defined]
    return view

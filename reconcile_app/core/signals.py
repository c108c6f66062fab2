"""Audit sign-ins, sign-outs, failed attempts and lockouts (never the password)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver


@receiver(user_logged_in)
def _logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    from reconcile_app.audit.services import audit_record

    audit_record(request=request, actor=user, action="auth.login")


@receiver(user_logged_out)
def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    from reconcile_app.audit.services import audit_record

    if user is not None:
        audit_record(request=request, actor=user, action="auth.logout")


@receiver(user_login_failed)
def _login_failed(sender: Any, credentials: dict, request: Any = None, **kwargs: Any) -> None:
    """Anonymous refusals are aggregated per window and reason (audit_record); the per-account and
    per-address counts behind the throttling are django-axes' AccessAttempt rows."""
    from reconcile_app.audit.services import audit_record

    # django-axes' receiver ran first (its app is listed before core) and flagged a lockout.
    reason = "locked_out" if getattr(request, "axes_locked_out", False) else "bad_credentials"
    audit_record(request=request, action="auth.login", outcome="denied", details={"reason": reason})

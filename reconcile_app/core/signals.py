"""Audit sign-ins, sign-outs and failed attempts (the username only, never the password)."""
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
    from reconcile_app.audit.services import audit_record

    audit_record(request=request, action="auth.login", outcome="denied", details={"username": str(credentials.get("username", ""))[:100]})

"""Signing out of reconcile ends the browser session's SMART launch (its tokens are dropped)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver


@receiver(user_logged_out, dispatch_uid="smart-launch-ends-on-logout")
def _launch_ends_on_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    from .services import launch_end

    session = getattr(request, "session", None)
    launch_id = session.get("smart_launch_id") if session is not None else None
    if isinstance(launch_id, int) and user is not None:
        from .models import SmartLaunch

        if SmartLaunch.objects.filter(pk=launch_id, user=user).exists():
            launch_end(launch_id=launch_id, reason="logout")

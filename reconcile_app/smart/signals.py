"""Signing out of reconcile ends the browser session's SMART launch (its tokens are dropped); a changed
EHR registration refreshes the frame-ancestors list."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .models import EhrRegistration


@receiver(user_logged_out, dispatch_uid="smart-launch-ends-on-logout")
def _launch_ends_on_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    from .services import launch_end

    session = getattr(request, "session", None)
    launch_id = session.get("smart_launch_id") if session is not None else None
    if isinstance(launch_id, int) and user is not None:
        from .models import SmartLaunch

        if SmartLaunch.objects.filter(pk=launch_id, user=user).exists():
            launch_end(launch_id=launch_id, reason="logout")


@receiver([post_save, post_delete], sender=EhrRegistration, dispatch_uid="smart-frame-ancestors-follow-registrations")
def _frame_ancestors_follow_registrations(sender: Any, **kwargs: Any) -> None:
    from .middleware import frame_ancestors_forget

    frame_ancestors_forget()

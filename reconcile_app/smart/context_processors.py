"""Template context from the browser session's SMART launch."""
from __future__ import annotations

from django.http import HttpRequest

from .selectors import launch_for_session


def launch_context(request: HttpRequest) -> dict[str, bool]:
    """`smart_hide_banner`: the EHR said it shows the patient banner itself (need_patient_banner=false),
    so no patient page of this launch repeats it."""
    session = getattr(request, "session", None)
    launch_id = session.get("smart_launch_id") if session is not None else None
    if not launch_id or not request.user.is_authenticated:
        return {"smart_hide_banner": False}
    launch = launch_for_session(launch_id=launch_id, user=request.user)
    return {"smart_hide_banner": launch is not None and not launch.need_patient_banner}

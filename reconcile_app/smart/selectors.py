"""Reads of EHR registrations."""
from __future__ import annotations

from django.db.utils import DatabaseError

from .models import EhrRegistration, SmartLaunch


def registration_frame_ancestors() -> list[str]:
    """Exact origins only: a value saved before origins were checked (`https://*`, a path) is dropped."""
    from .forms import exact_origin

    try:
        values = EhrRegistration.objects.filter(active=True).values_list("frame_ancestors", flat=True)
        origins = sorted({exact_origin(o) for v in values for o in v.split()} - {""})
    except DatabaseError:  # before migrations, during health failures: fall back to self only
        return []
    return origins


def registration_get_by_iss(*, iss: str) -> EhrRegistration | None:
    return EhrRegistration.objects.filter(iss=iss.rstrip("/"), active=True).first()


def registration_list() -> list[EhrRegistration]:
    return list(EhrRegistration.objects.order_by("name"))


def registration_list_launchable() -> list[EhrRegistration]:
    """EHRs a standalone launch may start against."""
    return list(EhrRegistration.objects.filter(active=True).order_by("name"))


def launch_for_session(*, launch_id: int | None, user: object) -> SmartLaunch | None:
    """The launch bound to this browser session, only if it belongs to the signed-in user."""
    if not launch_id:
        return None
    return SmartLaunch.objects.select_related("registration").filter(pk=launch_id, user=user).first()

"""Reads of EHR registrations."""
from __future__ import annotations

from django.db.utils import DatabaseError

from .models import EhrRegistration


def registration_frame_ancestors() -> list[str]:
    try:
        values = EhrRegistration.objects.filter(active=True).values_list("frame_ancestors", flat=True)
        origins = sorted({o for v in values for o in v.split() if o.startswith(("https://", "http://"))})
    except DatabaseError:  # before migrations, during health failures: fall back to self only
        return []
    return origins


def registration_get_by_iss(*, iss: str) -> EhrRegistration | None:
    return EhrRegistration.objects.filter(iss=iss.rstrip("/"), active=True).first()

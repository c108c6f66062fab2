"""The three roles (Django groups) and the checks that views use through fetch helpers."""
from __future__ import annotations

from enum import StrEnum

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class Role(StrEnum):
    CLINICIAN = "clinician"
    NURSE = "nurse"
    ADMIN = "admin"


ALL_ROLES = tuple(Role)


def user_roles(user: AbstractBaseUser | AnonymousUser) -> set[Role]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_reconcile_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        cached = {Role(n) for n in names if n in Role._value2member_map_}
        if getattr(user, "is_superuser", False):
            cached.add(Role.ADMIN)
        user._reconcile_roles = cached  # type: ignore[attr-defined]
    return cached


def user_has_role(user: AbstractBaseUser | AnonymousUser, *roles: Role) -> bool:
    return bool(user_roles(user) & set(roles))


def primary_role(user: AbstractBaseUser | AnonymousUser) -> str:
    """The role recorded on audit events: the most privileged one the user holds."""
    roles = user_roles(user)
    for role in (Role.ADMIN, Role.NURSE, Role.CLINICIAN):
        if role in roles:
            return role.value
    return "anonymous" if not user.is_authenticated else "none"

"""Write side of core: creating people with a role, and their display preferences."""
from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from .exceptions import ValidationFailed

from .models import UserPreference
from .roles import Role
from .timezones import zone_get


def roles_ensure() -> None:
    for role in Role:
        Group.objects.get_or_create(name=role.value)


@transaction.atomic
def user_create(*, username: str, role: Role, password: str | None, email: str = "", full_name: str = "") -> User:
    roles_ensure()
    first, _, last = full_name.partition(" ")
    user = User(username=username, email=email, first_name=first[:150], last_name=last[:150])
    # Admins may open the Django admin (read-only audit, registrations); others may not.
    user.is_staff = role == Role.ADMIN
    if password:
        # The same validators as the Django admin's forms (AUTH_PASSWORD_VALIDATORS): no path that
        # sets a password may skip them.
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise ValidationFailed("the password is not strong enough", errors=list(exc.messages)) from None
        user.set_password(password)
    else:
        user.set_unusable_password()  # clinicians arriving by SMART launch have no password
    user.save()
    user.groups.add(Group.objects.get(name=role.value))
    return user


@transaction.atomic
def user_time_zone_set(*, user: User, name: str, source: str) -> UserPreference:
    """Save the user's time zone. A detected zone (browser, EHR) never replaces one the user chose;
    an empty name with source "user" hands the choice back to detection."""
    if name and zone_get(name) is None:
        raise ValueError("not a known time zone")
    pref, _ = UserPreference.objects.select_for_update().get_or_create(user=user)
    if source != UserPreference.ZoneSource.USER and pref.time_zone_source == UserPreference.ZoneSource.USER and pref.time_zone:
        return pref
    pref.time_zone = name
    pref.time_zone_source = source if name else ""
    pref.save(update_fields=["time_zone", "time_zone_source", "updated_at"])
    return pref

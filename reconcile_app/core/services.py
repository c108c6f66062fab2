"""Write side of core: creating people with a role."""
from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from .roles import Role


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
        user.set_password(password)
    else:
        user.set_unusable_password()  # clinicians arriving by SMART launch have no password
    user.save()
    user.groups.add(Group.objects.get(name=role.value))
    return user

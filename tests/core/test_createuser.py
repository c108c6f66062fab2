"""manage.py createuser gives people one of the three roles."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from reconcile_app.core.roles import Role, user_roles

pytestmark = pytest.mark.django_db


def test_it_creates_a_nurse_with_a_password(monkeypatch):
    monkeypatch.setenv("RECONCILE_PASSWORD", "a long enough password")
    call_command("createuser", "--role", "nurse", "--username", "nora")
    user = User.objects.get(username="nora")
    assert user_roles(user) == {Role.NURSE}
    assert user.check_password("a long enough password") and not user.is_staff


def test_admins_may_open_the_django_admin():
    call_command("createuser", "--role", "admin", "--username", "root2", "--no-password")
    user = User.objects.get(username="root2")
    assert user.is_staff and not user.has_usable_password()


def test_it_refuses_a_duplicate_username():
    call_command("createuser", "--role", "clinician", "--username", "cl", "--no-password")
    with pytest.raises(CommandError, match="already exists"):
        call_command("createuser", "--role", "clinician", "--username", "cl", "--no-password")

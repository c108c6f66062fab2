"""Sign-in throttling (django-axes): per account and per address, audited, the right password refused
while locked out; and password validation on every path that sets a password."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent
from reconcile_app.core.exceptions import ValidationFailed
from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/login/"


def _attempt(client, username: str, password: str, address: str = "10.0.0.1"):  # type: ignore[no-untyped-def]
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_forty_wrong_passwords_then_the_right_one_does_not_sign_in(client, nurse, settings):
    codes = [_attempt(client, "nina", f"wrong-{i}").status_code for i in range(40)]
    assert codes[: settings.AXES_FAILURE_LIMIT - 1] == [200] * (settings.AXES_FAILURE_LIMIT - 1)  # the form again
    assert set(codes[settings.AXES_FAILURE_LIMIT:]) == {429}
    right = _attempt(client, "nina", PASSWORD)
    assert right.status_code == 429 and b"Too many sign-in attempts" in right.content
    assert int(right["Retry-After"]) == int(settings.AXES_COOLOFF_TIME.total_seconds())
    assert "_auth_user_id" not in client.session


def test_the_account_is_locked_from_every_address(client, nurse, settings):
    for i in range(settings.AXES_FAILURE_LIMIT):
        _attempt(client, "nina", "wrong", address=f"10.0.1.{i}")
    assert _attempt(client, "nina", PASSWORD, address="10.9.9.9").status_code == 429


def test_an_address_is_locked_for_every_account(client, nurse, settings):
    for i in range(settings.AXES_FAILURE_LIMIT):
        _attempt(client, f"someone-{i}", "wrong", address="10.0.2.7")
    assert _attempt(client, "nina", PASSWORD, address="10.0.2.7").status_code == 429
    assert _attempt(client, "nina", PASSWORD, address="10.0.2.8").status_code == 302  # another address signs in


def test_a_success_resets_the_count(client, nurse, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _attempt(client, "nina", "wrong")
    assert _attempt(client, "nina", PASSWORD).status_code == 302
    client.post(reverse("core:logout"))
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _attempt(client, "nina", "wrong")
    assert _attempt(client, "nina", PASSWORD).status_code == 302


def test_failures_and_the_lockout_are_audited_as_counted_rows(client, nurse, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT + 3):
        _attempt(client, "nina", "wrong")
    rows = {e.details["reason"]: e for e in AuditEvent.objects.filter(action="auth.login", outcome="denied")}
    assert set(rows) == {"bad_credentials", "locked_out"}
    assert rows["bad_credentials"].count + rows["locked_out"].count == settings.AXES_FAILURE_LIMIT + 3
    assert rows["locked_out"].count == 4  # the attempt that locked, then three refused
    assert all(e.actor_label == "anonymous" and e.client_address == "10.0.0.1" for e in rows.values())


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted(client, nurse, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(LOGIN, {"username": "x", "password": "wrong"}, REMOTE_ADDR="10.0.0.254", HTTP_X_FORWARDED_FOR="203.0.113.5")
    # Another client behind the same proxy is not locked out by the first one's failures.
    ok = client.post(LOGIN, {"username": "nina", "password": PASSWORD}, REMOTE_ADDR="10.0.0.254", HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert ok.status_code == 302


# --- password validation on every path -------------------------------------------------------


def test_user_create_refuses_a_weak_password():
    with pytest.raises(ValidationFailed) as caught:
        user_create(username="weak", role=Role.ADMIN, password="abc")
    assert any("too short" in e for e in caught.value.errors)
    assert not User.objects.filter(username="weak").exists()


def test_the_createuser_command_refuses_a_weak_password(monkeypatch):
    monkeypatch.setenv("RECONCILE_PASSWORD", "password")
    with pytest.raises(CommandError, match="not strong enough"):
        call_command("createuser", "--role", "admin", "--username", "root3")
    assert not User.objects.filter(username="root3").exists()


def test_the_django_admin_refuses_a_weak_password(client):
    root = User.objects.create_superuser("root", "", PASSWORD)
    client.force_login(root)
    response = client.post("/django-admin/auth/user/add/", {"username": "newbie", "password1": "abc", "password2": "abc",
                                                            "usable_password": "true"})
    assert response.status_code == 200 and not User.objects.filter(username="newbie").exists()
    target = user_create(username="later", role=Role.NURSE, password=PASSWORD)
    response = client.post(f"/django-admin/auth/user/{target.pk}/password/", {"password1": "abc", "password2": "abc"})
    target.refresh_from_db()
    assert response.status_code == 200 and target.check_password(PASSWORD)

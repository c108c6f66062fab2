"""Cookies an EHR's cross-site frame keeps: SameSite=None; Secure; Partitioned on secure contexts only."""
from __future__ import annotations

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from reconcile_app.smart.middleware import PartitionedCookiesMiddleware


def _set_cookie(request):  # type: ignore[no-untyped-def]
    response = HttpResponse("ok")
    response.set_cookie("sessionid", "abc", samesite="Lax", httponly=True)
    response.delete_cookie("messages")
    return response


def _headers(response: HttpResponse) -> dict[str, str]:
    return {name: morsel.OutputString() for name, morsel in response.cookies.items()}


@pytest.mark.parametrize(("host", "secure"), [("localhost:8000", False), ("127.0.0.1:8000", False), ("[::1]:8000", False),
                                              ("reconcile.example.org", True)])
def test_on_secure_contexts_every_cookie_is_partitioned(settings, host: str, secure: bool) -> None:
    settings.FRAMED_COOKIES = True
    settings.ALLOWED_HOSTS = ["*"]
    request = RequestFactory().get("/", HTTP_HOST=host, secure=secure)
    headers = _headers(PartitionedCookiesMiddleware(_set_cookie)(request))
    session = headers["sessionid"]
    assert "SameSite=None" in session and "Secure" in session and session.endswith("; Partitioned")
    assert "HttpOnly" in session and "abc" in session
    assert headers["messages"].endswith("; Partitioned")  # a deletion must name the same partition


def test_plain_http_on_another_host_keeps_the_settings(settings) -> None:
    settings.FRAMED_COOKIES = True
    settings.ALLOWED_HOSTS = ["*"]
    request = RequestFactory().get("/", HTTP_HOST="192.168.1.20:8000")
    session = _headers(PartitionedCookiesMiddleware(_set_cookie)(request))["sessionid"]
    assert "SameSite=Lax" in session and "Partitioned" not in session and "Secure" not in session


def test_it_can_be_turned_off(settings) -> None:
    settings.FRAMED_COOKIES = False
    request = RequestFactory().get("/", HTTP_HOST="localhost")
    assert "Partitioned" not in _headers(PartitionedCookiesMiddleware(_set_cookie)(request))["sessionid"]

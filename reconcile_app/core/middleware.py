"""Request id and login-by-default."""
from __future__ import annotations

import secrets
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import resolve, Resolver404

from .request_context import request_id_var

# URL names reachable without a login: sign-in, health, SMART launch endpoints, the sandbox
# EHR (its own OAuth protects it), CDS Hooks (its own auth) and the coaching-platform API.
PUBLIC_NAMESPACES = {"smart", "sandbox", "cds", "api"}
PUBLIC_URL_NAMES = {"core:login", "core:healthz"}


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-Id", "")
        # Accept a caller's id only if it looks like one; never echo arbitrary text.
        rid = incoming if incoming.isalnum() and len(incoming) <= 64 else secrets.token_hex(8)
        request.request_id = rid  # type: ignore[attr-defined]
        token = request_id_var.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-Id"] = rid
        return response


class LoginRequiredMiddleware:
    """Everything needs a login except the public endpoints; the denial is audited."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated or self._is_public(request):
            return self.get_response(request)
        from reconcile_app.audit.services import audit_record

        audit_record(request=request, action="page.view", outcome="denied", details={"reason": "anonymous"})
        if request.headers.get("HX-Request"):
            return HttpResponse(status=401)
        return redirect(f"{settings.LOGIN_URL_PATH}?next={request.path}")

    @staticmethod
    def _is_public(request: HttpRequest) -> bool:
        if request.path.startswith(settings.STATIC_URL) or request.path == "/favicon.ico":
            return True
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return True  # let the 404 handler answer; it shows nothing
        if match.namespace in PUBLIC_NAMESPACES or match.view_name in PUBLIC_URL_NAMES:
            return True
        return bool(getattr(match.func, "public", False))

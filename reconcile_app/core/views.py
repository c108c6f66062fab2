"""Sign-in, home, health and error pages."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from reconcile_app.audit.selectors import audit_event_list

from .decorators import public, role_required
from .forms import AuditFilterForm
from .health import health_report
from .roles import Role, user_roles


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    roles = user_roles(request.user)
    if Role.NURSE in roles or Role.ADMIN in roles:
        return redirect("triage:queue")
    launch_patient = request.session.get("smart_patient_pk")
    if Role.CLINICIAN in roles and launch_patient:
        return redirect("triage:patient_findings")  # the launched patient's open findings; the record is one tab away
    return render(request, "core/home.html", {"roles": roles})


class LoginView(auth_views.LoginView):
    template_name = "core/login.html"
    redirect_authenticated_user = True
    extra_context = {"sandbox_enabled": settings.SMART_SANDBOX_ENABLED}


login = public(LoginView.as_view())


def login_locked_out(request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None) -> HttpResponse:
    """django-axes' lockout answer (AXES_LOCKOUT_CALLABLE): 429, the same for every account and address."""
    minutes = max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))
    response = render(request, "core/login_locked.html", {"minutes": minutes}, status=429)
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response
logout = auth_views.LogoutView.as_view()


@public
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 only when the database, the broker and a worker all answer; otherwise 503 naming what is down
    (a missing worker heartbeat is `degraded`: pages work, but nothing uploaded is processed)."""
    report = health_report()
    return JsonResponse(report.as_json(), status=200 if report.status == "ok" else 503)


@require_GET
@role_required(Role.ADMIN)
def audit_list(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    events = audit_event_list(patient_pk=filters.get("patient"), action=filters.get("action") or None)
    if filters.get("outcome"):
        events = events.filter(outcome=filters["outcome"])
    return render(request, "core/audit_list.html", {"form": form, "events": events[:200]})


BARE_ERRORS = {
    400: ("Bad request", "The request could not be understood."),
    403: ("Not allowed", "This page is not available to you."),
    404: ("Not found", "There is nothing at this address."),
    500: ("Something went wrong", "The error has been logged with its request id. Please try again shortly."),
}


def _error_page(request: HttpRequest, template: str, status: int) -> HttpResponse:
    """The error page, or a bare one when the request was refused before the session and user were
    read (an unknown Host header, a malformed request): then nothing may depend on them."""
    if hasattr(request, "user") and hasattr(request, "session"):
        return render(request, template, status=status)
    title, text = BARE_ERRORS[status]
    html = render_to_string("errors/bare.html", {"title": title, "text": text, "request_id": getattr(request, "request_id", "")})
    return HttpResponse(html, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _error_page(request, "errors/400.html", 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _error_page(request, "errors/403.html", 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _error_page(request, "errors/404.html", 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return _error_page(request, "errors/500.html", 500)

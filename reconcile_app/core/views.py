"""Sign-in, home, health and error pages."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
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
        return redirect(reverse("fhir:patient_detail", args=[launch_patient]))
    return render(request, "core/home.html", {"roles": roles})


class LoginView(auth_views.LoginView):
    template_name = "core/login.html"
    redirect_authenticated_user = True
    extra_context = {"sandbox_enabled": settings.SMART_SANDBOX_ENABLED}


login = public(LoginView.as_view())
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


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "errors/400.html", status=400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "errors/403.html", status=403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "errors/404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    return render(request, "errors/500.html", status=500)

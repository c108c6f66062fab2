"""The EHR-like pages: a patient list and a chart frame that launches reconcile in an iframe."""
from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .forms import EhrLaunchForm
from .models import SimulatedError
from .selectors import (
    sandbox_app_launch_url,
    sandbox_chart_summary,
    sandbox_patient_get,
    sandbox_patient_list,
    sandbox_practitioner_list,
)
from .services import sandbox_launch_create
from .views_fhir import fhir_base_url


def _app_launch_url() -> str:
    """The app's SMART launch endpoint: SANDBOX_APP_LAUNCH_URL, else the launch URL the app registered
    (the demo registers the app on another site, as EHRs embed it), else the same origin."""
    configured = getattr(settings, "SANDBOX_APP_LAUNCH_URL", "") or sandbox_app_launch_url()
    if configured:
        return str(configured)
    try:
        return reverse("smart:launch")
    except NoReverseMatch:
        return "/smart/launch"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


@require_GET
def patient_list(request: HttpRequest) -> HttpResponse:
    return render(request, "sandbox/ehr_patients.html", {
        "patients": sandbox_patient_list(),
        "practitioners": sandbox_practitioner_list(),
        "simulated_errors": SimulatedError.choices,
    })


@never_cache
@require_GET
def patient_chart(request: HttpRequest, fhir_id: str) -> HttpResponse:
    """Each visit is a fresh launch, like an EHR opening the app from the chart."""
    patient = sandbox_patient_get(fhir_id=fhir_id)
    if patient is None:
        raise Http404("no such sandbox patient")
    form = EhrLaunchForm(request.GET)
    form.is_valid()
    practitioners = sandbox_practitioner_list()
    practitioner_id = form.cleaned_data.get("practitioner") or (practitioners[0].fhir_id if practitioners else "")
    simulate = form.cleaned_data.get("simulate_error") or ""
    launch = sandbox_launch_create(
        patient_id=patient.fhir_id, practitioner_id=practitioner_id, simulate_error=simulate,
        need_patient_banner=not form.cleaned_data.get("hide_banner"),
    )
    app_url = _app_launch_url() + "?" + urlencode({"iss": fhir_base_url(request), "launch": launch})
    response = render(request, "sandbox/ehr_chart.html", {
        "patient": patient,
        "practitioner": next((p for p in practitioners if p.fhir_id == practitioner_id), None),
        "simulated_error": dict(SimulatedError.choices).get(simulate, "") if simulate else "",
        "app_url": app_url,
        "summary": sandbox_chart_summary(patient_id=patient.fhir_id),
    })
    # The chart frames the app, possibly on another site: name it in frame-src (the app-wide CSP is 'self').
    response["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        f"frame-src 'self' {_origin(app_url)}".rstrip() + "; frame-ancestors 'self'"
    )
    return response

"""Template context: navigation entries for the user's roles."""
from __future__ import annotations

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from .roles import Role, user_roles

# (label, url name, roles that see it)
NAV = [
    ("Queue", "triage:queue", {Role.NURSE, Role.ADMIN}),
    ("Dashboard", "triage:dashboard", {Role.NURSE, Role.ADMIN}),
    ("Patients", "fhir:patient_list", {Role.NURSE, Role.ADMIN}),
    ("Transcripts", "transcripts:upload_list", {Role.ADMIN, Role.CLINICIAN}),
    ("Routing rules", "triage:rule_list", {Role.ADMIN}),
    ("EHR registrations", "smart:registration_list", {Role.ADMIN}),
    ("Audit", "core:audit_list", {Role.ADMIN}),
    ("Preferences", "core:preferences", {Role.NURSE, Role.ADMIN, Role.CLINICIAN}),
]


# A clinician works on the one launched patient: (label, url name) with that patient's pk.
LAUNCHED_PATIENT_NAV = [
    ("Record", "fhir:patient_detail"),
    ("Memories", "narrative:patient_memories"),
]


def navigation(request: HttpRequest) -> dict:
    roles = user_roles(request.user)
    items = []
    launched = request.session.get("smart_patient_pk") if hasattr(request, "session") else None
    if Role.CLINICIAN in roles and launched:
        try:  # the findings first: it is where a launch lands
            items.append({"label": "Findings", "url": reverse("triage:patient_findings")})
        except NoReverseMatch:
            pass
        for label, name in LAUNCHED_PATIENT_NAV:
            try:
                items.append({"label": label, "url": reverse(name, args=[launched])})
            except NoReverseMatch:
                continue
    for label, name, allowed in NAV:
        if roles & allowed:
            try:
                items.append({"label": label, "url": reverse(name)})
            except NoReverseMatch:  # an app not wired yet stays out of the menu
                continue
    return {"nav_items": items, "user_role_names": sorted(r.value for r in roles)}

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
]


def navigation(request: HttpRequest) -> dict:
    roles = user_roles(request.user)
    items = []
    for label, name, allowed in NAV:
        if roles & allowed:
            try:
                items.append({"label": label, "url": reverse(name)})
            except NoReverseMatch:  # an app not wired yet stays out of the menu
                continue
    return {"nav_items": items, "user_role_names": sorted(r.value for r in roles)}

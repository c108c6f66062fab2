"""Sandbox EHR reads: resources, searches, the patient and practitioner lists, tokens by bearer value."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.db.models import QuerySet

from .fhirdata import CREATABLE_TYPES
from .models import SandboxClient, SandboxResource, SandboxToken


def sandbox_resource_get(*, resource_type: str, fhir_id: str) -> SandboxResource | None:
    return SandboxResource.objects.filter(resource_type=resource_type, fhir_id=fhir_id).first()


def sandbox_resource_search(
    *, resource_type: str, patient_id: str | None, fhir_id: str | None = None
) -> QuerySet[SandboxResource]:
    """One type, optionally within one patient's compartment, in load order (stable for paging)."""
    rows = SandboxResource.objects.filter(resource_type=resource_type)
    if patient_id is not None:
        rows = rows.filter(patient_id=patient_id)
    if fhir_id is not None:
        rows = rows.filter(fhir_id=fhir_id)
    return rows.order_by("id")


def sandbox_client_get(*, client_id: str) -> SandboxClient | None:
    return SandboxClient.objects.filter(client_id=client_id).first() if client_id else None


def sandbox_app_launch_url() -> str:
    """The launch URL of the (most recently registered) app that has one."""
    return (
        SandboxClient.objects.exclude(launch_url="").order_by("-updated_at").values_list("launch_url", flat=True).first() or ""
    )


def sandbox_access_token_get(*, token: str) -> SandboxToken | None:
    """The access-token row for a bearer value, expired or not (the caller decides how to answer)."""
    token_hash = hashlib.sha256(token.encode()).hexdigest()
    return (
        SandboxToken.objects.select_related("client")
        .filter(kind=SandboxToken.Kind.ACCESS, token_hash=token_hash).first()
    )


@dataclass(frozen=True)
class PersonRow:
    fhir_id: str
    name: str
    sex: str = ""
    age: int | None = None
    birth_date: str = ""


def human_name(resource: dict[str, Any]) -> str:
    for name in resource.get("name") or []:
        if name.get("text"):
            return str(name["text"])
        given = " ".join(name.get("given") or [])
        prefix = " ".join(name.get("prefix") or [])
        full = " ".join(p for p in (prefix, given, name.get("family", "")) if p)
        if full:
            return full
    return resource.get("id", "")


def _age(birth_date: str, today: date) -> int | None:
    try:
        born = date.fromisoformat(birth_date[:10])
    except ValueError:
        return None
    return today.year - born.year - ((today.month, today.day) < (born.month, born.day))


def sandbox_patient_list(*, today: date | None = None) -> list[PersonRow]:
    today = today or date.today()
    rows = []
    for resource in SandboxResource.objects.filter(resource_type="Patient").order_by("fhir_id").values_list("json", flat=True):
        birth = str(resource.get("birthDate", ""))
        rows.append(PersonRow(
            fhir_id=str(resource["id"]), name=human_name(resource), sex=str(resource.get("gender", "")),
            age=_age(birth, today) if birth else None, birth_date=birth,
        ))
    return sorted(rows, key=lambda r: r.name)


def sandbox_practitioner_list() -> list[PersonRow]:
    resources = SandboxResource.objects.filter(resource_type="Practitioner").order_by("fhir_id").values_list("json", flat=True)
    return sorted((PersonRow(fhir_id=str(r["id"]), name=human_name(r)) for r in resources), key=lambda r: r.name)


def sandbox_patient_get(*, fhir_id: str) -> PersonRow | None:
    return next((p for p in sandbox_patient_list() if p.fhir_id == fhir_id), None)


@dataclass(frozen=True)
class AppWrite:
    """A resource an app created for the patient (DetectedIssue, Task, Communication), as the chart lists it."""

    reference: str
    title: str
    detail: str
    when: str
    identifier: str = ""  # the app's own id for it (reconcile: the finding), as the resource carries it


@dataclass(frozen=True)
class ChartSummary:
    problems: list[str]
    medications: list[str]
    allergies: list[str]
    from_apps: list[AppWrite] = field(default_factory=list)


def _app_write(resource_type: str, resource: dict[str, Any]) -> AppWrite:
    if resource_type == "Communication":
        payload = (resource.get("payload") or [{}])[0]
        detail = str(payload.get("contentString") or "")
    else:
        detail = str(resource.get("detail") or resource.get("description") or "")
    return AppWrite(
        reference=f"{resource_type}/{resource.get('id')}",
        title=f"{resource_type}: {_display(resource.get('code'))}" if resource.get("code") else resource_type,
        detail=detail.split("\n", 1)[0][:300],
        when=str(resource.get("identifiedDateTime") or resource.get("authoredOn") or resource.get("sent")
                 or (resource.get("meta") or {}).get("lastUpdated") or "")[:16].replace("T", " "),
        identifier=str(((resource.get("identifier") or [{}])[0] or {}).get("value") or ""),
    )


def _display(concept: dict[str, Any] | None) -> str:
    concept = concept or {}
    coding = (concept.get("coding") or [{}])[0]
    return str(concept.get("text") or coding.get("display") or coding.get("code") or "?")


def _status(concept: dict[str, Any] | None) -> str:
    return str(((concept or {}).get("coding") or [{}])[0].get("code", ""))


def sandbox_chart_summary(*, patient_id: str) -> ChartSummary:
    """The EHR's own side panel: active problems, medications and allergies (entered-in-error left out)."""
    rows = SandboxResource.objects.filter(
        patient_id=patient_id, resource_type__in=["Condition", "MedicationRequest", "AllergyIntolerance"]
    ).values_list("resource_type", "json")
    problems, medications, allergies = [], [], []
    for resource_type, resource in rows:
        if _status(resource.get("verificationStatus")) == "entered-in-error":
            continue
        # A missing clinicalStatus is read as active: showing too much beats hiding an allergy.
        clinical = _status(resource.get("clinicalStatus")) or "active"
        if resource_type == "Condition" and clinical == "active":
            problems.append(_display(resource.get("code")))
        elif resource_type == "MedicationRequest" and resource.get("status") == "active":
            medications.append(_display(resource.get("medicationCodeableConcept")))
        elif resource_type == "AllergyIntolerance" and clinical == "active":
            allergies.append(_display(resource.get("code")))
    writes = SandboxResource.objects.filter(patient_id=patient_id, resource_type__in=CREATABLE_TYPES).order_by("-last_updated", "-pk")
    from_apps = [_app_write(rtype, resource) for rtype, resource in writes.values_list("resource_type", "json")]
    return ChartSummary(sorted(problems), sorted(medications), sorted(allergies), from_apps)

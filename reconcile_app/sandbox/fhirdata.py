"""Pure helpers over FHIR JSON: which patient a resource belongs to, and urn:uuid reference rewriting."""
from __future__ import annotations

import uuid
from typing import Any

# The element that points at the patient, per resource type (the Patient compartment, simplified).
PATIENT_REFERENCE_ELEMENTS = ("subject", "patient", "for", "beneficiary", "individual")
CREATABLE_TYPES = ("DetectedIssue", "Task", "Communication")


def reference_patient_id(reference: str) -> str:
    """`Patient/abc` (relative or absolute) -> `abc`; anything else -> ``."""
    parts = reference.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2] == "Patient":
        return parts[-1]
    return ""


def resource_patient_id(resource: dict[str, Any]) -> str:
    if resource.get("resourceType") == "Patient":
        return str(resource.get("id", ""))
    for element in PATIENT_REFERENCE_ELEMENTS:
        value = resource.get(element)
        if isinstance(value, dict) and isinstance(value.get("reference"), str):
            found = reference_patient_id(value["reference"])
            if found:
                return found
    return ""


def _rewrite(node: Any, mapping: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "reference" and isinstance(value, str) and value in mapping:
                out[key] = mapping[value]
            else:
                out[key] = _rewrite(value, mapping)
        return out
    if isinstance(node, list):
        return [_rewrite(item, mapping) for item in node]
    return node


def bundle_resources(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The resources of a Bundle with ids assigned and `urn:uuid:` references made `Type/id`."""
    if bundle.get("resourceType") != "Bundle":
        raise ValueError("not a FHIR Bundle")
    resources = []
    mapping: dict[str, str] = {}
    for entry in bundle.get("entry") or []:
        resource = dict(entry.get("resource") or {})
        if not resource.get("resourceType"):
            continue
        if not resource.get("id"):
            resource["id"] = uuid.uuid4().hex
        full_url = entry.get("fullUrl")
        if isinstance(full_url, str) and full_url:
            mapping[full_url] = f"{resource['resourceType']}/{resource['id']}"
        resources.append(resource)
    return [_rewrite(r, mapping) for r in resources] if mapping else resources

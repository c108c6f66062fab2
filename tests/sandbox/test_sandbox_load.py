"""The sandbox_load command and the shipped demo data."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from reconcile_app.sandbox.fhirdata import bundle_resources, resource_patient_id
from reconcile_app.sandbox.models import SandboxResource

from .conftest import DATA


def test_load_is_idempotent(db: None, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("sandbox_load", str(DATA / "two_patients.json"))
    call_command("sandbox_load", str(DATA))
    assert "loaded 14 resources" in capsys.readouterr().out
    assert SandboxResource.objects.count() == 14


def test_load_needs_a_path(db: None, tmp_path: Path) -> None:
    with pytest.raises(CommandError):
        call_command("sandbox_load")
    with pytest.raises(CommandError):
        call_command("sandbox_load", str(tmp_path / "missing.json"))


def test_resources_without_ids_get_one_and_bad_bundles_are_refused() -> None:
    resources = bundle_resources({"resourceType": "Bundle", "entry": [{"resource": {"resourceType": "Observation"}}]})
    assert resources[0]["id"]
    with pytest.raises(ValueError):
        bundle_resources({"resourceType": "Patient"})


def test_patient_compartment_follows_the_reference_element() -> None:
    assert resource_patient_id({"resourceType": "Task", "for": {"reference": "Patient/p1"}}) == "p1"
    assert resource_patient_id({"resourceType": "Immunization", "patient": {"reference": "https://x/fhir/Patient/p2"}}) == "p2"
    assert resource_patient_id({"resourceType": "Practitioner", "id": "d1"}) == ""
    assert resource_patient_id({"resourceType": "Observation", "subject": {"reference": "Group/g"}}) == ""

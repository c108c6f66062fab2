"""The shipped demo patients: realistic, consistent with their labels, and loadable into the sandbox."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from reconcile_app.sandbox.models import SandboxResource
from reconcile_app.sandbox.services import DEMO_DATA_DIR, sandbox_seed_demo
from reconcile_app.transcripts.parsers import parse_json

FOLDERS = sorted(p for p in DEMO_DATA_DIR.iterdir() if (p / "bundle.json").exists())
SYSTEMS = {
    "Condition": "http://snomed.info/sct", "Procedure": "http://snomed.info/sct", "AllergyIntolerance": "http://snomed.info/sct",
    "MedicationRequest": "http://www.nlm.nih.gov/research/umls/rxnorm", "Observation": "http://loinc.org",
    "Immunization": "http://hl7.org/fhir/sid/cvx",
}


def _resources(folder: Path) -> list[dict]:
    return [e["resource"] for e in json.loads((folder / "bundle.json").read_text())["entry"]]


def _code(resource: dict) -> dict:
    concept = resource.get("code") or resource.get("medicationCodeableConcept") or resource.get("vaccineCode") or resource["category"][0]
    return concept["coding"][0]


def test_three_demo_patients_ship() -> None:
    assert len(FOLDERS) == 3


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_bundle_is_realistic_and_status_aware(folder: Path) -> None:
    resources = _resources(folder)
    assert 40 <= len(resources) <= 130
    assert [r["resourceType"] for r in resources].count("Patient") == 1
    for resource in resources:
        if resource["resourceType"] in SYSTEMS:
            assert _code(resource)["system"] == SYSTEMS[resource["resourceType"]], resource["id"]
    statuses = {(r["resourceType"], r.get("status") or json.dumps(r.get("clinicalStatus") or r.get("verificationStatus"))) for r in resources}
    flat = json.dumps(sorted(statuses))
    assert '"stopped"' in flat or '"completed"' in flat
    assert "resolved" in flat and "inactive" in flat and "entered-in-error" in flat
    assert {"Practitioner", "Encounter", "Observation"} <= {r["resourceType"] for r in resources}


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_transcript_parses_and_labels_point_at_real_turns_and_resources(folder: Path) -> None:
    transcript = parse_json((folder / "transcript.json").read_text())
    labels = json.loads((folder / "labels.json").read_text())
    patient = next(r for r in _resources(folder) if r["resourceType"] == "Patient")
    assert labels["patient"] == f"Patient/{patient['id']}"
    assert 8 <= len(transcript.sessions) <= 12
    turn_ids = {t.id for s in transcript.sessions for t in s.turns}
    by_key = {(r["resourceType"], r["id"]): r for r in _resources(folder)}
    kinds = set()
    for scenario in labels["scenarios"]:
        assert set(scenario["turn_ids"]) <= turn_ids
        kinds.add(scenario["category"])
        for ref in scenario["fhir_refs"]:
            assert _code(by_key[(ref["resourceType"], ref["id"])])["code"] == ref["code"]
    assert {"medication", "observation", "condition"} <= kinds
    assert len({s["session_id"] for s in labels["scenarios"]}) == len(labels["scenarios"])  # at most one per session
    assert len(labels["traps"]) >= 4
    for trap in labels["traps"]:
        assert set(trap["turn_ids"]) <= turn_ids


def test_seed_demo_loads_every_patient_into_the_ehr(client: Client, db: None) -> None:
    total = sandbox_seed_demo()
    assert total == SandboxResource.objects.count() == sum(len(_resources(f)) for f in FOLDERS)
    html = client.get("/sandbox/ehr/").content.decode()
    assert "Walter James Ostrowski" in html and "Denise Marie Arbogast" in html and "Jamal Andre Whitfield" in html

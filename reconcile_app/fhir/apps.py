"""App config for fhir."""
from django.apps import AppConfig


class FhirConfig(AppConfig):
    name = "reconcile_app.fhir"
    label = "fhir"

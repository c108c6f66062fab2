"""CDS Hooks URLs (discovery and the patient-view service)."""
from django.urls import path  # noqa: F401

app_name = "cds"
urlpatterns: list = []

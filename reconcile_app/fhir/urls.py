"""URLs for fhir."""
from django.urls import path  # noqa: F401

app_name = "fhir"
urlpatterns: list = []

"""URLs for triage."""
from django.urls import path  # noqa: F401

app_name = "triage"
urlpatterns: list = []

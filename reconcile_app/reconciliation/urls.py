"""URLs for reconciliation."""
from django.urls import path  # noqa: F401

app_name = "reconciliation"
urlpatterns: list = []

"""URLs for narrative."""
from django.urls import path  # noqa: F401

app_name = "narrative"
urlpatterns: list = []

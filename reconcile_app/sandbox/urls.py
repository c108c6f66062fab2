"""URLs for sandbox."""
from django.urls import path  # noqa: F401

app_name = "sandbox"
urlpatterns: list = []

"""URLs for smart."""
from django.urls import path  # noqa: F401

app_name = "smart"
urlpatterns: list = []

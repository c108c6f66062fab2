"""URLs for transcripts."""
from django.urls import path  # noqa: F401

app_name = "transcripts"
urlpatterns: list = []

"""REST API for coaching platforms (token-authenticated), mounted at /api/."""
from django.urls import path

from . import api_views

app_name = "api"
urlpatterns = [
    path("transcripts", api_views.transcript_create, name="transcript_create"),
    path("transcripts/<int:pk>", api_views.transcript_status, name="transcript_status"),
]

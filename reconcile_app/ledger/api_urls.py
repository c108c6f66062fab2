"""The ledger's part of the coaching platforms' token API (joined into the `api` namespace at /api/)."""
from django.urls import path

from . import api_views

urlpatterns = [
    path("corrections", api_views.correction_create, name="correction_create"),
]

"""The context pack's URL; config/urls.py mounts it in the coaching platforms' `api` namespace, under /api/."""
from django.urls import path

from . import views

urlpatterns = [
    path("patients/<str:patient_id>/context", views.patient_context, name="patient_context"),
]

"""URLs for narrative (mounted at /memories/)."""
from django.urls import path

from . import views

app_name = "narrative"
urlpatterns = [
    path("patients/<int:patient_pk>/", views.patient_memories, name="patient_memories"),
]

"""URLs for fhir: the patient list and the patient record."""
from django.urls import path

from . import views

app_name = "fhir"
urlpatterns = [
    path("", views.patient_list, name="patient_list"),
    path("launch/", views.launch_open, name="launch_open"),
    path("<int:pk>/", views.patient_detail, name="patient_detail"),
    path("<int:pk>/live/", views.patient_live, name="patient_live"),
    path("<int:pk>/refresh/", views.patient_refresh, name="patient_refresh"),
]

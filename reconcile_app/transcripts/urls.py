"""URLs for transcripts."""
from django.urls import path

from . import views

app_name = "transcripts"
urlpatterns = [
    path("", views.upload_list, name="upload_list"),
    path("new/", views.upload_create, name="upload_create"),
    path("<int:pk>/", views.upload_detail, name="upload_detail"),
    path("<int:pk>/progress/", views.upload_progress_partial, name="upload_progress"),
    path("<int:pk>/map/", views.upload_map, name="upload_map"),
    path("<int:pk>/withdraw/", views.upload_withdraw, name="upload_withdraw"),
    path("sessions/<int:pk>/", views.session_detail, name="session_detail"),
    path("sessions/<int:pk>/withdraw/", views.session_withdraw, name="session_withdraw"),
    path("sessions/<int:pk>/retry/", views.session_retry, name="session_retry"),
    path("patients/<int:pk>/progress/", views.patient_progress_partial, name="patient_progress"),
]

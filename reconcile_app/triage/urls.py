"""URLs for triage (mounted at /triage/)."""
from django.urls import path

from . import views

app_name = "triage"
urlpatterns = [
    path("", views.queue, name="queue"),
    path("bulk/", views.bulk, name="bulk"),
    path("patient-search/", views.queue_patient, name="queue_patient"),
    path("findings/<int:pk>/", views.finding_detail, name="finding_detail"),
    path("findings/<int:pk>/<slug:step>/", views.finding_step, name="finding_step"),
    path("alerts/<int:pk>/ack/", views.alert_ack, name="alert_ack"),
    path("patient/", views.patient_findings, name="patient_findings"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/new/", views.rule_edit, name="rule_create"),
    path("rules/preview/", views.rule_preview, name="rule_preview"),
    path("rules/<int:pk>/", views.rule_edit, name="rule_edit"),
    path("rules/<int:pk>/delete/", views.rule_delete, name="rule_delete"),
    path("dashboard/", views.dashboard, name="dashboard"),
]

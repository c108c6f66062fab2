"""URLs for the sandbox EHR: FHIR API under fhir/, OAuth under auth/, EHR pages under ehr/."""
from django.urls import path, re_path

from . import views_auth, views_ehr, views_fhir

app_name = "sandbox"
_TYPE = r"(?P<resource_type>[A-Z][A-Za-z]{1,63})"
_ID = r"(?P<fhir_id>[A-Za-z0-9\-\.]{1,64})"

urlpatterns = [
    path("fhir", views_fhir.fhir_base, name="fhir_base"),
    path("fhir/.well-known/smart-configuration", views_fhir.smart_configuration, name="smart_configuration"),
    path("fhir/metadata", views_fhir.capability_statement, name="metadata"),
    re_path(rf"^fhir/{_TYPE}/?$", views_fhir.resource_type_endpoint, name="resource_type"),
    re_path(rf"^fhir/{_TYPE}/{_ID}$", views_fhir.resource_read, name="resource_read"),
    re_path(r"^fhir/(?P<rest>.*)$", views_fhir.not_found, name="fhir_not_found"),
    path("auth/authorize", views_auth.authorize, name="authorize"),
    path("auth/token", views_auth.token, name="token"),
    path("auth/jwks", views_auth.jwks, name="jwks"),
    path("ehr/", views_ehr.patient_list, name="ehr_patients"),
    path("ehr/patients/<str:fhir_id>/", views_ehr.patient_chart, name="ehr_chart"),
]

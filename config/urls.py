"""Root URLs: one include per app."""
from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from reconcile_app.context import urls as context_urls
from reconcile_app.transcripts import api_urls as transcripts_api_urls

urlpatterns = [
    path("", include("reconcile_app.core.urls")),
    path("smart/", include("reconcile_app.smart.urls")),
    path("patients/", include("reconcile_app.fhir.urls")),
    path("transcripts/", include("reconcile_app.transcripts.urls")),
    path("memories/", include("reconcile_app.narrative.urls")),
    path("findings/", include("reconcile_app.reconciliation.urls")),
    path("triage/", include("reconcile_app.triage.urls")),
    path("cds-services", include("reconcile_app.triage.cds_urls")),
    # The coaching platforms' token API: transcripts in, the context pack out (one `api` namespace).
    path("api/", include((transcripts_api_urls.urlpatterns + context_urls.urlpatterns, "api"))),
    # A patient's correction through the platform API (token-authenticated, its own namespace).
    path("api/", include(("reconcile_app.ledger.api_urls", "ledger_api"))),
    path("ledger/", include("reconcile_app.ledger.urls")),
    path("django-admin/", admin.site.urls),
]
if settings.SMART_SANDBOX_ENABLED:
    urlpatterns.append(path("sandbox/", include("reconcile_app.sandbox.urls")))

handler400 = "reconcile_app.core.views.bad_request"
handler403 = "reconcile_app.core.views.permission_denied"
handler404 = "reconcile_app.core.views.page_not_found"
handler500 = "reconcile_app.core.views.server_error"

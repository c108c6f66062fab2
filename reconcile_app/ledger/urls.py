"""URLs of the ledger (mounted at /ledger/): provenance, corrections, retraction retries."""
from django.urls import path

from . import views

app_name = "ledger"
urlpatterns = [
    path("findings/<int:pk>/provenance/", views.finding_provenance, name="finding_provenance"),
    path("findings/<int:pk>/provenance.json", views.finding_provenance_export, name="finding_provenance_export"),
    path("memories/<int:pk>/correct/", views.memory_correct, name="memory_correct"),
    path("corrections/", views.correction_list, name="correction_list"),
    path("corrections/<int:pk>/review/", views.correction_review, name="correction_review"),
    path("retractions/<int:pk>/retry/", views.retraction_retry, name="retraction_retry"),
]

"""Events the clinical stream announces downstream (imports flow one way: listeners import fhir, not
the reverse)."""
from django.dispatch import Signal

# A new version of a patient's record was stored, inside the storing transaction. kwargs: patient_id,
# snapshot_id, previous_id (None for the first version). Receivers enqueue work on commit.
record_changed = Signal()

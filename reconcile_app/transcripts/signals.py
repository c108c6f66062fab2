"""Events the transcripts app announces to the layers downstream of it (imports flow one way:
the pipeline, a top-level orchestrator, listens; transcripts never imports it)."""
from django.dispatch import Signal

# New or re-queued sessions wait for the pipeline. kwargs: patient_id. Sent inside the writing
# transaction; receivers enqueue work on commit.
sessions_pending = Signal()

# Consent was withdrawn for a session, inside the withdrawing transaction, before its turns are
# deleted. kwargs: session, user (who withdrew it, or None), reason. Receivers revoke what was drawn
# from it (memories, findings, queue items, copies written to the EHR).
session_withdrawn = Signal()

"""Keep items whole when a quote's finding is deleted (consent withdrawal cascades from memories)."""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from .models import TriageQuote


@receiver(post_delete, sender=TriageQuote, dispatch_uid="triage-quote-deleted")
def _quote_deleted(sender: Any, instance: TriageQuote, **kwargs: Any) -> None:
    from .services import triage_item_quotes_changed

    # Inside the deleting transaction: the item is consistent the moment the withdrawal commits.
    with transaction.atomic():
        triage_item_quotes_changed(item_id=instance.item_id)

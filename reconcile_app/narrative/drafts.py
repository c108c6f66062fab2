"""Earlier memories as the engines' drafts, each memory converted once per process (a bounded cache)."""
from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime

from django.db.models import QuerySet

from .models import Memory
from .types import MemoryDraft

# Drafts of earlier memories are read again for every later session of the patient (current state and
# history), so each memory is turned into a draft once: what a draft holds never changes for a memory in a
# given status (nothing is edited in place; a revocation blanks the words and changes the status). Keyed by
# id, creation time and status, so a reused id (a rolled-back test transaction) or a new status is a miss.
DraftKey = tuple[int, datetime, str]
_DRAFTS: OrderedDict[DraftKey, tuple[MemoryDraft, str]] = OrderedDict()
DRAFTS_MAX = 50_000


def drafts_of(qs: QuerySet[Memory], *, convert: Callable[[Memory], MemoryDraft]) -> list[MemoryDraft]:
    """The drafts of the query's memories in its order: one query of keys, rows only for memories not seen yet."""
    keys: list[DraftKey] = list(qs.values_list("pk", "created_at", "status"))
    missing = [key for key in keys if key not in _DRAFTS]
    fresh: dict[int, tuple[MemoryDraft, str]] = {}
    if missing:
        wanted = set(missing)
        for memory in Memory.objects.filter(pk__in=[key[0] for key in missing]).select_related("turn"):
            fresh[memory.pk] = entry = (convert(memory), json.dumps(memory.attributes))
            if (memory.pk, memory.created_at, memory.status) in wanted:
                _DRAFTS[(memory.pk, memory.created_at, memory.status)] = entry
        while len(_DRAFTS) > DRAFTS_MAX:
            _DRAFTS.popitem(last=False)
    out = []
    for key in keys:
        entry = _DRAFTS.get(key) or fresh.get(key[0])  # changed or gone between the two reads: as read now, or left out
        if entry is not None:
            # A copy of its own for the caller, attributes too; a shallow copy through __dict__ because the
            # dataclass constructor would cost more than the query saved.
            draft = object.__new__(MemoryDraft)
            draft.__dict__.update(entry[0].__dict__)
            draft.attributes = json.loads(entry[1])
            out.append(draft)
    return out

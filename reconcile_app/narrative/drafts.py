"""Earlier memories as the engines' drafts, each memory converted once per process (a bounded cache)."""
from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime, timezone as dt_timezone
from typing import Any

from django.db import models
from django.db.models import QuerySet
from django.utils import timezone

from .models import Memory
from .types import MemoryDraft

# Drafts of earlier memories are read again for every later session of the patient (current state and
# history), so each memory is turned into a draft once: what a draft holds never changes for a memory that is
# still the patient's (nothing is edited in place; only a revocation blanks the words, and a revoked memory is
# never read as a draft again: it is neither believed nor in the history). So a change of status, such as the
# outdating of a state by a later one, keeps its draft. Keyed by id and creation time, so a reused id (a
# rolled-back test transaction) is a miss.
DraftKey = tuple[int, datetime]
# (the draft, its attributes as JSON, the same attributes decoded when they are flat: a dict of plain values)
Entry = tuple[MemoryDraft, str, "dict[str, Any] | None"]
_DRAFTS: OrderedDict[DraftKey, Entry] = OrderedDict()
DRAFTS_MAX = 50_000
_PLAIN = (str, int, float, bool, type(None))


def _entry(draft: MemoryDraft, attributes: Any) -> Entry:
    text = json.dumps(attributes)
    flat = isinstance(attributes, dict) and all(type(v) in _PLAIN for v in attributes.values())
    return (draft, text, json.loads(text) if flat else None)


def _attributes_copy(entry: Entry) -> Any:
    """The attributes as a fresh decode of their JSON would give them: a flat dict (most are) is copied, which
    costs a third of decoding it again; nested values are decoded, so no list or dict is shared with the cache."""
    return dict(entry[2]) if entry[2] is not None else json.loads(entry[1])


def drafts_of(qs: QuerySet[Memory], *, convert: Callable[[Memory], MemoryDraft]) -> list[MemoryDraft]:
    """The drafts of the query's memories in its order: one query of keys, rows only for memories not seen yet."""
    return drafts_for_keys(list(qs.values_list("pk", "created_at")), convert=convert)


def drafts_for_keys(keys: list[DraftKey], *, convert: Callable[[Memory], MemoryDraft]) -> list[MemoryDraft]:
    """The drafts of the memories with these keys (id, created_at) in this order, rows read only for those not seen
    yet; a memory changed or gone since its key was read is left out."""
    missing = [key for key in keys if key not in _DRAFTS]
    fresh: dict[int, Entry] = {}
    if missing:
        wanted = set(missing)
        for memory in Memory.objects.filter(pk__in=[key[0] for key in missing]).select_related("turn"):
            fresh[memory.pk] = entry = _entry(convert(memory), memory.attributes)
            if (memory.pk, memory.created_at) in wanted and memory.status != Memory.Status.REVOKED:  # revoked between the reads
                _DRAFTS[(memory.pk, memory.created_at)] = entry
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
            draft.attributes = _attributes_copy(entry)
            out.append(draft)
    return out


def drafts_seed(memories: Iterable[Memory], *, convert: Callable[[Memory], MemoryDraft]) -> None:
    """Drafts of memories just inserted (the extraction's own), so the next session's read finds them
    rather than reading their rows back: each is converted from the memory as its row would read."""
    for memory in memories:
        row = _as_read(memory)
        _DRAFTS[(memory.pk, memory.created_at)] = _entry(convert(row), row.attributes)
    while len(_DRAFTS) > DRAFTS_MAX:
        _DRAFTS.popitem(last=False)


def _as_read(memory: Memory) -> Memory:
    """A copy of an inserted memory with each value as the database gives it back (JSON decoded, times in
    UTC, floats, ints and plain strings), so its draft is the one a read of the row would make."""
    row = copy.copy(memory)
    for field in Memory._meta.concrete_fields:
        setattr(row, field.attname, _as_read_value(field, getattr(memory, field.attname)))
    return row


def _as_read_value(field: models.Field, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(field, models.JSONField):
        return json.loads(json.dumps(value, cls=field.encoder))
    if isinstance(field, models.DateTimeField):
        aware = value if timezone.is_aware(value) else timezone.make_aware(value)
        return aware.astimezone(dt_timezone.utc)
    if isinstance(field, models.FloatField):
        return float(value)
    if isinstance(field, models.IntegerField):  # AutoField and BigAutoField too
        return int(value)
    if isinstance(field, (models.CharField, models.TextField)):
        return str.__str__(value) if isinstance(value, str) else str(value)  # an enum's value, as stored
    return value

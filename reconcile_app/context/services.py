"""Serving a context pack: build it from the latest snapshot and what the platform may see, answer 304 when the
client holds this version, and audit every serve (platform, patient, version)."""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Hashable

from django.http import HttpRequest
from django.utils import timezone
from django.utils.http import parse_etags

from reconcile_app.audit.services import audit_record
from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.selectors import snapshot_latest
from reconcile_app.transcripts.models import CoachingPlatform

from .pack import build_pack
from .selectors import discrepancy_facts, memory_facts_for_ids, memory_keys, record_part_for, visible_sessions
from .text import BudgetTooSmall, render_text

PACKS_CACHED = 128  # per process; a pack is tens to a few hundred kilobytes
TEXTS_PER_PACK = 8


@dataclass
class BuiltPack:
    """A pack and its renderings, made once per distinct set of facts."""

    pack: dict[str, Any]
    json_bytes: bytes
    texts: dict[int, str] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return str(self.pack["version"])

    def text(self, budget: int) -> str:
        if budget not in self.texts:
            if len(self.texts) >= TEXTS_PER_PACK:
                self.texts.clear()
            self.texts[budget] = render_text(self.pack, budget=budget)
        return self.texts[budget]


class _PackCache:
    """Packs by the facts that determine them (snapshot, memory ids and hashes, open discrepancies as told): the
    keys are read on every request, so any change of a fact is a miss and a fresh build, never a stale pack."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.packs: OrderedDict[Hashable, BuiltPack] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> BuiltPack | None:
        with self.lock:
            built = self.packs.get(key)
            if built is not None:
                self.packs.move_to_end(key)
            return built

    def put(self, key: Hashable, built: BuiltPack) -> None:
        with self.lock:
            self.packs[key] = built
            while len(self.packs) > self.size:
                self.packs.popitem(last=False)


_packs = _PackCache(PACKS_CACHED)


@dataclass(frozen=True)
class ServedPack:
    status: int  # 200; 304 when the client already holds this version; 422 when the budget cannot hold the safety section
    etag: str  # unquoted
    version: str
    body: bytes | str | dict[str, Any] | None  # the pack (JSON bytes), its text, the error (422), or nothing (304)


def etag_matches(if_none_match: str, etag: str) -> bool:
    """If-None-Match with weak comparison (RFC 9110 13.1.2): `*`, or any listed tag equal to ours."""
    tags = parse_etags(if_none_match) if if_none_match else []
    return "*" in tags or any(t.removeprefix("W/").strip('"') == etag for t in tags)


def context_pack_build(*, platform: CoachingPlatform, patient: Patient, today: date | None = None) -> BuiltPack:
    """The platform's pack for the patient: the facts' keys are read every time, the pack is built only for a new set."""
    today = today or timezone.localdate()
    snapshot = snapshot_latest(patient=patient)  # without its resources: the record comes from the per-snapshot cache
    sessions = visible_sessions(patient=patient, platform=platform)
    memories = memory_keys(patient=patient, sessions=sessions)
    discrepancies = discrepancy_facts(patient=patient, sessions=sessions)
    key = (patient.reference, (snapshot.pk, snapshot.content_sha256, today) if snapshot else None, memories, discrepancies)
    built = _packs.get(key)
    if built is None:
        pack = build_pack(patient_ref=patient.reference, record=record_part_for(snapshot=snapshot, today=today) if snapshot else None,
                          memories=memory_facts_for_ids(ids=[m[0] for m in memories]), discrepancies=discrepancies)
        built = BuiltPack(pack=pack, json_bytes=json.dumps(pack, ensure_ascii=False).encode())
        _packs.put(key, built)
    return built


# Not wrapped in a transaction: it reads, then writes one audit row (atomic on its own); BEGIN and COMMIT would add two
# round trips to every request of a path measured against a 50 ms budget.
def context_pack_serve(*, request: HttpRequest, platform: CoachingPlatform, patient: Patient, fmt: str = "json",
                       budget: int | None = None, if_none_match: str = "", today: date | None = None) -> ServedPack:
    built = context_pack_build(platform=platform, patient=patient, today=today)
    version = built.version
    etag = version if fmt == "json" else f"{version}-text-{budget}"  # each rendering is its own representation
    details: dict[str, Any] = {"platform": platform.pk, "version": version, "format": fmt}
    if fmt == "text":
        details["budget"] = budget
    if etag_matches(if_none_match, etag):
        audit_record(request=request, action="api.context", patient_pk=patient.pk, object_type="platform", object_id=platform.pk,
                     details={**details, "status": 304})
        return ServedPack(status=304, etag=etag, version=version, body=None)
    try:
        body: bytes | str = built.text(budget or 0) if fmt == "text" else built.json_bytes
    except BudgetTooSmall as exc:  # answered, not raised: the view turns it into a 422
        audit_record(request=request, action="api.context", outcome="error", patient_pk=patient.pk, object_type="platform",
                     object_id=platform.pk, details={**details, "status": 422, "reason": "budget_too_small", "needed": exc.needed})
        return ServedPack(status=422, etag="", version=version, body={"error": exc.message, "needed": exc.needed})
    audit_record(request=request, action="api.context", patient_pk=patient.pk, object_type="platform", object_id=platform.pk,
                 details={**details, "status": 200})
    return ServedPack(status=200, etag=etag, version=version, body=body)

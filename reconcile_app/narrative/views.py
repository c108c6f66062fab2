"""The clean memory view: a patient's current memories by category, earlier states folded under each chain."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.views.decorators.http import require_GET

from reconcile_app.audit.services import audit_record
from reconcile_app.fhir.selectors import patient_get_for_user

from .models import Memory
from .types import MemoryCategory

CATEGORY_ORDER = [c.value for c in MemoryCategory]


@dataclass
class MemoryChain:
    current: Memory
    earlier: list[Memory] = field(default_factory=list)
    pending: list[Memory] = field(default_factory=list)  # corrections of `current` waiting for review


SHOWN_AS_CURRENT = (Memory.Status.CURRENT, Memory.Status.NEEDS_REVIEW)


def memory_chains_for(*, patient_pk: int) -> dict[str, list[MemoryChain]]:
    """Category -> chains, each chain's newest current state first (or the one waiting for a correction's
    review, with that correction), its outdated and corrected states under it. Revoked memories have
    no words left and rejected corrections were never the patient's: neither is shown."""
    memories = list(
        Memory.objects.filter(patient_id=patient_pk).exclude(status__in=(Memory.Status.REVOKED, Memory.Status.REJECTED))
        .select_related("session").order_by("-mention_time", "-id")
    )
    pending: dict[int, list[Memory]] = defaultdict(list)
    chains: dict[str, list[Memory]] = defaultdict(list)
    singles: list[Memory] = []
    for memory in memories:
        if memory.origin != Memory.Origin.EXTRACTED and memory.status == Memory.Status.NEEDS_REVIEW:
            pending[memory.corrects_id or 0].append(memory)
            continue
        (chains[memory.chain_key] if memory.chain_key else singles).append(memory)
    grouped: dict[str, list[MemoryChain]] = defaultdict(list)
    for states in chains.values():
        current = next((m for m in states if m.status in SHOWN_AS_CURRENT), None)
        if current is None:
            continue  # a chain with no current state has been fully superseded elsewhere
        grouped[current.category].append(MemoryChain(current=current, earlier=[m for m in states if m is not current],
                                                     pending=pending.get(current.pk, [])))
    for memory in singles:
        if memory.status in SHOWN_AS_CURRENT:
            grouped[memory.category].append(MemoryChain(current=memory, pending=pending.get(memory.pk, [])))
    order = {c: i for i, c in enumerate(CATEGORY_ORDER)}
    return dict(sorted(grouped.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


@require_GET
def patient_memories(request: HttpRequest, patient_pk: int) -> HttpResponse:
    patient = patient_get_for_user(request=request, patient_pk=patient_pk)
    groups = memory_chains_for(patient_pk=patient.pk)
    audit_record(request=request, action="narrative.memories_view", patient_pk=patient.pk,
                 details={"chains": sum(len(v) for v in groups.values())})
    try:
        banner = "fhir/_patient_banner.html" if get_template("fhir/_patient_banner.html") else ""
    except TemplateDoesNotExist:
        banner = ""
    return render(request, "narrative/patient_memories.html", {"patient": patient, "groups": groups, "banner_template": banner})

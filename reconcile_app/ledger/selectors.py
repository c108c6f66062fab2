"""Reads of the ledger: a finding's whole provenance chain, gathered into plain facts for the view and
the FHIR export; the fetch helpers that authorize access to a finding or a memory."""
from __future__ import annotations

from django.http import Http404, HttpRequest

from reconcile_app.fhir.selectors import patient_get_for_user
from reconcile_app.narrative.models import Memory
from reconcile_app.reconciliation.models import Finding
from reconcile_app.reconciliation.selectors import finding_justification
from reconcile_app.transcripts.models import Turn
from reconcile_app.triage.models import Retraction, TriageEvent, TriageQuote, WriteBack

from .provenance import EventFact, ProvenanceFacts, ResourceFact, TurnFact, WriteFact


def finding_get_for_user(*, request: HttpRequest, pk: int) -> Finding:
    """The finding, if the user may see its patient (the same answer whether it exists or not for a clinician)."""
    finding = Finding.objects.select_related("memory", "memory__session", "memory__session__upload", "snapshot", "patient",
                                             "patient__registration").defer("snapshot__resources").filter(pk=pk).first()
    if finding is None:
        patient_get_for_user(request=request, patient_pk=0)  # nurses and admins get 404, others a 403 (audited)
        raise Http404("No such finding")
    patient_get_for_user(request=request, patient_pk=finding.patient_id)
    return finding


def memory_get_for_user(*, request: HttpRequest, pk: int) -> Memory:
    memory = Memory.objects.select_related("patient", "session", "corrects").filter(pk=pk).first()
    if memory is None:
        patient_get_for_user(request=request, patient_pk=0)
        raise Http404("No such memory")
    patient_get_for_user(request=request, patient_pk=memory.patient_id)
    return memory


def _events(finding: Finding, memory: Memory, item_id: int | None) -> list[EventFact]:
    events = [
        EventFact(source="memory", source_id=e.memory_id, event_id=e.pk, action=e.action, at=e.at, actor=e.actor_label,
                  by_person=e.actor_id is not None or e.actor_label.startswith("platform"), from_status=e.from_status,
                  to_status=e.to_status, reason=e.reason)
        for e in memory.events.all()
    ]
    events += [
        EventFact(source="finding", source_id=e.finding_id, event_id=e.pk, action=e.action, at=e.at, actor=e.actor_label,
                  by_person=e.actor_id is not None, from_status=e.from_status, to_status=e.to_status, reason=e.reason)
        for e in finding.events.all()
    ]
    if item_id is not None:
        events += [
            EventFact(source="item", source_id=item_id, event_id=e.pk, action=e.action, at=e.at,
                      actor=e.actor.username if e.actor_id else "system", by_person=e.actor_id is not None,
                      from_status=e.from_status, to_status=e.to_status, reason=e.note)
            for e in TriageEvent.objects.filter(item_id=item_id).select_related("actor")
        ]
    return sorted(events, key=lambda e: (e.at, e.source, e.event_id))


def _written(item_id: int | None) -> WriteFact | None:
    wb = WriteBack.objects.filter(item_id=item_id).first() if item_id is not None else None
    if wb is None:
        return None
    retraction = Retraction.objects.filter(writeback=wb).first()
    return WriteFact(ehr_base=wb.base_url, resource_type=wb.resource_type, resource_id=wb.resource_id, status=wb.status,
                     written_at=wb.written_at, retraction_status=retraction.status if retraction else "",
                     retraction_method=retraction.method if retraction else "")


def finding_provenance_facts(*, finding: Finding) -> ProvenanceFacts:
    """finding -> memory -> quoted turns -> upload hash; finding -> cited resources at their versions."""
    memory = finding.memory
    session = memory.session
    upload = session.upload
    texts = {t.external_id: (t.speaker_label or t.speaker, t.text) for t in Turn.objects.filter(session=session, external_id__in=memory.turn_ids)}
    turns = tuple(TurnFact(session_id=session.external_id, turn_id=tid, speaker=texts.get(tid, ("", ""))[0],
                           text="" if memory.is_revoked else texts.get(tid, ("", ""))[1]) for tid in memory.turn_ids)
    displays = {(str(c.get("resourceType")), str(c.get("id"))): str(c.get("display") or "") for c in finding.citations or []}
    resources = tuple(
        ResourceFact(resource_type=r["resourceType"], id=r["id"], version_id=r.get("versionId", ""), last_updated=r.get("lastUpdated", ""),
                     sha256=r.get("sha256", ""), display=displays.get((r["resourceType"], r["id"]), ""))
        for r in finding_justification(finding).get("resources", [])
    )
    quote = TriageQuote.objects.filter(finding=finding).first()
    item_id = quote.item_id if quote else None
    return ProvenanceFacts(
        patient_reference=finding.patient.reference, finding_id=finding.pk, finding_kind=finding.kind, finding_status=finding.status,
        finding_severity=finding.severity, finding_safety_critical=finding.safety_critical, finding_created=finding.created_at,
        finding_engine=f"{finding.engine} {finding.engine_version}", finding_rule=finding.rule,
        memory_id=memory.pk, memory_status=memory.status, memory_origin=memory.origin, memory_sha256=memory.content_sha256,
        memory_created=memory.created_at, memory_mentioned=memory.mention_time, memory_engine=f"{memory.engine} {memory.engine_version}",
        snapshot_id=finding.snapshot_id, snapshot_version=finding.snapshot.version, snapshot_sha256=finding.snapshot.content_sha256,
        snapshot_fetched=finding.snapshot.fetched_at, snapshot_source=finding.snapshot.source,
        upload_id=upload.pk, upload_sha256=upload.sha256, upload_received=upload.created_at, upload_source=upload.source,
        corrects_id=memory.corrects_id, turns=turns, resources=resources, events=tuple(_events(finding, memory, item_id)),
        written=_written(item_id),
        extra={"item_id": item_id, "quote": "" if memory.is_revoked else memory.quote, "content": memory.content,
               "upload_sealed": upload.sealed_at is not None, "upload_filename": upload.filename,
               "session_withdrawn": session.withdrawn_at is not None, "source_revoked_at": finding.source_revoked_at,
               "superseded_by": finding.superseded_by_id, "closed_reason": finding.closed_reason,
               "justified_snapshot": finding.justification.get("snapshot", {}) if finding.justification else {},
               "checked_snapshot": finding.checked_snapshot_id},
    )

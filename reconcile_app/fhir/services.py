"""Write side of the clinical stream: patients and versioned snapshots."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from reconcile_app.audit.services import audit_record
from reconcile_app.core.exceptions import PermanentError, ReconcileError
from reconcile_app.smart import client as smart_client
from reconcile_app.smart.exceptions import EhrProtocolError, EhrUnavailable, ForeignHostLink, TokenRejected
from reconcile_app.smart.models import SmartLaunch
from reconcile_app.smart.services import FhirAccess, fhir_access_for

from .clinical import CLINICAL_TYPES, build_clinical_record, resources_from_bundle
from .models import Patient, RecordPull, RecordSnapshot
from .selectors import record_cache_put
from .signals import record_changed

logger = logging.getLogger(__name__)


def resources_sha256(resources: list[dict]) -> str:
    """Order-independent content hash: the same record pulled twice hashes the same."""
    canonical = sorted(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in resources)
    return hashlib.sha256("\n".join(canonical).encode()).hexdigest()


@transaction.atomic
def patient_upsert_from_resource(*, resource: dict, registration: object | None = None) -> Patient:
    """Create or refresh the local Patient row from a FHIR Patient resource."""
    info = build_clinical_record([resource]).patient
    if not info.id:
        raise ValueError("Patient resource has no id")
    birth: date | None
    try:
        birth = date.fromisoformat(info.birth_date[:10]) if info.birth_date else None
    except ValueError:
        birth = None
    patient, _ = Patient.objects.update_or_create(
        registration=registration,
        fhir_id=info.id,
        defaults={
            "display_name": info.name[:200],
            "birth_date": birth,
            "sex": info.sex[:20],
            "identifiers": [{"system": s, "value": v} for s, v in info.identifiers],
        },
    )
    return patient


def _latest_row(patient: Patient) -> RecordSnapshot | None:
    return RecordSnapshot.objects.filter(patient=patient).defer("resources").order_by("-version").first()


def snapshot_store(
    *, patient: Patient, resources: list[dict], source: str, warnings: list[dict[str, str]] | None = None
) -> RecordSnapshot:
    """Store a snapshot; the same content as the latest version returns that version. Content equal to
    an older version is a new version: a record that changed and changed back is current again, and
    the findings made against the intermediate version are re-evaluated (record_changed)."""
    digest = resources_sha256(resources)
    latest = _latest_row(patient)
    if latest is not None and latest.content_sha256 == digest:
        return latest
    record = build_clinical_record(resources)
    counts = Counter(str(r.get("resourceType", "?")) for r in resources if isinstance(r, dict))
    for _ in range(3):  # two concurrent pulls may race for the next version number
        try:
            with transaction.atomic():
                previous = _latest_row(patient)
                if previous is not None and previous.content_sha256 == digest:
                    return previous  # the other pull stored the same content first
                snapshot = RecordSnapshot.objects.create(
                    patient=patient,
                    version=(previous.version if previous else 0) + 1,
                    source=source,
                    fetched_at=timezone.now(),
                    content_sha256=digest,
                    resources=resources,
                    resource_counts=dict(counts),
                    warnings=[*(warnings or []), *record.warnings],
                )
                # The record just built from these resources is the one a read of the stored JSON would build.
                record_cache_put(snapshot_id=snapshot.pk, content_sha256=digest, record=record)
                record_changed.send(sender=RecordSnapshot, patient_id=patient.pk, snapshot_id=snapshot.pk,
                                    previous_id=previous.pk if previous else None)
                return snapshot
        except IntegrityError:
            continue
    raise IntegrityError("could not allocate a snapshot version")


@transaction.atomic
def snapshot_import_bundle(*, bundle: dict, registration: object | None = None) -> RecordSnapshot:
    """Load a FHIR Bundle (collection) as a patient's record: used by replay and demo data."""
    resources = resources_from_bundle(bundle)
    patients = [r for r in resources if r.get("resourceType") == "Patient"]
    if len(patients) != 1:
        raise ValueError(f"bundle must hold exactly one Patient, found {len(patients)}")
    patient = patient_upsert_from_resource(resource=patients[0], registration=registration)
    return snapshot_store(patient=patient, resources=resources, source=RecordSnapshot.Source.BUNDLE)


# --- pulling the record from the EHR --------------------------------------------------------

# What a pull asks for: (resource type, extra search parameters). Observations are asked for
# without a category filter: vitals and labs come with their full history, and a lab result whose
# vendor left out `category` (off-spec, but seen in real feeds) is not silently missed.
PULL_SEARCHES: tuple[tuple[str, dict[str, str]], ...] = (
    ("Condition", {}),
    ("MedicationRequest", {}),
    ("MedicationStatement", {}),
    ("AllergyIntolerance", {}),
    ("Observation", {}),
    ("Procedure", {}),
    ("Immunization", {}),
    ("CarePlan", {}),
    ("Encounter", {}),
)
EXPECTED_TYPES = {"Patient", *CLINICAL_TYPES}
# Resources a search may legitimately include beside the asked type (contained medications etc.).
TOLERATED_EXTRA_TYPES = {"Medication", "Practitioner", "Organization", "Location", "Provenance"}


def page_size() -> int:
    """What a search asks for; the EHR may give fewer per page (its own maximum) and the pull follows `next`."""
    return int(getattr(settings, "FHIR_PAGE_SIZE", 1000))


def pull_concurrency() -> int:
    """Searches in flight at once against one EHR (resource types are fetched side by side)."""
    return max(1, int(getattr(settings, "FHIR_PULL_CONCURRENCY", 4)))


def page_retries() -> int:
    """Extra attempts at one page the EHR answered 5xx/429 or not at all, before the pull fails (retryable)."""
    return max(0, int(getattr(settings, "FHIR_PAGE_RETRIES", 2)))


@dataclass
class RecordFetch:
    resources: list[dict] = field(default_factory=list)
    pages: int = 0
    warnings: list[dict[str, str]] = field(default_factory=list)


def _warn(fetch: RecordFetch, resource: Any, problem: str) -> None:
    rtype = str(resource.get("resourceType") or "?")[:40] if isinstance(resource, dict) else "?"
    rid = str(resource.get("id") or "?")[:64] if isinstance(resource, dict) else "?"
    fetch.warnings.append({"resourceType": rtype, "id": rid, "problem": problem})


def _next_link(bundle: dict) -> str | None:
    for link in bundle.get("link") or []:
        if isinstance(link, dict) and link.get("relation") == "next" and isinstance(link.get("url"), str):
            return link["url"]
    return None


def _get_page(get: Callable[[str], dict], url: str) -> dict:
    """One page, tried again after a short pause when the EHR answers 5xx/429 or times out: a blip in a long
    pull costs a second, not the pull. Still down after the retries: EhrUnavailable (the pull is retryable)."""
    for attempt in range(page_retries() + 1):
        try:
            return get(url)
        except EhrUnavailable:
            if attempt == page_retries():
                raise
            time.sleep(0.25 * 2**attempt)
    raise AssertionError("unreachable")


def _search_all(*, access: FhirAccess, url: str, fetch: RecordFetch, get: Callable[[str], dict] | None = None) -> list[dict]:
    """Every page of a search, following `next` on the EHR's own host only (the token goes with each page)."""
    found: list[dict] = []
    seen: set[str] = set()
    while url:
        if not smart_client.same_origin(url, access.base):
            raise ForeignHostLink("The EHR sent a paging link to another host; it was not followed.",
                                  extra={"host": urlsplit(url).netloc[:100]})
        if url in seen or fetch.pages >= smart_client.MAX_PAGES:
            raise EhrProtocolError("The EHR's paging links loop.")
        seen.add(url)
        bundle = _get_page(get or access.get, url)
        fetch.pages += 1
        if bundle.get("resourceType") != "Bundle":
            raise EhrProtocolError("The EHR answered a search with something other than a Bundle.")
        for entry in bundle.get("entry") or []:
            resource = entry.get("resource") if isinstance(entry, dict) else None
            if not isinstance(resource, dict) or not resource.get("resourceType"):
                _warn(fetch, resource, "entry without a resource")
                continue
            mode = (entry.get("search") or {}).get("mode") if isinstance(entry.get("search"), dict) else None
            if mode == "outcome" or resource["resourceType"] == "OperationOutcome":
                _warn(fetch, resource, "server outcome in search results")
                continue
            found.append(resource)
        url = _next_link(bundle) or ""
    return found


def record_fetch(*, access: FhirAccess, patient_fhir_id: str) -> RecordFetch:
    """The patient's record as raw resources: off-spec or unexpected ones are kept, with a warning."""
    fetch = RecordFetch()
    base = access.base.rstrip("/")
    patient = _get_page(access.get, f"{base}/Patient/{quote(patient_fhir_id, safe='')}")
    fetch.pages += 1
    if patient.get("resourceType") != "Patient" or str(patient.get("id")) != patient_fhir_id:
        raise EhrProtocolError("The EHR returned a different resource for the patient.")
    fetch.resources.append(patient)
    seen: set[tuple[str, str]] = {("Patient", patient_fhir_id)}
    urls = [f"{base}/{rtype}?{urlencode({'patient': patient_fhir_id, **params, '_count': page_size()})}" for rtype, params in PULL_SEARCHES]
    for found, part in _searches_concurrently(access=access, urls=urls):
        fetch.pages += part.pages
        fetch.warnings += part.warnings
        for resource in found:
            key = (str(resource["resourceType"]), str(resource.get("id") or ""))
            if key[1] and key in seen:
                continue  # the same resource on two pages, or in two category searches
            seen.add(key)
            if not key[1]:
                _warn(fetch, resource, "resource without an id")
            if key[0] not in EXPECTED_TYPES and key[0] not in TOLERATED_EXTRA_TYPES:
                _warn(fetch, resource, "unexpected resource type kept raw")
            fetch.resources.append(resource)
    return fetch


def _searches_concurrently(*, access: FhirAccess, urls: list[str]) -> list[tuple[list[dict], RecordFetch]]:
    """The searches side by side (at most pull_concurrency() at once), results in the order asked.

    Worker threads only talk HTTP, each on one keep-alive session: they never touch the database, so a
    401 is not renewed there. A search refused with 401 is run again here, on the calling thread, through
    FhirAccess.get, which renews the token once (under its row lock) and retries."""
    token = access.token

    def search(url: str) -> tuple[list[dict], RecordFetch]:
        session = smart_client.http_session(bearer=token)
        part = RecordFetch()
        try:
            return _search_all(access=access, url=url, fetch=part, get=lambda u: smart_client.fhir_get(session=session, url=u)), part
        finally:
            session.close()

    results: list[tuple[list[dict], RecordFetch] | None] = [None] * len(urls)
    refused: list[int] = []
    with ThreadPoolExecutor(max_workers=min(pull_concurrency(), len(urls)), thread_name_prefix="record-pull") as pool:
        futures = [pool.submit(search, url) for url in urls]
        for index, future in enumerate(futures):
            try:
                results[index] = future.result()
            except TokenRejected:
                refused.append(index)
    for index in refused:
        part = RecordFetch()
        results[index] = (_search_all(access=access, url=urls[index], fetch=part), part)
    return [r for r in results if r is not None]


def _pull_failed(pull: RecordPull, exc: Exception, *, retryable: bool, message: str) -> RecordPull:
    pull.status = RecordPull.Status.FAILED
    pull.finished_at = timezone.now()
    pull.error = message[:300]
    pull.retryable = retryable
    pull.save(update_fields=["status", "finished_at", "error", "retryable"])
    audit_record(action="record.pull", outcome="error", patient_pk=pull.patient_id, object_type="RecordPull",
                 object_id=pull.pk, details={"error": exc.__class__.__name__, "retryable": retryable})
    logger.warning("record pull %s failed error=%s retryable=%s", pull.pk, exc.__class__.__name__, retryable)
    return pull


def _user_launch(launch: SmartLaunch | None) -> SmartLaunch | None:
    return launch if launch is not None and launch.kind != SmartLaunch.Kind.BACKEND else None


def record_pull_request(*, patient: Patient, launch: SmartLaunch | None = None) -> RecordPull:
    """Queue a pull. Its row exists from now on, so every page of the patient knows one is on its way
    (and polls until it finishes) even before a worker picks it up."""
    from .tasks import record_pull_task

    pull = RecordPull.objects.create(patient=patient, launch=_user_launch(launch))
    record_pull_task.delay_on_commit(patient.pk, launch.pk if launch is not None else None, pull.pk)
    return pull


def record_pull(*, patient: Patient, launch: SmartLaunch | None = None, pull_id: int | None = None) -> RecordPull:
    """Pull the record (user launch if given, else Backend Services) into a new snapshot version.

    `pull_id` is the row record_pull_request queued; a retry after a failed attempt gets a new row.
    A failure is recorded on the RecordPull and leaves the last good snapshot as it is.
    """
    pull = (
        RecordPull.objects.filter(pk=pull_id, patient=patient, status=RecordPull.Status.RUNNING, finished_at__isnull=True).first()
        if pull_id else None
    ) or RecordPull.objects.create(patient=patient, launch=_user_launch(launch))
    try:
        if patient.registration is None:
            raise PermanentError("This record was imported from a file, not pulled from an EHR.")
        access = fhir_access_for(registration=patient.registration, launch=launch)
        fetch = record_fetch(access=access, patient_fhir_id=patient.fhir_id)
        source = (RecordSnapshot.Source.BACKEND if access.launch is None or access.launch.kind == SmartLaunch.Kind.BACKEND
                  else RecordSnapshot.Source.EHR)
        with transaction.atomic():
            patient_upsert_from_resource(resource=fetch.resources[0], registration=patient.registration)
            snapshot = snapshot_store(patient=patient, resources=fetch.resources, source=source, warnings=fetch.warnings)
            pull.status = RecordPull.Status.OK
            pull.finished_at = timezone.now()
            pull.pages = fetch.pages
            pull.resources = len(fetch.resources)
            pull.snapshot = snapshot
            pull.launch = access.launch if access.launch is not None and access.launch.kind != SmartLaunch.Kind.BACKEND else pull.launch
            pull.save()
    except ReconcileError as exc:
        return _pull_failed(pull, exc, retryable=exc.retryable, message=exc.message)
    except Exception as exc:
        _pull_failed(pull, exc, retryable=False, message="Internal error while pulling the record.")
        raise
    audit_record(action="record.pull", patient_pk=patient.pk, object_type="RecordPull", object_id=pull.pk,
                 details={"pages": pull.pages, "resources": pull.resources, "snapshot_version": pull.snapshot.version,
                          "source": source, "warnings": len(fetch.warnings)})
    return pull


def refresh_seconds() -> int:
    return int(getattr(settings, "RECORD_REFRESH_SECONDS", 6 * 3600))


def records_refresh_due(*, now: Any = None, limit: int = 200) -> int:
    """Beat: queue a Backend Services pull for every EHR patient whose record was last pulled more than
    RECORD_REFRESH_SECONDS ago (records loaded from a file have no EHR to ask). A pull still on its way
    is not doubled. Only changed resources then lead to re-evaluation (record_changed, then the ledger)."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=refresh_seconds())
    running_since = now - timedelta(seconds=int(getattr(settings, "CELERY_TASK_TIME_LIMIT", 900)))
    due = (
        Patient.objects.filter(registration__isnull=False, registration__active=True)
        .exclude(registration__backend_client_id="")
        .annotate(last_pull=Max("pulls__started_at"))
        .filter(Q(last_pull__isnull=True) | Q(last_pull__lt=cutoff))
        .exclude(pulls__status=RecordPull.Status.RUNNING, pulls__started_at__gte=running_since)
        .order_by("last_pull", "pk")[:limit]
    )
    queued = 0
    for patient in due:
        record_pull_request(patient=patient)
        queued += 1
    if queued:
        logger.info("record refresh queued for %s patient(s)", queued)
    return queued


def launch_patient_open(*, launch: SmartLaunch) -> Patient:
    """After a launch: read the launch's Patient, keep it locally and queue a pull of the whole record."""
    access = fhir_access_for(registration=launch.registration, launch=launch)
    resource = access.get(f"{access.base.rstrip('/')}/Patient/{quote(launch.patient_fhir_id, safe='')}")
    if resource.get("resourceType") != "Patient" or str(resource.get("id")) != launch.patient_fhir_id:
        raise EhrProtocolError("The EHR returned a different resource for the patient.")
    patient = patient_upsert_from_resource(resource=resource, registration=launch.registration)
    record_pull_request(patient=patient, launch=launch)
    return patient

"""The clinical stream as plain data: a status-aware, normalized view of a FHIR record (no ORM)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Iterable

SYSTEM_LABELS = {
    "http://snomed.info/sct": "SNOMED",
    "http://www.nlm.nih.gov/research/umls/rxnorm": "RXNORM",
    "http://loinc.org": "LOINC",
    "http://hl7.org/fhir/sid/cvx": "CVX",
    "http://hl7.org/fhir/sid/icd-10-cm": "ICD10CM",
    "http://unitsofmeasure.org": "UCUM",
}

CLINICAL_TYPES = (
    "Condition",
    "MedicationRequest",
    "MedicationStatement",
    "AllergyIntolerance",
    "Observation",
    "Procedure",
    "Immunization",
    "CarePlan",
    "Encounter",
)


class State:
    ACTIVE = "active"  # current: active meds/conditions/allergies, completed procedures/vaccines, final obs
    HISTORICAL = "historical"  # was true: stopped/completed meds, resolved conditions
    INACTIVE = "inactive"  # refuted or inactive allergies, cancelled/not-done items
    ERROR = "error"  # entered-in-error: excluded everywhere


@dataclass(frozen=True)
class Coding:
    system: str
    code: str
    display: str = ""

    @property
    def tag(self) -> str:
        return f"{SYSTEM_LABELS.get(self.system, self.system)}:{self.code}"


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str = ""
    code: Coding | None = None  # for components (e.g. systolic / diastolic)


@dataclass
class ClinicalEntry:
    resource_type: str
    id: str
    status: str  # the raw status (or clinicalStatus) as the EHR gave it
    state: str  # one of State
    display: str
    codings: tuple[Coding, ...] = ()
    category: tuple[str, ...] = ()
    date: str = ""  # onset / authored / effective / performed / occurrence, ISO text
    end_date: str = ""  # abatement / period end
    detail: str = ""  # dosage text, reaction, note: what a reviewer needs beside the name
    quantities: tuple[Quantity, ...] = ()
    status_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def primary_coding(self) -> Coding | None:
        return self.codings[0] if self.codings else None

    @property
    def is_current(self) -> bool:
        return self.state == State.ACTIVE

    def tag(self) -> str:
        """`[ResourceType] display [SYSTEM:CODE]`, the inline tag of the curated summary."""
        coding = self.primary_coding
        code = f" [{coding.tag}]" if coding else ""
        return f"[{self.resource_type}] {self.display}{code}"


@dataclass
class PatientInfo:
    id: str = ""
    name: str = ""
    birth_date: str = ""
    sex: str = ""
    identifiers: tuple[tuple[str, str], ...] = ()

    def age_on(self, day: date) -> int | None:
        try:
            born = date.fromisoformat(self.birth_date[:10])
        except ValueError:
            return None
        return day.year - born.year - ((day.month, day.day) < (born.month, born.day))


@dataclass
class ClinicalRecord:
    patient: PatientInfo
    entries: list[ClinicalEntry]
    warnings: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_key = {(e.resource_type, e.id): e for e in self.entries}

    def get(self, resource_type: str, resource_id: str) -> ClinicalEntry | None:
        return self._by_key.get((resource_type, resource_id))

    def visible(self) -> list[ClinicalEntry]:
        """Everything except entered-in-error."""
        return [e for e in self.entries if e.state != State.ERROR]

    def of_type(self, *types: str, states: Iterable[str] | None = None) -> list[ClinicalEntry]:
        wanted = set(states) if states is not None else {State.ACTIVE, State.HISTORICAL, State.INACTIVE}
        return [e for e in self.entries if e.resource_type in types and e.state in wanted]

    @property
    def active_medications(self) -> list[ClinicalEntry]:
        return self.of_type("MedicationRequest", "MedicationStatement", states=[State.ACTIVE])

    @property
    def active_conditions(self) -> list[ClinicalEntry]:
        return self.of_type("Condition", states=[State.ACTIVE])

    @property
    def active_allergies(self) -> list[ClinicalEntry]:
        return self.of_type("AllergyIntolerance", states=[State.ACTIVE])

    def observation_history(self) -> dict[str, list[ClinicalEntry]]:
        """LOINC (or first) code -> observations, newest first."""
        history: dict[str, list[ClinicalEntry]] = defaultdict(list)
        for entry in self.of_type("Observation", states=[State.ACTIVE]):
            key = entry.primary_coding.code if entry.primary_coding else entry.display
            history[key].append(entry)
        for values in history.values():
            values.sort(key=lambda e: e.date, reverse=True)
        return dict(history)


# --- building the record from raw resources -------------------------------------------------


def _codings(concept: Any) -> tuple[Coding, ...]:
    if not isinstance(concept, dict):
        return ()
    out = []
    for c in concept.get("coding") or []:
        if isinstance(c, dict) and c.get("code"):
            out.append(Coding(str(c.get("system") or ""), str(c["code"]), str(c.get("display") or "")))
    return tuple(out)


def _concept_text(concept: Any) -> str:
    if not isinstance(concept, dict):
        return ""
    if concept.get("text"):
        return str(concept["text"])
    for c in concept.get("coding") or []:
        if isinstance(c, dict) and c.get("display"):
            return str(c["display"])
    return ""


def _status_code(value: Any) -> str:
    if isinstance(value, str):
        return value
    codings = _codings(value)
    return codings[0].code if codings else ""


def _first(resource: dict, *keys: str) -> str:
    for key in keys:
        value = resource.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict):
            for sub in ("start", "end"):
                if isinstance(value.get(sub), str):
                    return value[sub]
    return ""


def _verification_refuted(resource: dict) -> str:
    code = _status_code(resource.get("verificationStatus"))
    return code


def _state_for(resource_type: str, status: str, verification: str) -> str:
    if status == "entered-in-error" or verification == "entered-in-error":
        return State.ERROR
    if verification == "refuted":
        return State.INACTIVE
    if resource_type in ("MedicationRequest", "MedicationStatement"):
        if status in ("active", "on-hold", "intended", "unknown", "draft", ""):
            return State.ACTIVE
        if status in ("stopped", "completed", "not-taken", "cancelled", "ended"):
            return State.HISTORICAL
        return State.HISTORICAL
    if resource_type == "Condition":
        if status in ("active", "recurrence", "relapse", ""):
            return State.ACTIVE
        return State.HISTORICAL  # inactive, remission, resolved
    if resource_type == "AllergyIntolerance":
        return State.ACTIVE if status in ("active", "") else State.INACTIVE
    if resource_type in ("Procedure", "Immunization"):
        if status in ("not-done", "cancelled"):
            return State.INACTIVE
        return State.ACTIVE  # a done procedure or given vaccine is a current fact
    if resource_type == "Observation":
        if status in ("cancelled",):
            return State.INACTIVE
        return State.ACTIVE
    if resource_type == "CarePlan":
        if status in ("active", "on-hold", "draft", ""):
            return State.ACTIVE
        return State.HISTORICAL
    return State.ACTIVE


def _quantities(resource: dict) -> tuple[Quantity, ...]:
    out: list[Quantity] = []
    vq = resource.get("valueQuantity")
    if isinstance(vq, dict) and isinstance(vq.get("value"), (int, float)):
        out.append(Quantity(float(vq["value"]), str(vq.get("unit") or vq.get("code") or "")))
    for comp in resource.get("component") or []:
        if not isinstance(comp, dict):
            continue
        cq = comp.get("valueQuantity")
        if isinstance(cq, dict) and isinstance(cq.get("value"), (int, float)):
            codes = _codings(comp.get("code"))
            out.append(Quantity(float(cq["value"]), str(cq.get("unit") or cq.get("code") or ""), codes[0] if codes else None))
    return tuple(out)


def _detail(resource_type: str, resource: dict) -> str:
    if resource_type in ("MedicationRequest", "MedicationStatement"):
        for key in ("dosageInstruction", "dosage"):
            for d in resource.get(key) or []:
                if isinstance(d, dict) and d.get("text"):
                    return str(d["text"])
    if resource_type == "AllergyIntolerance":
        parts = []
        for reaction in resource.get("reaction") or []:
            if not isinstance(reaction, dict):
                continue
            for m in reaction.get("manifestation") or []:
                text = _concept_text(m)
                if text:
                    parts.append(text)
        crit = resource.get("criticality")
        return ", ".join(parts) + (f" (criticality {crit})" if crit else "")
    if resource_type == "Observation":
        qs = _quantities(resource)
        if qs:
            return " / ".join(f"{q.value:g} {q.unit}".strip() for q in qs)
        if resource.get("valueString"):
            return str(resource["valueString"])[:200]
        return _concept_text(resource.get("valueCodeableConcept"))
    if resource_type == "CarePlan":
        acts = []
        for a in resource.get("activity") or []:
            det = a.get("detail") if isinstance(a, dict) else None
            if isinstance(det, dict):
                acts.append(_concept_text(det.get("code")) or str(det.get("description") or ""))
        desc = str(resource.get("description") or "")
        return "; ".join([desc] + [a for a in acts if a]) if desc or acts else ""
    return ""


def _medication_concept(resource: dict, medications: dict[str, dict]) -> Any:
    """medicationCodeableConcept, or the code of the Medication that medicationReference points at
    (contained `#id` or `Medication/id` in the same record): EHRs and Synthea use both."""
    concept = resource.get("medicationCodeableConcept")
    if isinstance(concept, dict):
        return concept
    ref = resource.get("medicationReference")
    if not isinstance(ref, dict):
        return None
    target = str(ref.get("reference") or "")
    medication: Any = None
    if target.startswith("#"):
        medication = next((c for c in resource.get("contained") or [] if isinstance(c, dict) and c.get("id") == target[1:]), None)
    elif target.startswith("Medication/"):
        medication = medications.get(target.split("/", 1)[1])
    code = medication.get("code") if isinstance(medication, dict) else None
    if isinstance(code, dict):
        return code
    return {"text": ref["display"]} if ref.get("display") else None


def _entry(resource: dict, medications: dict[str, dict] | None = None) -> ClinicalEntry | None:
    rtype = resource.get("resourceType")
    rid = resource.get("id")
    if rtype not in CLINICAL_TYPES or not isinstance(rid, str):
        return None
    if rtype in ("Condition", "AllergyIntolerance"):
        status = _status_code(resource.get("clinicalStatus"))
    else:
        status = str(resource.get("status") or "")
    verification = _verification_refuted(resource)
    concept_key = {
        "MedicationRequest": "medicationCodeableConcept",
        "MedicationStatement": "medicationCodeableConcept",
        "Immunization": "vaccineCode",
        "Encounter": "type",
    }.get(rtype, "code")
    concept = resource.get(concept_key)
    if rtype in ("MedicationRequest", "MedicationStatement"):
        concept = _medication_concept(resource, medications or {})
    if rtype == "Encounter" and isinstance(concept, list):
        concept = concept[0] if concept else None
    codings = _codings(concept)
    if rtype == "CarePlan":
        for cat in resource.get("category") or []:
            codings += tuple(c for c in _codings(cat) if c.system == "http://snomed.info/sct")
    display = _concept_text(concept) or str(resource.get("title") or "") or (codings[0].display if codings else rtype)
    categories = tuple(c.code for cat in (resource.get("category") or []) if isinstance(cat, dict) for c in _codings(cat))
    return ClinicalEntry(
        resource_type=rtype,
        id=rid,
        status=status or verification,
        state=_state_for(rtype, status, verification),
        display=display,
        codings=codings,
        category=categories,
        date=_first(resource, "onsetDateTime", "authoredOn", "effectiveDateTime", "effectivePeriod", "performedDateTime",
                    "performedPeriod", "occurrenceDateTime", "recordedDate", "period", "dateAsserted"),
        end_date=_first(resource, "abatementDateTime"),
        detail=_detail(rtype, resource),
        quantities=_quantities(resource) if rtype == "Observation" else (),
        status_reason=_concept_text(resource.get("statusReason")) if isinstance(resource.get("statusReason"), dict) else "",
        raw=resource,
    )


def _patient_info(resource: dict) -> PatientInfo:
    name = ""
    names = resource.get("name") or []
    if names and isinstance(names[0], dict):
        n = names[0]
        name = n.get("text") or " ".join([*(n.get("given") or []), n.get("family") or ""]).strip()
    idents = tuple(
        (str(i.get("system") or ""), str(i.get("value") or ""))
        for i in resource.get("identifier") or []
        if isinstance(i, dict) and i.get("value")
    )
    return PatientInfo(
        id=str(resource.get("id") or ""),
        name=name,
        birth_date=str(resource.get("birthDate") or ""),
        sex=str(resource.get("gender") or ""),
        identifiers=idents,
    )


def build_clinical_record(resources: Iterable[dict]) -> ClinicalRecord:
    """Normalize raw resources. Off-spec pieces are skipped with a warning, never fatal."""
    patient = PatientInfo()
    entries: list[ClinicalEntry] = []
    warnings: list[dict[str, str]] = []
    resources = list(resources)
    medications = {
        str(r["id"]): r for r in resources if isinstance(r, dict) and r.get("resourceType") == "Medication" and r.get("id")
    }
    for resource in resources:
        if not isinstance(resource, dict):
            warnings.append({"resourceType": "?", "id": "?", "problem": "not a JSON object"})
            continue
        rtype = str(resource.get("resourceType") or "?")
        try:
            if rtype == "Patient":
                patient = _patient_info(resource)
                continue
            entry = _entry(resource, medications)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            warnings.append({"resourceType": rtype, "id": str(resource.get("id") or "?"), "problem": exc.__class__.__name__})
            continue
        if entry is not None:
            entries.append(entry)
    return ClinicalRecord(patient=patient, entries=entries, warnings=warnings)


def resources_from_bundle(bundle: dict) -> list[dict]:
    return [e["resource"] for e in bundle.get("entry") or [] if isinstance(e, dict) and isinstance(e.get("resource"), dict)]


# --- what people and engines see ------------------------------------------------------------


@dataclass(frozen=True)
class SafetyItem:
    """One line of the safety context: an entry, standing for every record entry with the same code."""

    entry: ClinicalEntry
    count: int = 1  # record entries merged into this line (same code)
    verification: str = ""  # "" when confirmed or not stated; else e.g. unconfirmed, provisional

    @property
    def display(self) -> str:
        return self.entry.display

    @property
    def detail(self) -> str:
        return self.entry.detail

    @property
    def ref(self) -> str:
        return f"{self.entry.resource_type}/{self.entry.id}"


@dataclass
class SafetyContext:
    """Always on screen: active allergies, medications and conditions, with age and sex."""

    age: int | None
    sex: str
    allergies: list[SafetyItem]
    medications: list[SafetyItem]
    conditions: list[SafetyItem]
    no_known_allergies: bool


NO_KNOWN_ALLERGY_CODES = {"716186003", "409137002", "428607008"}
CONFIRMED = ("", "confirmed")


def _verification(entry: ClinicalEntry) -> str:
    return _status_code(entry.raw.get("verificationStatus"))


def _same_concept_groups(entries: list[ClinicalEntry]) -> list[list[ClinicalEntry]]:
    """Entries grouped when they share any (system, code), or, uncoded, the same name. Repeated diagnoses
    (one per encounter) and a request plus a statement for the same drug are one fact on screen."""
    groups: list[list[ClinicalEntry]] = []
    index: dict[tuple[str, str], int] = {}
    for entry in entries:
        keys = [(c.system, c.code) for c in entry.codings] or [("text", " ".join(entry.display.lower().split()))]
        hit = next((index[k] for k in keys if k in index), None)
        if hit is None:
            hit = len(groups)
            groups.append([])
        groups[hit].append(entry)
        for key in keys:
            index.setdefault(key, hit)
    return groups


def _safety_items(entries: list[ClinicalEntry]) -> list[SafetyItem]:
    items = []
    for group in _same_concept_groups(entries):
        # The confirmed, most recent entry speaks for the group (its dose or reaction is the current one).
        best = max(group, key=lambda e: (_verification(e) in CONFIRMED, e.date))
        verification = _verification(best)
        items.append(SafetyItem(entry=best, count=len(group), verification="" if verification in CONFIRMED else verification))
    return sorted(items, key=lambda i: i.display.lower())


def safety_context(record: ClinicalRecord, *, today: date | None = None) -> SafetyContext:
    """Every active allergy, medication and condition, whatever its category (problem-list item, encounter
    diagnosis, health concern), one line per code. Refuted and entered-in-error entries are not active;
    an unconfirmed or provisional one is kept, labelled, because a possible allergy still matters."""
    today = today or date.today()
    allergies = record.active_allergies
    nka = bool(allergies) and all(
        any(c.code in NO_KNOWN_ALLERGY_CODES for c in a.codings) for a in allergies
    )
    return SafetyContext(
        age=record.patient.age_on(today),
        sex=record.patient.sex,
        allergies=[] if nka else _safety_items(
            [a for a in allergies if not any(c.code in NO_KNOWN_ALLERGY_CODES for c in a.codings)]
        ),
        medications=_safety_items(record.active_medications),
        conditions=_safety_items(record.active_conditions),
        no_known_allergies=nka,
    )


def curated_summary(record: ClinicalRecord, *, today: date | None = None, max_observations_per_code: int = 2) -> str:
    """The dual-stream paper's curated summary: sections of inline-tagged resources for an LLM."""
    today = today or date.today()
    info = record.patient
    lines = [f"Patient: {info.sex or 'unknown sex'}, age {info.age_on(today) or 'unknown'}"]

    def section(title: str, items: list[ClinicalEntry], with_detail: bool = True) -> None:
        if not items:
            return
        lines.append(f"\n## {title}")
        for e in items:
            extra = f" — {e.detail}" if with_detail and e.detail else ""
            when = f" ({e.date[:10]})" if e.date else ""
            lines.append(f"- {e.tag()}{when} id={e.id} status={e.status}{extra}")

    section("Allergies (active)", record.active_allergies)
    section("Allergies (inactive)", record.of_type("AllergyIntolerance", states=[State.INACTIVE]))
    section("Medications (active)", record.active_medications)
    section("Medications (stopped or completed)", record.of_type("MedicationRequest", "MedicationStatement", states=[State.HISTORICAL]))
    section("Conditions (active)", record.active_conditions, with_detail=False)
    section("Conditions (resolved or inactive)", record.of_type("Condition", states=[State.HISTORICAL]), with_detail=False)
    section("Care plans", record.of_type("CarePlan", states=[State.ACTIVE]))
    section("Procedures", record.of_type("Procedure", states=[State.ACTIVE]), with_detail=False)
    section("Immunizations", record.of_type("Immunization", states=[State.ACTIVE]), with_detail=False)
    recent: list[ClinicalEntry] = []
    for values in record.observation_history().values():
        recent.extend(values[:max_observations_per_code])
    section("Observations (latest per code)", sorted(recent, key=lambda e: e.date, reverse=True))
    return "\n".join(lines)

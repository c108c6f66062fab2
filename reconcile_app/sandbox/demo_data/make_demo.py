"""Write the sandbox's demo patients: bundle.json, transcript.json and labels.json per patient (deterministic).

Run: python reconcile_app/sandbox/demo_data/make_demo.py   (outputs are committed next to this script)

Written for the project by hand (no generator, nothing copied from the evaluation set). Each record is built
from a small clinical story plus a seeded history of vitals and labs; the transcripts are casual coaching
chats with a handful of embedded clinical facts, which `labels.json` lists in the dataset format.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SNOMED = "http://snomed.info/sct"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
LOINC = "http://loinc.org"
CVX = "http://hl7.org/fhir/sid/cvx"
UCUM = "http://unitsofmeasure.org"
SYSTEMS = {"sct": SNOMED, "rxnorm": RXNORM, "loinc": LOINC, "cvx": CVX}


def concept(system: str, code: str, display: str) -> dict[str, Any]:
    return {"coding": [{"system": SYSTEMS[system], "code": code, "display": display}], "text": display}


def status_concept(kind: str, code: str) -> dict[str, Any]:
    systems = {
        "condition-clinical": "http://terminology.hl7.org/CodeSystem/condition-clinical",
        "condition-ver": "http://terminology.hl7.org/CodeSystem/condition-ver-status",
        "allergy-clinical": "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical",
        "allergy-ver": "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification",
    }
    return {"coding": [{"system": systems[kind], "code": code}]}


@dataclass
class Record:
    """Accumulates one patient's resources with stable ids."""

    patient_id: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    id_map: dict[str, str] = field(default_factory=dict)  # "old-id@Type" -> global id, set by make_ids_global

    @property
    def ref(self) -> dict[str, str]:
        return {"reference": f"Patient/{self.patient_id}"}

    def add(self, resource: dict[str, Any]) -> dict[str, Any]:
        self.resources.append(resource)
        return resource

    def condition(self, rid: str, code: str, display: str, status: str, onset: str, abated: str = "",
                  category: str = "problem-list-item", note: str = "") -> None:
        resource: dict[str, Any] = {
            "resourceType": "Condition", "id": rid,
            "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-category", "code": category}]}],
            "code": concept("sct", code, display), "subject": self.ref, "onsetDateTime": onset, "recordedDate": onset,
        }
        if status == "entered-in-error":
            resource["verificationStatus"] = status_concept("condition-ver", "entered-in-error")
        else:
            resource["clinicalStatus"] = status_concept("condition-clinical", status)
            resource["verificationStatus"] = status_concept("condition-ver", "confirmed")
        if abated:
            resource["abatementDateTime"] = abated
        if note:
            resource["note"] = [{"text": note}]
        self.add(resource)

    def medication(self, rid: str, code: str, display: str, status: str, authored: str, dosage: str,
                   requester: str, ended: str = "", reason: str = "", note: str = "", as_needed: bool = False) -> None:
        resource: dict[str, Any] = {
            "resourceType": "MedicationRequest", "id": rid, "status": status, "intent": "order",
            "medicationCodeableConcept": concept("rxnorm", code, display), "subject": self.ref,
            "authoredOn": authored, "requester": {"reference": f"Practitioner/{requester}"},
            "dosageInstruction": [{"text": dosage, **({"asNeededBoolean": True} if as_needed else {})}],
        }
        if ended:
            resource["dispenseRequest"] = {"validityPeriod": {"start": authored, "end": ended}}
        if reason:
            resource["reasonCode"] = [{"text": reason}]
        if note:
            resource["note"] = [{"text": note}]
        self.add(resource)

    def allergy(self, rid: str, code: str, display: str, status: str, criticality: str, reaction: str,
                recorded: str, category: str = "medication", note: str = "") -> None:
        resource: dict[str, Any] = {
            "resourceType": "AllergyIntolerance", "id": rid,
            "clinicalStatus": status_concept("allergy-clinical", status),
            "verificationStatus": status_concept("allergy-ver", "confirmed"),
            "type": "allergy", "category": [category], "criticality": criticality,
            "code": concept("sct", code, display), "patient": self.ref, "recordedDate": recorded,
            "reaction": [{"manifestation": [{"text": reaction}]}],
        }
        if note:
            resource["note"] = [{"text": note}]
        self.add(resource)

    def immunization(self, rid: str, code: str, display: str, when: str) -> None:
        self.add({"resourceType": "Immunization", "id": rid, "status": "completed", "vaccineCode": concept("cvx", code, display),
                  "patient": self.ref, "occurrenceDateTime": when, "primarySource": True})

    def procedure(self, rid: str, code: str, display: str, when: str, status: str = "completed", encounter: str = "") -> None:
        resource: dict[str, Any] = {"resourceType": "Procedure", "id": rid, "status": status, "code": concept("sct", code, display),
                                    "subject": self.ref, "performedDateTime": when}
        if encounter:
            resource["encounter"] = {"reference": f"Encounter/{encounter}"}
        self.add(resource)

    def careplan(self, rid: str, code: str, display: str, status: str, start: str, activities: list[str], author: str) -> None:
        self.add({
            "resourceType": "CarePlan", "id": rid, "status": status, "intent": "plan",
            "category": [concept("sct", code, display)], "title": display, "subject": self.ref,
            "period": {"start": start}, "author": {"reference": f"Practitioner/{author}"},
            "activity": [{"detail": {"status": "in-progress" if status == "active" else "completed", "description": a}} for a in activities],
        })

    def encounter(self, rid: str, when: datetime, reason: str, practitioner: str, kind: str = "AMB") -> None:
        self.add({
            "resourceType": "Encounter", "id": rid, "status": "finished",
            "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": kind},
            "type": [concept("sct", "185349003", "Encounter for check up (procedure)")] if kind == "AMB"
            else [concept("sct", "183452005", "Emergency hospital admission (procedure)")],
            "subject": self.ref, "participant": [{"individual": {"reference": f"Practitioner/{practitioner}"}}],
            "period": {"start": when.isoformat(), "end": (when + timedelta(minutes=30 if kind == "AMB" else 2 * 24 * 60)).isoformat()},
            "reasonCode": [{"text": reason}],
        })

    def observation(self, rid: str, code: str, display: str, when: str, value: float | None, unit: str,
                    category: str, encounter: str = "", status: str = "final", components: list[tuple[str, str, float, str]] | None = None,
                    interpretation: str = "") -> None:
        resource: dict[str, Any] = {
            "resourceType": "Observation", "id": rid, "status": status,
            "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": category}]}],
            "code": concept("loinc", code, display), "subject": self.ref, "effectiveDateTime": when,
        }
        if encounter:
            resource["encounter"] = {"reference": f"Encounter/{encounter}"}
        if value is not None:
            resource["valueQuantity"] = {"value": value, "unit": unit, "system": UCUM, "code": unit}
        if components:
            resource["component"] = [
                {"code": concept("loinc", c_code, c_display), "valueQuantity": {"value": c_value, "unit": c_unit, "system": UCUM, "code": c_unit}}
                for c_code, c_display, c_value, c_unit in components
            ]
        if interpretation:
            resource["interpretation"] = [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation", "code": interpretation}]}]
        self.add(resource)


def vitals_history(record: Record, rng: random.Random, visits: list[tuple[str, datetime]], *, systolic: float, diastolic: float,
                   heart_rate: float, weight: float, spo2: float | None = None, weight_drift: float = 0.0) -> None:
    """Blood pressure panel, heart rate, weight (and SpO2) at every visit."""
    for index, (enc_id, when) in enumerate(visits):
        stamp = when.isoformat()
        sys_value = round(rng.gauss(systolic, 7))
        dia_value = round(rng.gauss(diastolic, 5))
        record.observation(f"obs-bp-{index + 1:02d}", "85354-9", "Blood pressure panel with all children optional", stamp, None, "",
                           "vital-signs", enc_id, components=[("8480-6", "Systolic blood pressure", sys_value, "mm[Hg]"),
                                                              ("8462-4", "Diastolic blood pressure", dia_value, "mm[Hg]")])
        record.observation(f"obs-hr-{index + 1:02d}", "8867-4", "Heart rate", stamp, round(rng.gauss(heart_rate, 5)), "/min", "vital-signs", enc_id)
        record.observation(f"obs-wt-{index + 1:02d}", "29463-7", "Body weight", stamp,
                           round(rng.gauss(weight + weight_drift * index, 0.6), 1), "kg", "vital-signs", enc_id)
        if spo2 is not None:
            record.observation(f"obs-spo2-{index + 1:02d}", "59408-5", "Oxygen saturation in Arterial blood by Pulse oximetry", stamp,
                               round(min(rng.gauss(spo2, 1.2), 99)), "%", "vital-signs", enc_id)


def lab_series(record: Record, slug: str, code: str, display: str, unit: str, series: list[tuple[str, float]],
               high: float | None = None, low: float | None = None) -> None:
    for index, (when, value) in enumerate(series, 1):
        flag = "H" if high is not None and value > high else ("L" if low is not None and value < low else "")
        record.observation(f"obs-{slug}-{index:02d}", code, display, when, value, unit, "laboratory", interpretation=flag)


def transcript_document(patient_id: str, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    out = []
    for s_index, session in enumerate(sessions, 1):
        sid = f"s{s_index:02d}"
        start = datetime.fromisoformat(session["at"])
        turns, at = [], start
        for t_index, (speaker, text) in enumerate(session["turns"], 1):
            turns.append({"id": f"{sid}-t{t_index:02d}", "speaker": speaker, "at": at.isoformat(), "text": text})
            at += timedelta(seconds=60 + (len(text) * 7) % 170)
        out.append({"id": sid, "started_at": start.isoformat(), "turns": turns})
    return {"format": "coaching-transcript/v1", "patient": f"Patient/{patient_id}", "sessions": out}


def labels_document(patient_id: str, slug: str, sessions: list[dict[str, Any]], record: Record) -> dict[str, Any]:
    by_id = {(r["resourceType"], r["id"]): r for r in record.resources}
    scenarios, traps, memories = [], [], []
    for s_index, session in enumerate(sessions, 1):
        sid = f"s{s_index:02d}"
        scenario = session.get("scenario")
        if scenario:
            refs = []
            for resource_type, old_id in scenario["refs"]:
                rid = record.id_map.get(f"{old_id}@{resource_type}", old_id)
                resource = by_id[(resource_type, rid)]
                coding = next(iter(v for k, v in resource.items() if k in ("code", "medicationCodeableConcept", "vaccineCode")), None)
                coding = (coding or resource["category"][0])["coding"][0]
                refs.append({"resourceType": resource_type, "id": rid, "system": coding["system"], "code": coding["code"]})
            scenarios.append({
                "id": f"{slug}-sc{len(scenarios) + 1:02d}", "session_id": sid, "turn_ids": [f"{sid}-t{t:02d}" for t in scenario["turns"]],
                "kind": scenario["kind"], "category": scenario["category"], "summary": scenario["summary"],
                "severity": scenario["severity"], "safety_critical": scenario["safety_critical"], "fhir_refs": refs,
            })
        for trap_turns, why in session.get("traps", []):
            traps.append({"session_id": sid, "turn_ids": [f"{sid}-t{t:02d}" for t in trap_turns], "why": why})
        for turn, content in session.get("memories", []):
            memories.append({"session_id": sid, "turn_id": f"{sid}-t{turn:02d}", "content": content})
    return {"patient": f"Patient/{patient_id}", "scenarios": scenarios, "memories": memories, "traps": traps}


def _rewrite_references(node: Any, mapping: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: (mapping.get(v, v) if k == "reference" else _rewrite_references(v, mapping)) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_references(item, mapping) for item in node]
    return node


def make_ids_global(record: Record, prefix: str) -> None:
    """Ids are unique per type across the whole EHR, so prefix each patient's ids (Patient and Practitioner are already)."""
    mapping = {}
    for resource in record.resources:
        if resource["resourceType"] not in ("Patient", "Practitioner"):
            old = resource["id"]
            resource["id"] = f"{prefix}-{old}"
            mapping[f"{resource['resourceType']}/{old}"] = f"{resource['resourceType']}/{resource['id']}"
    record.resources[:] = [_rewrite_references(r, mapping) for r in record.resources]
    record.id_map = {k.split("/", 1)[1] + "@" + k.split("/", 1)[0]: v.split("/", 1)[1] for k, v in mapping.items()}


def write(slug: str, record: Record, sessions: list[dict[str, Any]]) -> None:
    make_ids_global(record, "".join(part[0] for part in slug.split("-")))
    folder = HERE / slug
    folder.mkdir(exist_ok=True)
    bundle = {"resourceType": "Bundle", "id": f"demo-{slug}", "type": "collection",
              "entry": [{"fullUrl": f"urn:uuid:demo-{slug}-{r['resourceType'].lower()}-{r['id']}", "resource": r} for r in record.resources]}
    # fullUrls must be unique; resources reference each other as Type/id, so these are only labels.
    documents = {
        "bundle.json": bundle,
        "transcript.json": transcript_document(record.patient_id, sessions),
        "labels.json": labels_document(record.patient_id, slug, sessions, record),
    }
    for name, document in documents.items():
        (folder / name).write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    kinds: dict[str, int] = {}
    for resource in record.resources:
        kinds[resource["resourceType"]] = kinds.get(resource["resourceType"], 0) + 1
    print(f"{slug}: {len(record.resources)} resources {kinds}; {len(sessions)} sessions; "
          f"{len(documents['labels.json']['scenarios'])} scenarios, {len(documents['labels.json']['traps'])} traps")


def main() -> None:
    for slug, build in PATIENTS:
        record, sessions = build(random.Random(slug))
        write(slug, record, sessions)


# --- patients (appended below) -------------------------------------------------------------------------


def visits(rng: random.Random, start: date, count: int, every_days: int, hour: int = 9) -> list[tuple[str, datetime]]:
    out, day = [], start
    for index in range(count):
        out.append((f"enc-{index + 1:02d}", datetime(day.year, day.month, day.day, hour, rng.choice([0, 15, 30, 45]))))
        day += timedelta(days=every_days + rng.randrange(-10, 11))
    return out


def practitioner(record: Record, rid: str, given: str, family: str, role: str) -> None:
    record.add({"resourceType": "Practitioner", "id": rid, "active": True,
                "name": [{"use": "official", "prefix": ["Dr."], "given": [given], "family": family}],
                "qualification": [{"code": {"text": role}}]})


# --- Walter Ostrowski: heart failure, atrial fibrillation on warfarin ---------------------------------------


def walter(rng: random.Random) -> tuple[Record, list[dict[str, Any]]]:
    r = Record("pt-walter-ostrowski")
    practitioner(r, "prac-anita-raman", "Anita", "Raman", "Cardiology")
    practitioner(r, "prac-samuel-oyelaran", "Samuel", "Oyelaran", "Internal medicine")
    r.add({"resourceType": "Patient", "id": r.patient_id, "active": True, "gender": "male", "birthDate": "1951-06-14",
           "name": [{"use": "official", "given": ["Walter", "James"], "family": "Ostrowski"}],
           "address": [{"city": "Milwaukee", "state": "WI", "country": "US"}],
           "generalPractitioner": [{"reference": "Practitioner/prac-samuel-oyelaran"}]})
    cardio, pcp = "prac-anita-raman", "prac-samuel-oyelaran"
    r.condition("cond-chf", "88805009", "Chronic congestive heart failure (disorder)", "active", "2019-03-11",
                note="Ischemic cardiomyopathy, reduced ejection fraction (LVEF 30-35%). NYHA class II.")
    r.condition("cond-afib", "49436004", "Atrial fibrillation (disorder)", "active", "2018-08-02")
    r.condition("cond-htn", "59621000", "Essential hypertension (disorder)", "active", "2006-05-01")
    r.condition("cond-hld", "55822004", "Hyperlipidemia (disorder)", "active", "2008-09-15")
    r.condition("cond-mi", "22298006", "Myocardial infarction (disorder)", "resolved", "2019-03-02", abated="2019-04-30")
    r.condition("cond-gout", "90560007", "Gout (disorder)", "active", "2021-11-20")
    r.condition("cond-ckd3", "433144002", "Chronic kidney disease stage 3 (disorder)", "active", "2022-06-10")
    r.condition("cond-cystitis", "307426000", "Acute infective cystitis (disorder)", "resolved", "2024-09-03", abated="2024-09-20")
    r.condition("cond-exsmoker", "8517006", "Ex-smoker (finding)", "active", "2019-03-11", category="health-concern")
    r.condition("cond-anemia", "271737000", "Anemia (disorder)", "entered-in-error", "2025-05-14", note="Entered on the wrong chart.")
    r.medication("medrx-warfarin", "855332", "Warfarin Sodium 5 MG Oral Tablet", "active", "2018-08-02",
                 "5 mg by mouth every evening; dose adjusted by the anticoagulation clinic (INR goal 2.0-3.0)", cardio,
                 reason="Atrial fibrillation")
    r.medication("medrx-metoprolol", "866436", "24 HR metoprolol succinate 50 MG Extended Release Oral Tablet", "active", "2019-04-01",
                 "1 tablet by mouth daily", cardio, reason="Heart failure")
    r.medication("medrx-furosemide", "313988", "Furosemide 40 MG Oral Tablet", "active", "2019-03-11",
                 "1 tablet by mouth every morning", cardio, reason="Heart failure")
    r.medication("medrx-spironolactone", "313096", "spironolactone 25 MG Oral Tablet", "active", "2022-01-10",
                 "1 tablet by mouth daily", cardio, reason="Heart failure with reduced ejection fraction")
    r.medication("medrx-lisinopril", "314077", "lisinopril 20 MG Oral Tablet", "active", "2019-04-01", "1 tablet by mouth daily", cardio)
    r.medication("medrx-lisinopril-10", "314076", "lisinopril 10 MG Oral Tablet", "stopped", "2006-05-01", "1 tablet by mouth daily",
                 pcp, ended="2019-04-01", note="Dose increased to 20 mg after the myocardial infarction.")
    r.medication("medrx-digoxin", "197604", "Digoxin 0.125 MG Oral Tablet", "stopped", "2018-08-02", "1 tablet by mouth daily", cardio,
                 ended="2024-02-20", note="Stopped during the February 2024 admission (digoxin level 2.4 ng/mL).")
    r.medication("medrx-atorvastatin", "617311", "atorvastatin 40 MG Oral Tablet", "active", "2019-03-11", "1 tablet by mouth at bedtime", cardio)
    r.medication("medrx-allopurinol", "197319", "Allopurinol 100 MG Oral Tablet", "active", "2021-11-20", "1 tablet by mouth daily", pcp)
    r.medication("medrx-colchicine", "197541", "Colchicine 0.6 MG Oral Tablet", "completed", "2021-11-20", "1 tablet twice daily for 10 days",
                 pcp, ended="2021-12-01")
    r.medication("medrx-nitrofurantoin", "1648755",
                 "nitrofurantoin, macrocrystals 25 MG / nitrofurantoin, monohydrate 75 MG Oral Capsule", "completed", "2024-09-03",
                 "1 capsule twice daily for 5 days", pcp, ended="2024-09-08")
    r.medication("medrx-acetaminophen", "198440", "Acetaminophen 500 MG Oral Tablet", "active", "2021-11-20",
                 "1-2 tablets every 6 hours as needed for pain (max 3 g a day)", pcp, as_needed=True,
                 note="Use acetaminophen for pain. Avoid NSAIDs (warfarin, heart failure, CKD).")
    r.allergy("allergy-penicillin", "91936005", "Allergy to penicillin", "active", "high", "Hives and lip swelling", "2010-02-01")
    r.allergy("allergy-shellfish", "735029006", "Shellfish (substance)", "inactive", "low", "Itchy mouth", "2010-02-01", category="food",
              note="Has eaten shrimp without a reaction since 2015.")
    for rid, code, display, when in [
        ("imm-flu-2023", "197", "influenza, high-dose, quadrivalent", "2023-10-05"),
        ("imm-flu-2024", "197", "influenza, high-dose, quadrivalent", "2024-10-10"),
        ("imm-flu-2025", "197", "influenza, high-dose, quadrivalent", "2025-10-08"),
        ("imm-pcv20", "216", "Pneumococcal conjugate PCV20, polysaccharide CRM197 conjugate, adjuvant, PF", "2022-04-12"),
        ("imm-zoster", "187", "zoster vaccine recombinant", "2021-03-02"),
        ("imm-covid-2024", "208", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose", "2024-10-10"),
        ("imm-tdap", "115", "Tdap", "2016-07-19"),
    ]:
        r.immunization(rid, code, display, when)
    r.procedure("proc-cardioversion", "180325003", "Direct current cardioversion (procedure)", "2018-09-14")
    r.procedure("proc-pci", "415070008", "Percutaneous coronary intervention (procedure)", "2019-03-02")
    r.procedure("proc-echo-2024", "433236007", "Transthoracic echocardiography (procedure)", "2024-02-19")
    r.procedure("proc-echo-2025", "433236007", "Transthoracic echocardiography (procedure)", "2025-08-21")
    r.procedure("proc-ecg-2025", "29303009", "Electrocardiographic procedure (procedure)", "2025-11-18")
    r.procedure("proc-medrec-2025", "430193006", "Medication reconciliation (procedure)", "2025-11-18")
    r.careplan("careplan-hf", "735984001", "Heart failure self management plan (record artifact)", "active", "2024-02-20",
               ["Weigh every morning; call the clinic for a gain of more than 3 lb in a day or 5 lb in a week",
                "Sodium under 2,000 mg a day; fluids about 2 liters a day", "Walk 20-30 minutes most days"], cardio)
    r.careplan("careplan-anticoag", "734163000", "Care plan (record artifact)", "active", "2018-08-02",
               ["Anticoagulation clinic: INR goal 2.0-3.0, checked monthly",
                "No NSAIDs or new supplements without asking the anticoagulation clinic"], cardio)
    seen = visits(rng, date(2024, 1, 9), 10, 70)
    for index, (enc_id, when) in enumerate(seen):
        r.encounter(enc_id, when, "Heart failure follow-up" if index % 2 else "Chronic disease follow-up", cardio if index % 2 else pcp)
    r.encounter("enc-admission-2024", datetime(2024, 2, 17, 21, 40), "Acute on chronic heart failure", cardio, kind="IMP")
    vitals_history(r, rng, seen, systolic=122, diastolic=72, heart_rate=66, weight=93.0)
    inr_days = ["2024-01-09", "2024-02-17", "2024-03-12", "2024-04-16", "2024-06-04", "2024-07-23", "2024-09-10", "2024-10-29",
                "2025-01-07", "2025-03-04", "2025-05-13", "2025-07-22", "2025-09-30", "2025-12-09"]
    inr_values = [2.4, 3.6, 2.8, 2.2, 2.6, 1.8, 2.3, 2.9, 2.5, 2.7, 2.1, 2.4, 2.8, 2.6]
    lab_series(r, "inr", "6301-6", "INR in Platelet poor plasma by Coagulation assay", "{INR}", list(zip(inr_days, inr_values)), high=3.0, low=2.0)
    lab_series(r, "ntprobnp", "33762-6", "Natriuretic peptide.B prohormone N-Terminal [Mass/volume] in Serum or Plasma", "pg/mL",
               [("2024-02-17", 2850), ("2024-03-12", 1390), ("2024-09-10", 980), ("2025-03-04", 870), ("2025-12-09", 910)], high=125)
    lab_series(r, "creat", "2160-0", "Creatinine [Mass/volume] in Serum or Plasma", "mg/dL",
               [("2024-02-17", 1.7), ("2024-06-04", 1.5), ("2025-01-07", 1.4), ("2025-07-22", 1.5), ("2025-12-09", 1.5)], high=1.3)
    lab_series(r, "egfr", "33914-3", "Glomerular filtration rate/1.73 sq M.predicted", "mL/min/{1.73_m2}",
               [("2024-02-17", 40), ("2024-06-04", 46), ("2025-01-07", 50), ("2025-07-22", 47), ("2025-12-09", 47)], low=60)
    lab_series(r, "k", "2823-3", "Potassium [Moles/volume] in Serum or Plasma", "mmol/L",
               [("2024-02-17", 4.9), ("2024-06-04", 4.6), ("2025-01-07", 4.7), ("2025-07-22", 4.8), ("2025-12-09", 4.9)], high=5.1)
    lab_series(r, "hgb", "718-7", "Hemoglobin [Mass/volume] in Blood", "g/dL", [("2024-02-17", 13.4), ("2025-07-22", 13.1)], low=13.5)
    lab_series(r, "digoxin", "10535-3", "Digoxin [Mass/volume] in Serum or Plasma", "ng/mL", [("2024-02-17", 2.4)], high=2.0)
    lab_series(r, "lvef", "10230-1", "Left ventricular Ejection fraction", "%", [("2024-02-19", 30), ("2025-08-21", 35)], low=50)
    tz = "-06:00"
    sessions = [
        {"at": f"2026-01-06T10:05:00{tz}", "turns": [
            ("coach", "Hi Walter, I'm Dana, your health coach. Glad you signed up. How are things this week?"),
            ("patient", "Fine I guess. My daughter signed me up, she worries. I'm 74 and I used to run a lathe 40 years, I know how to work"),
            ("coach", "Ha, I believe it. What would you like to get out of these chats?"),
            ("patient", "Get my legs back. Since the heart thing I get winded on the stairs. Cardiac rehab ended in the fall and I kind of stopped moving"),
            ("coach", "That's a really good goal. Is there somewhere warm you could walk this winter?"),
            ("patient", "Mayfair mall opens early for walkers. Marge (my wife) goes with her church group"),
            ("coach", "How about 15 minutes there three mornings a week to start?"),
            ("patient", "ok. Monday Wednesday Friday. Don't expect miracles"),
        ], "memories": [(4, "Wants to regain stamina; winded on stairs since cardiac rehab ended"),
                        (8, "Goal: walk 15 minutes at the mall Monday, Wednesday and Friday mornings")]},
        {"at": f"2026-01-13T09:50:00{tz}", "turns": [
            ("coach", "Morning Walter! How did the mall walks go?"),
            ("patient", "Did 2 of 3. Friday the car wouldn't start, 6 below"),
            ("coach", "Two out of three in that cold is a win. What do your lunches look like most days?"),
            ("patient", "Soup and crackers mostly. Campbell's. Marge says the can is a salt lick"),
            ("coach", "She's got a point, canned soups can be really high in sodium. Would you try the low-sodium versions or homemade?"),
            ("patient", "I can try the low sodium ones. I take my water pill every morning like they told me so I figure I'm ok on the fluid"),
            ("coach", "Good that you're consistent with it. Lower salt helps that pill do its job."),
            ("patient", "Fine. Low sodium. Marge will be thrilled"),
        ], "traps": [([6], "Takes furosemide every morning, which agrees with the record.")],
           "memories": [(4, "Usually has canned soup and crackers for lunch"), (8, "Agreed to switch to low-sodium soups")]},
        {"at": f"2026-01-20T10:12:00{tz}", "turns": [
            ("coach", "Hi Walter, how's the week going?"),
            ("patient", "Walked all 3 days. 20 minutes Friday"),
            ("coach", "That's great progress! How are you feeling on the walks?"),
            ("patient", "Better. Less winded. Maybe because I quit that spiro pill, the spironolactone. About 3 weeks ago"),
            ("coach", "Thanks for telling me. What made you stop it?"),
            ("patient", "My chest got sore and kind of puffy on one side. Embarrassing at my age. I didn't call Dr Raman yet, figured I'd bring it up in March"),
            ("coach", "That's a known side effect and nothing to be embarrassed about. It's worth calling her office sooner, since that pill is part of your heart failure treatment and there are alternatives."),
            ("patient", "ok ok. I'll have Marge call"),
        ], "scenario": {"turns": [4, 6], "kind": "contradiction", "category": "medication",
                        "summary": "Stopped spironolactone about 3 weeks ago because of breast tenderness and swelling; prescriber not told.",
                        "severity": "medium", "safety_critical": False,
                        "refs": [("MedicationRequest", "medrx-spironolactone"), ("Condition", "cond-chf")]}},
        {"at": f"2026-01-27T10:00:00{tz}", "turns": [
            ("coach", "Hi Walter! Any wins this week?"),
            ("patient", "Grandson had a hockey game Saturday, I stood the whole 3rd period"),
            ("coach", "Standing through a whole period is real stamina. How did your legs feel after?"),
            ("patient", "Tired but ok. Doc said at the last visit if my heart pump number doesn't come up they might talk about one of those defibrillator things. We'll see I guess"),
            ("coach", "Sounds like something to keep talking about with Dr. Raman. Meanwhile the walking is helping your heart either way."),
            ("patient", "Yeah. Mall walkers gave me a t shirt lol"),
            ("coach", "Official member now! Same plan this week?"),
            ("patient", "Same plan"),
        ], "traps": [([4], "Hypothetical future device discussed by the cardiologist; nothing has been decided or done.")],
           "memories": [(2, "Stood through a full period of his grandson's hockey game")]},
        {"at": f"2026-02-03T09:45:00{tz}", "turns": [
            ("coach", "Morning Walter, how are you?"),
            ("patient", "Back's killing me. Shoveled the driveway twice last week, heavy wet snow"),
            ("coach", "Ouch. Are you doing anything for it?"),
            ("patient", "Heating pad. And Aleve, 2 in the morning and 2 at night, been about a week now. The tylenol does nothing for me"),
            ("coach", "I'm glad you told me. Aleve is an anti-inflammatory, and with a blood thinner and your heart condition it can cause problems. Could you call your doctor's office or pharmacist today about what's safe for your back?"),
            ("patient", "It's just Aleve. They sell it at the gas station"),
            ("coach", "I know, it feels harmless, but it really can interact with warfarin. A quick call is worth it."),
            ("patient", "Fine. I'll call the coumadin clinic"),
        ], "scenario": {"turns": [4], "kind": "gap", "category": "medication",
                        "summary": "Taking over-the-counter naproxen (Aleve) 2 tablets twice a day for a week for back pain while on warfarin with heart failure.",
                        "severity": "high", "safety_critical": True,
                        "refs": [("MedicationRequest", "medrx-warfarin"), ("Condition", "cond-chf"), ("CarePlan", "careplan-anticoag")]}},
        {"at": f"2026-02-10T10:20:00{tz}", "turns": [
            ("coach", "Hi Walter! How did the call go?"),
            ("patient", "They said stop the Aleve, use the heating pad and tylenol. Back's better anyway"),
            ("coach", "Glad it's easing up. How are the walks?"),
            ("patient", "Good. Marge walks with me now. She started on Eliquis last month for her own heart flutter so she's on the blood thinner club too"),
            ("coach", "Walking buddies! It's nice to have company."),
            ("patient", "She's faster than me. Don't tell her I said that"),
            ("coach", "Your secret is safe. Want to bump to 25 minutes?"),
            ("patient", "Let's try it"),
        ], "traps": [([4], "The wife's new apixaban (Eliquis) prescription, not the patient's medication.")],
           "memories": [(4, "His wife Marge now walks with him"), (8, "Goal raised to 25-minute walks")]},
        {"at": f"2026-02-17T09:35:00{tz}", "turns": [
            ("coach", "Morning Walter, how's it going?"),
            ("patient", "Not great. Skipped Friday, felt puffy"),
            ("coach", "Puffy how?"),
            ("patient", "Ankles swollen, socks leave a dent. And the scale said 212 this morning, I was 205 on Saturday"),
            ("coach", "Thanks for checking your weight. A gain like that in a few days is exactly what your heart team asked you to call about. Can you call Dr. Raman's office this morning?"),
            ("patient", "It was a salty weekend. Super Bowl party"),
            ("coach", "That may be part of it, but they still want to know about 7 pounds in 3 days. Please call them today."),
            ("patient", "ok I'm calling after this"),
        ], "scenario": {"turns": [4], "kind": "gap", "category": "observation",
                        "summary": "Home weight up 7 lb in 3 days (205 to 212 lb) with new ankle swelling.",
                        "severity": "high", "safety_critical": True,
                        "refs": [("Observation", "obs-wt-10"), ("Condition", "cond-chf"), ("CarePlan", "careplan-hf")]}},
        {"at": f"2026-02-24T10:10:00{tz}", "turns": [
            ("coach", "Hi Walter, how are you feeling since last week?"),
            ("patient", "Better. They had me come in, the doc checked me over. Weight's back to 206"),
            ("coach", "That's a relief. Any other symptoms?"),
            ("patient", "No chest pain at all. No blood in the toilet either, they asked that too. Just tired"),
            ("coach", "Good to hear. Tired is understandable after a rough week. Want to ease back in with shorter walks?"),
            ("patient", "15 minutes this week then back to 25"),
            ("coach", "Sounds smart."),
        ], "traps": [([4], "Negations: no chest pain and no blood in the stool.")],
           "memories": [(6, "Easing back to 15-minute walks for a week")]},
        {"at": f"2026-03-03T09:55:00{tz}", "turns": [
            ("coach", "Morning Walter! How was the week?"),
            ("patient", "Walks ok. Weird thing, my gums bleed every time I brush now. And Sunday I had a nosebleed that took like 20 minutes to stop"),
            ("coach", "That's important, thank you for telling me. Bleeding like that on warfarin should be checked. Can you call the anticoagulation clinic today?"),
            ("patient", "Marge said the same. I've got an INR check Thursday anyway"),
            ("coach", "It's better not to wait for Thursday with a 20-minute nosebleed. Please call them today and tell them both things."),
            ("patient", "ok. I'll call"),
        ], "scenario": {"turns": [2], "kind": "gap", "category": "condition",
                        "summary": "New bleeding gums when brushing and a 20-minute nosebleed while on warfarin.",
                        "severity": "high", "safety_critical": True,
                        "refs": [("MedicationRequest", "medrx-warfarin"), ("Observation", "obs-inr-14")]}},
        {"at": f"2026-03-10T10:05:00{tz}", "turns": [
            ("coach", "Hi Walter, how did the INR check go?"),
            ("patient", "They changed my dose a little, I have it written down. Gums are better"),
            ("coach", "Glad they sorted it. How are the joints with all the walking?"),
            ("patient", "Knees creak. My daughter brought me turmeric capsules from Costco, says it's natural anti inflammation. I take 2 a day since last week"),
            ("coach", "Supplements can interact with warfarin too. Would you mention the turmeric to the anticoagulation clinic before you keep taking it?"),
            ("patient", "It's a spice. But ok I'll ask"),
            ("coach", "Thanks Walter. Same walking plan this week?"),
            ("patient", "Same plan. 25 minutes"),
        ], "scenario": {"turns": [4], "kind": "gap", "category": "medication",
                        "summary": "Started turmeric supplement capsules, 2 a day, while on warfarin.",
                        "severity": "medium", "safety_critical": False,
                        "refs": [("MedicationRequest", "medrx-warfarin"), ("CarePlan", "careplan-anticoag")]}},
    ]
    return r, sessions


# --- Denise Arbogast: COPD on inhalers ------------------------------------------------------------------


def denise(rng: random.Random) -> tuple[Record, list[dict[str, Any]]]:
    r = Record("pt-denise-arbogast")
    practitioner(r, "prac-helen-kowalczyk", "Helen", "Kowalczyk", "Pulmonology")
    practitioner(r, "prac-marcus-bell", "Marcus", "Bell", "Family medicine")
    r.add({"resourceType": "Patient", "id": r.patient_id, "active": True, "gender": "female", "birthDate": "1958-11-02",
           "name": [{"use": "official", "given": ["Denise", "Marie"], "family": "Arbogast"}],
           "address": [{"city": "Pittsburgh", "state": "PA", "country": "US"}],
           "generalPractitioner": [{"reference": "Practitioner/prac-marcus-bell"}]})
    pulm, pcp = "prac-helen-kowalczyk", "prac-marcus-bell"
    r.condition("cond-copd", "13645005", "Chronic obstructive lung disease (disorder)", "active", "2015-04-20",
                note="GOLD 3; FEV1 about 45% of predicted.")
    r.condition("cond-copd-exac-2025", "195951007", "Acute exacerbation of chronic obstructive airways disease (disorder)", "resolved",
                "2025-01-14", abated="2025-02-01")
    r.condition("cond-pneumonia-2023", "233604007", "Pneumonia (disorder)", "resolved", "2023-02-06", abated="2023-03-01")
    r.condition("cond-bronchitis-2021", "10509002", "Acute bronchitis (disorder)", "resolved", "2021-12-01", abated="2021-12-20")
    r.condition("cond-exsmoker", "8517006", "Ex-smoker (finding)", "active", "2019-06-01", category="health-concern",
                note="Quit June 2019 after 40 pack-years.")
    r.condition("cond-osteoporosis", "64859006", "Osteoporosis (disorder)", "active", "2021-08-10")
    r.condition("cond-gerd", "235595009", "Gastroesophageal reflux disease (disorder)", "active", "2017-03-03")
    r.condition("cond-anxiety", "197480006", "Anxiety disorder (disorder)", "active", "2016-01-12")
    r.medication("medrx-tiotropium", "485032", "tiotropium 0.018 MG Inhalation Powder", "active", "2015-05-01",
                 "Inhale the contents of 1 capsule once daily", pulm, reason="COPD")
    r.medication("medrx-advair", "896209", "60 ACTUAT Fluticasone propionate 0.25 MG/ACTUAT / salmeterol 0.05 MG/ACTUAT Dry Powder Inhaler",
                 "active", "2019-02-11", "1 inhalation twice daily; rinse mouth after use", pulm, reason="COPD with exacerbations")
    r.medication("medrx-albuterol", "745752", "NDA021457 200 ACTUAT albuterol 0.09 MG/ACTUAT Metered Dose Inhaler [ProAir]", "active",
                 "2015-05-01", "2 puffs every 4-6 hours as needed for shortness of breath", pulm, as_needed=True)
    r.medication("medrx-prednisone-2025", "312615", "predniSONE 20 MG Oral Tablet", "completed", "2025-01-14",
                 "40 mg (2 tablets) daily for 5 days", pcp, ended="2025-01-19", reason="COPD exacerbation")
    r.medication("medrx-azithromycin-2025", "308460", "Azithromycin 250 MG Oral Tablet", "completed", "2025-01-14",
                 "500 mg on day 1, then 250 mg daily for 4 days", pcp, ended="2025-01-18")
    r.medication("medrx-amoxclav-2023", "562251", "Amoxicillin 250 MG / Clavulanate 125 MG Oral Tablet", "completed", "2023-02-06",
                 "1 tablet three times daily for 7 days", pcp, ended="2023-02-13", reason="Pneumonia")
    r.medication("medrx-montelukast", "200224", "montelukast 10 MG Oral Tablet", "stopped", "2018-04-01", "1 tablet at bedtime", pulm,
                 ended="2019-02-11", note="No benefit; stopped when fluticasone-salmeterol was started.")
    r.medication("medrx-nicotine", "198031", "24 HR nicotine 0.292 MG/HR Transdermal System", "completed", "2019-06-01",
                 "Apply 1 patch daily", pcp, ended="2019-09-01")
    r.medication("medrx-alendronate", "904419", "Alendronic acid 10 MG Oral Tablet", "active", "2021-08-10",
                 "1 tablet every morning with water, 30 minutes before food, stay upright", pcp)
    r.medication("medrx-omeprazole", "198051", "omeprazole 20 MG Delayed Release Oral Capsule", "active", "2017-03-03",
                 "1 capsule daily before breakfast", pcp)
    r.medication("medrx-metoprolol-error", "866436", "24 HR metoprolol succinate 50 MG Extended Release Oral Tablet", "entered-in-error",
                 "2025-06-03", "1 tablet daily", pcp, note="Entered on the wrong patient.")
    r.allergy("allergy-sulfa", "387406002", "Sulfonamide (substance)", "active", "high", "Widespread rash", "2012-05-09")
    r.allergy("allergy-latex", "111088007", "Latex (substance)", "active", "low", "Contact dermatitis", "2015-04-20", category="environment")
    r.allergy("allergy-cat", "260152009", "Cat dander (substance)", "inactive", "low", "Sneezing and itchy eyes", "2009-10-01",
              category="environment", note="No symptoms around her daughter's cats since 2020.")
    for rid, code, display, when in [
        ("imm-flu-2023", "197", "influenza, high-dose, quadrivalent", "2023-10-02"),
        ("imm-flu-2024", "197", "influenza, high-dose, quadrivalent", "2024-09-30"),
        ("imm-flu-2025", "197", "influenza, high-dose, quadrivalent", "2025-10-06"),
        ("imm-pcv20", "216", "Pneumococcal conjugate PCV20, polysaccharide CRM197 conjugate, adjuvant, PF", "2023-09-12"),
        ("imm-tdap", "115", "Tdap", "2018-03-20"),
        ("imm-zoster", "187", "zoster vaccine recombinant", "2022-05-17"),
        ("imm-covid-2024", "208", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose", "2024-10-15"),
    ]:
        r.immunization(rid, code, display, when)
    r.procedure("proc-rehab-2019", "15081005", "Pulmonary rehabilitation (regime/therapy)", "2019-04-01")
    r.procedure("proc-dexa-2021", "312681000", "Bone density scan (procedure)", "2021-08-03")
    r.procedure("proc-spirometry-2023", "127783003", "Spirometry (procedure)", "2023-05-16")
    r.procedure("proc-cxr-2025", "399208008", "Plain X-ray of chest (procedure)", "2025-01-14", encounter="enc-ed-2025")
    r.procedure("proc-spirometry-2025", "127783003", "Spirometry (procedure)", "2025-03-11")
    r.careplan("careplan-copd", "736283006", "Chronic obstructive pulmonary disease clinical management plan (record artifact)", "active",
               "2019-02-11", ["Tiotropium once daily and fluticasone-salmeterol twice daily; albuterol as needed",
                              "Action plan: call for more or discolored sputum, fever, or home oxygen saturation under 88%",
                              "Walk daily with pursed-lip breathing; pulmonary rehabilitation referral"], pulm)
    seen = visits(rng, date(2024, 2, 6), 9, 75)
    for index, (enc_id, when) in enumerate(seen):
        r.encounter(enc_id, when, "COPD follow-up" if index % 2 else "Chronic disease follow-up", pulm if index % 2 else pcp)
    r.encounter("enc-ed-2025", datetime(2025, 1, 14, 16, 20), "Shortness of breath, productive cough", pcp, kind="EMER")
    vitals_history(r, rng, seen, systolic=132, diastolic=80, heart_rate=84, weight=68.0, spo2=92)
    for index, (enc_id, when) in enumerate(seen[::2], 1):
        r.observation(f"obs-rr-{index:02d}", "9279-1", "Respiratory rate", when.isoformat(), round(rng.gauss(19, 1.5)), "/min", "vital-signs", enc_id)
    lab_series(r, "fev1", "20150-9", "FEV1", "L", [("2023-05-16", 1.15), ("2025-03-11", 1.05)])
    lab_series(r, "fev1fvc", "19926-5", "FEV1/FVC", "%", [("2023-05-16", 52), ("2025-03-11", 49)], low=70)
    lab_series(r, "hgb", "718-7", "Hemoglobin [Mass/volume] in Blood", "g/dL", [("2024-02-06", 14.2), ("2025-01-14", 14.6), ("2025-09-02", 14.1)])
    lab_series(r, "vitd", "62292-8", "25-Hydroxyvitamin D2+25-Hydroxyvitamin D3 [Mass/volume] in Serum or Plasma", "ng/mL",
               [("2024-02-06", 27), ("2025-09-02", 34)], low=30)
    tz = "-05:00"
    sessions = [
        {"at": f"2026-01-08T13:30:00{tz}", "turns": [
            ("coach", "Hi Denise! I'm Priya, your coach. What made you want to join the program?"),
            ("patient", "Hi Priya 🙂 My pulmonary lady suggested it. I get so out of breath I've kind of become a couch person and I hate it"),
            ("coach", "That's frustrating. What's one thing you'd love to be able to do again?"),
            ("patient", "Walk to the end of my street and back without stopping. It's maybe 300 yards. And keep up with my granddaughter at the zoo in the spring"),
            ("coach", "Those are great goals. Could we start with a short walk every day, even just to the neighbor's mailbox and back?"),
            ("patient", "Yes. Ron (my husband) can walk with me, he needs it too lol"),
            ("coach", "Perfect. Let's check in next week on how it went."),
        ], "memories": [(4, "Goal: walk to the end of her street (~300 yards) and back without stopping"),
                        (6, "Plans daily short walks with her husband Ron")]},
        {"at": f"2026-01-15T13:10:00{tz}", "turns": [
            ("coach", "Hi Denise, how did the walks go?"),
            ("patient", "5 days out of 7! Got to the 3rd mailbox before I had to stop"),
            ("coach", "That's a strong start. Have you tried pursed-lip breathing while you walk?"),
            ("patient", "The smell the roses blow out the candle thing? Rehab taught me years ago, I forgot about it"),
            ("coach", "That's the one. It can help you go a little further before stopping."),
            ("patient", "I'll try it. I do my Spiriva every morning with my coffee so at least that part's a habit"),
            ("coach", "Nice, pairing it with coffee is a smart routine."),
        ], "traps": [([6], "Uses tiotropium (Spiriva) every morning, which agrees with the record.")],
           "memories": [(2, "Walked 5 of 7 days; reached the 3rd mailbox before stopping")]},
        {"at": f"2026-01-22T13:25:00{tz}", "turns": [
            ("coach", "Hi Denise! How was your week?"),
            ("patient", "Meh. Breathing's been a little worse. Honestly I stopped the purple one, the Advair, about a month ago"),
            ("coach", "Thanks for being honest about that. What happened?"),
            ("patient", "My plan switched January 1 and it was $180 for one inhaler. I'm not paying that. I still do the Spiriva and the rescue one"),
            ("coach", "That's a lot of money. Could you call Dr. Kowalczyk's office? They often have cheaper options or samples, and that inhaler is an important part of your plan."),
            ("patient", "I didn't want to bother them over money but ok"),
            ("coach", "It's not a bother at all, they'd want to know. Let me know what they say."),
        ], "scenario": {"turns": [2, 4], "kind": "contradiction", "category": "medication",
                        "summary": "Stopped fluticasone-salmeterol (Advair) about a month ago because of cost; breathing a little worse.",
                        "severity": "medium", "safety_critical": False,
                        "refs": [("MedicationRequest", "medrx-advair"), ("Condition", "cond-copd")]}},
        {"at": f"2026-01-29T13:40:00{tz}", "turns": [
            ("coach", "Hi Denise, any news this week?"),
            ("patient", "The office is sorting out the inhaler thing with the insurance. And my grandson Tyler stayed with us, he's 9"),
            ("coach", "Fun! Did you get out together?"),
            ("patient", "We played Uno mostly lol. He has asthma so he has the same blue albuterol inhaler as me, we had to put them on separate shelves so we don't mix them up"),
            ("coach", "Smart system! Did you get any walks in?"),
            ("patient", "3. It was 12 degrees one day, no way"),
            ("coach", "Cold air is hard on the lungs, skipping that day was reasonable."),
        ], "traps": [([4], "The grandson's albuterol inhaler, not a change to the patient's medications.")],
           "memories": [(6, "Walked 3 days; skips walks on very cold days")]},
        {"at": f"2026-02-05T13:15:00{tz}", "turns": [
            ("coach", "Hi Denise! How are the walks going?"),
            ("patient", "Ron bought me one of those finger oxygen things at CVS. When I walk to the mailbox it says 86 or 87, sitting down it goes back to 91 or 92"),
            ("coach", "Thanks for checking. Your plan says to call if it's under 88, so the readings while walking are worth telling your pulmonary team about. Could you call them this week?"),
            ("patient", "I figured that's just me. But ok, I'll call tomorrow"),
            ("coach", "Thank you. Write down a few readings with the time so you can share them."),
            ("patient", "Good idea, I'll keep a little notebook"),
        ], "scenario": {"turns": [2], "kind": "gap", "category": "observation",
                        "summary": "Home pulse oximeter reads 86-87% when walking to the mailbox (91-92% at rest).",
                        "severity": "high", "safety_critical": True,
                        "refs": [("Observation", "obs-spo2-09"), ("Condition", "cond-copd"), ("CarePlan", "careplan-copd")]}},
        {"at": f"2026-02-12T13:05:00{tz}", "turns": [
            ("coach", "Hi Denise, how did the call go?"),
            ("patient", "They want me to come in next month for a walking test. Ok with me"),
            ("coach", "That sounds like a good plan. How are you feeling otherwise?"),
            ("patient", "Good week actually. And before you ask, no I have not touched a cigarette, it'll be 7 years in June. Not even at the casino with my sister"),
            ("coach", "That's a huge accomplishment, 7 years! The casino must be tough."),
            ("patient", "The smoke in there is awful now that I'm not one of them lol"),
            ("coach", "Ha. Keep up the walks this week?"),
            ("patient", "Yep, 5 days is the goal"),
        ], "traps": [([4], "Negation: has not smoked since 2019, which agrees with the ex-smoker entry.")],
           "memories": [(4, "Quit smoking in June 2019 (almost 7 years)")]},
        {"at": f"2026-02-19T13:20:00{tz}", "turns": [
            ("coach", "Hi Denise! How are things?"),
            ("patient", "Ran out of my ProAir last week and the pharmacy said it needed a new script. So I bought Primatene Mist at Walmart, the over the counter one"),
            ("coach", "Oh, thanks for telling me. How often are you using it?"),
            ("patient", "Maybe 4 or 5 times a day. More than I used the ProAir honestly"),
            ("coach", "Needing a rescue inhaler that often is something your doctor should hear about, and Primatene isn't the same medicine. Could you call the office today for the refill and let them know?"),
            ("patient", "Yeah that's fair. I'll call when we hang up"),
        ], "scenario": {"turns": [2, 4], "kind": "gap", "category": "medication",
                        "summary": "Using over-the-counter epinephrine inhaler (Primatene Mist) 4-5 times a day after running out of albuterol.",
                        "severity": "medium", "safety_critical": False,
                        "refs": [("MedicationRequest", "medrx-albuterol"), ("Condition", "cond-copd")]}},
        {"at": f"2026-02-26T13:35:00{tz}", "turns": [
            ("coach", "Hi Denise, how are you doing?"),
            ("patient", "Not good. Coughing up thick green stuff since Sunday and I had 100.8 last night. Can barely get to the bathroom without stopping"),
            ("coach", "I'm sorry you feel so bad. More sputum with a color change, a fever and more breathlessness are on your action plan as reasons to call. Please call your doctor's office right now, or go to urgent care if you can't reach them."),
            ("patient", "It's like last January when I ended up in the ER"),
            ("coach", "That's all the more reason to call now. Can Ron drive you if they want to see you?"),
            ("patient", "Yes he's here. I'll call"),
        ], "scenario": {"turns": [2], "kind": "gap", "category": "condition",
                        "summary": "New green sputum since Sunday, fever of 100.8 F and worse breathlessness: a likely COPD exacerbation.",
                        "severity": "high", "safety_critical": True,
                        "refs": [("Condition", "cond-copd"), ("CarePlan", "careplan-copd"), ("Condition", "cond-copd-exac-2025")]}},
        {"at": f"2026-03-05T13:10:00{tz}", "turns": [
            ("coach", "Hi Denise, how are you feeling?"),
            ("patient", "Better. Still tired but the cough is way down"),
            ("coach", "Glad to hear it. Take it easy this week."),
            ("patient", "I will. Dr K mentioned if my walking test is low they might offer me oxygen at home. If they do I honestly don't know if I'd use it, I'd feel like an old lady dragging a tank lol"),
            ("coach", "That's a common worry. If it comes up, it's worth asking about the small portable ones, many people find they can do more with it."),
            ("patient", "True. We'll see what the test says"),
        ], "traps": [([4], "Hypothetical home oxygen that has not been prescribed.")],
           "memories": [(4, "Worried home oxygen would make her feel old")]},
        {"at": f"2026-03-12T13:30:00{tz}", "turns": [
            ("coach", "Hi Denise! Ready to get back to walking?"),
            ("patient", "Yes! Did 2 short ones already. And I signed up for pulmonary rehab again, starts in April, Tuesdays and Thursdays"),
            ("coach", "That's wonderful news. Rehab will help with the zoo goal."),
            ("patient", "That's the plan! Zoo in May with Lily"),
            ("coach", "Let's keep building: short walks on the non-rehab days?"),
            ("patient", "Deal"),
        ], "memories": [(2, "Signed up for pulmonary rehab starting in April, Tuesdays and Thursdays"),
                        (4, "Plans a zoo trip in May with her granddaughter Lily")]},
    ]
    return r, sessions


# --- Jamal Whitfield: kidney transplant on tacrolimus, depression on sertraline ------------------------------


def jamal(rng: random.Random) -> tuple[Record, list[dict[str, Any]]]:
    r = Record("pt-jamal-whitfield")
    practitioner(r, "prac-grace-adeyemi", "Grace", "Adeyemi", "Transplant nephrology")
    practitioner(r, "prac-daniel-fischer", "Daniel", "Fischer", "Psychiatry")
    r.add({"resourceType": "Patient", "id": r.patient_id, "active": True, "gender": "male", "birthDate": "1980-03-27",
           "name": [{"use": "official", "given": ["Jamal", "Andre"], "family": "Whitfield"}],
           "address": [{"city": "Atlanta", "state": "GA", "country": "US"}],
           "generalPractitioner": [{"reference": "Practitioner/prac-grace-adeyemi"}]})
    neph, psych = "prac-grace-adeyemi", "prac-daniel-fischer"
    r.condition("cond-kidney-tx", "161665007", "History of renal transplant (situation)", "active", "2021-10-05",
                note="Deceased-donor kidney transplant 2021-10-05 for IgA nephropathy.")
    r.condition("cond-iga", "236407003", "Immunoglobulin A nephropathy (disorder)", "active", "2012-06-01")
    r.condition("cond-esrd", "46177005", "End-stage renal disease (disorder)", "resolved", "2019-02-01", abated="2021-10-05",
                note="Hemodialysis 2019-2021, until transplant.")
    r.condition("cond-mdd", "370143000", "Major depressive disorder (disorder)", "active", "2020-05-14")
    r.condition("cond-gad", "21897009", "Generalized anxiety disorder (disorder)", "resolved", "2020-05-14", abated="2023-01-10")
    r.condition("cond-htn", "59621000", "Essential hypertension (disorder)", "active", "2012-06-01")
    r.condition("cond-hld", "55822004", "Hyperlipidemia (disorder)", "active", "2022-04-05")
    r.condition("cond-cmv", "28944009", "Cytomegalovirus infection (disorder)", "resolved", "2022-01-20", abated="2022-03-15")
    r.medication("medrx-tacrolimus", "198377", "Tacrolimus 1 MG Oral Capsule", "active", "2021-10-05",
                 "3 mg (3 capsules) by mouth every 12 hours; trough goal 5-8 ng/mL", neph, reason="Kidney transplant")
    r.medication("medrx-mycophenolate", "200060", "mycophenolate mofetil 500 MG Oral Tablet", "active", "2021-10-05",
                 "1,000 mg (2 tablets) by mouth twice daily", neph, reason="Kidney transplant")
    r.medication("medrx-prednisone", "312617", "predniSONE 5 MG Oral Tablet", "active", "2022-01-05", "1 tablet by mouth daily", neph,
                 reason="Kidney transplant")
    r.medication("medrx-sertraline-100", "312938", "sertraline 100 MG Oral Tablet", "active", "2024-03-12", "1 tablet by mouth daily", psych,
                 reason="Major depressive disorder")
    r.medication("medrx-sertraline-50", "312941", "sertraline 50 MG Oral Tablet", "stopped", "2020-05-14", "1 tablet by mouth daily", psych,
                 ended="2024-03-12", note="Increased to 100 mg (PHQ-9 of 14).")
    r.medication("medrx-amlodipine", "197361", "amLODIPine 5 MG Oral Tablet", "active", "2021-12-01", "1 tablet by mouth daily", neph)
    r.medication("medrx-atorvastatin", "617312", "atorvastatin 10 MG Oral Tablet", "active", "2022-04-05", "1 tablet by mouth at bedtime", neph)
    r.medication("medrx-omeprazole", "198051", "omeprazole 20 MG Delayed Release Oral Capsule", "active", "2021-10-05",
                 "1 capsule daily before breakfast", neph)
    r.medication("medrx-smx-tmp", "198334", "sulfamethoxazole 400 MG / trimethoprim 80 MG Oral Tablet", "completed", "2021-10-05",
                 "1 tablet daily (Pneumocystis prophylaxis)", neph, ended="2022-04-05")
    r.allergy("allergy-peanut", "762952008", "Peanut (substance)", "active", "high", "Anaphylaxis", "1990-06-01", category="food")
    r.allergy("allergy-penicillin", "91936005", "Allergy to penicillin", "inactive", "low", "Rash as a child", "2019-02-01",
              note="Negative penicillin skin test in 2022; tolerated amoxicillin.")
    for rid, code, display, when in [
        ("imm-flu-2023", "150", "Influenza, injectable, quadrivalent, preservative free", "2023-10-11"),
        ("imm-flu-2024", "150", "Influenza, injectable, quadrivalent, preservative free", "2024-10-09"),
        ("imm-flu-2025", "150", "Influenza, injectable, quadrivalent, preservative free", "2025-10-14"),
        ("imm-pcv20", "216", "Pneumococcal conjugate PCV20, polysaccharide CRM197 conjugate, adjuvant, PF", "2021-06-22"),
        ("imm-hepb", "43", "Hep B, adult", "2020-02-18"),
        ("imm-tdap", "115", "Tdap", "2020-02-18"),
        ("imm-zoster", "187", "zoster vaccine recombinant", "2023-05-09"),
        ("imm-covid-2024", "208", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose", "2024-10-09"),
    ]:
        r.immunization(rid, code, display, when)
    r.procedure("proc-kidney-tx", "70536003", "Transplantation of kidney (procedure)", "2021-10-05")
    r.procedure("proc-cbt", "228557008", "Cognitive and behavioral therapy (regime/therapy)", "2024-04-02")
    r.procedure("proc-phq9-2025", "715252007", "Depression screening using Patient Health Questionnaire Nine Item score (procedure)", "2025-12-09")
    r.procedure("proc-medreview-2025", "473231009", "Renal disorder medication review (procedure)", "2025-12-09")
    r.careplan("careplan-transplant", "734163000", "Care plan (record artifact)", "active", "2021-10-05",
               ["Tacrolimus trough every 3 months (goal 5-8 ng/mL); labs the morning before the dose",
                "Check with the transplant pharmacist before any new medicine, herbal product or supplement (for example St. John's wort, grapefruit)",
                "Home blood pressure log; call for readings over 160/100, less urine, swelling, fever or graft tenderness"], neph)
    r.careplan("careplan-mental-health", "718347000", "Mental health care plan (record artifact)", "active", "2020-05-14",
               ["Sertraline daily; do not stop suddenly", "PHQ-9 every 6 months", "Exercise 3 times a week; regular sleep schedule"], psych)
    seen = visits(rng, date(2024, 1, 16), 10, 65, hour=8)
    for index, (enc_id, when) in enumerate(seen):
        r.encounter(enc_id, when, "Transplant follow-up" if index % 3 else "Depression follow-up", neph if index % 3 else psych)
    vitals_history(r, rng, seen, systolic=128, diastolic=80, heart_rate=74, weight=84.0)
    lab_days = [when.date().isoformat() for _, when in seen]
    trough = [6.4, 7.1, 5.8, 9.1, 6.9, 6.2, 7.4, 5.9, 6.6, 6.8]
    lab_series(r, "tacro", "11253-4", "Tacrolimus [Mass/volume] in Blood", "ng/mL", list(zip(lab_days, trough)), high=8, low=5)
    creat = [1.3, 1.2, 1.3, 1.4, 1.3, 1.2, 1.3, 1.2, 1.3, 1.3]
    lab_series(r, "creat", "2160-0", "Creatinine [Mass/volume] in Serum or Plasma", "mg/dL", list(zip(lab_days, creat)), high=1.3)
    lab_series(r, "egfr", "33914-3", "Glomerular filtration rate/1.73 sq M.predicted", "mL/min/{1.73_m2}",
               list(zip(lab_days[::3], [66, 62, 67, 65])), low=60)
    lab_series(r, "k", "2823-3", "Potassium [Moles/volume] in Serum or Plasma", "mmol/L", list(zip(lab_days[::2], [4.6, 4.9, 4.4, 4.8, 4.7])), high=5.1)
    lab_series(r, "mg", "19123-9", "Magnesium [Mass/volume] in Serum or Plasma", "mg/dL", list(zip(lab_days[::2], [1.7, 1.6, 1.8, 1.7, 1.8])), low=1.7)
    lab_series(r, "wbc", "6690-2", "Leukocytes [#/volume] in Blood by Automated count", "10*3/uL", list(zip(lab_days[::3], [5.9, 6.3, 5.4, 6.1])))
    lab_series(r, "phq9", "44261-6", "Patient Health Questionnaire 9 item (PHQ-9) total score [Reported]", "{score}",
               [("2024-03-12", 14), ("2024-09-17", 8), ("2025-06-10", 5), ("2025-12-09", 4)])
    r.observation("obs-creat-error", "2160-0", "Creatinine [Mass/volume] in Serum or Plasma", "2025-10-14", 4.8, "mg/dL", "laboratory",
                  status="entered-in-error")
    tz = "-05:00"
    sessions = [
        {"at": f"2026-01-07T19:05:00{tz}", "turns": [
            ("coach", "Hey Jamal! I'm Marisol, your coach. What are you hoping to work on?"),
            ("patient", "hey! honestly sleep and getting back to the gym. I teach middle school band so my days are loud and long lol"),
            ("coach", "Ha, I bet. What does your week look like for exercise right now?"),
            ("patient", "basically zero since thanksgiving. I was doing 3x a week before, weights and the bike"),
            ("coach", "Let's aim to get back to that. Would 2 gym days this week feel doable?"),
            ("patient", "yeah monday and thursday after rehearsal"),
            ("coach", "Great. And for sleep, what time do you usually get to bed?"),
            ("patient", "like 12:30 grading stuff. alarm's at 6 😬"),
        ], "memories": [(4, "Exercised 3 times a week before Thanksgiving; none since"), (6, "Goal: gym Monday and Thursday after rehearsal"),
                        (8, "Usually in bed at 12:30 with a 6:00 alarm")]},
        {"at": f"2026-01-14T19:20:00{tz}", "turns": [
            ("coach", "Hi Jamal! Did the gym days happen?"),
            ("patient", "both! legs are dead lol"),
            ("coach", "Nice work. How's the eating on busy days?"),
            ("patient", "not great, vending machine at school. I do take my anti rejection meds at 8 and 8 like clockwork tho, phone alarm, never miss"),
            ("coach", "That's a great routine. Could you use the same trick for a packed lunch?"),
            ("patient", "lol maybe. sunday meal prep, chicken and rice"),
            ("coach", "Simple and solid. Let me know how it goes."),
        ], "traps": [([4], "Takes the anti-rejection medicines every 12 hours, which agrees with the record.")],
           "memories": [(6, "Plans Sunday meal prep (chicken and rice) to avoid the vending machine")]},
        {"at": f"2026-01-21T19:10:00{tz}", "turns": [
            ("coach", "Hey Jamal, how was the week?"),
            ("patient", "pretty good actually. mood's been good so I stopped the zoloft like 3 weeks ago"),
            ("coach", "Thanks for sharing that. Did you talk it over with Dr. Fischer first?"),
            ("patient", "nah. I felt fine and didn't want to be on it forever. I do get these weird dizzy zaps in my head sometimes"),
            ("coach", "Those zaps can happen when sertraline is stopped suddenly. It would really help to call Dr. Fischer's office this week so you can plan it together."),
            ("patient", "ok fair, I'll message him on the portal"),
        ], "scenario": {"turns": [2, 4], "kind": "contradiction", "category": "medication",
                        "summary": "Stopped sertraline on his own about 3 weeks ago; now has dizzy 'brain zaps'.",
                        "severity": "medium", "safety_critical": False,
                        "refs": [("MedicationRequest", "medrx-sertraline-100"), ("Condition", "cond-mdd")]}},
        {"at": f"2026-01-28T19:30:00{tz}", "turns": [
            ("coach", "Hi Jamal! How's everything?"),
            ("patient", "busy. my mom's lupus flared so I've been driving her to appointments"),
            ("coach", "That's a lot on your plate. How is she?"),
            ("patient", "better. they put her on prednisone 40 a day, way more than my little 5. we joke we're prednisone buddies now lol"),
            ("coach", "Glad she's improving, and good that you can laugh about it. Did you get any gym time?"),
            ("patient", "once. but I walked a lot at the hospital haha"),
            ("coach", "That counts! Let's aim for 2 again next week."),
        ], "traps": [([4], "The mother's prednisone 40 mg; his own 5 mg agrees with the record.")],
           "memories": [(2, "Driving his mother to appointments for her lupus flare")]},
        {"at": f"2026-02-04T19:15:00{tz}", "turns": [
            ("coach", "Hey Jamal, how are you doing?"),
            ("patient", "ok. Dr Fischer hasn't answered yet. in the meantime I got st johns wort from the health food store, the natural mood thing. 2 capsules a day for about 2 weeks now"),
            ("coach", "Thanks for telling me. St. John's wort interacts with a lot of medicines, including transplant medicines. Your care plan says to check with the transplant pharmacist before any supplement. Could you call the transplant team tomorrow?"),
            ("patient", "wait really? it's just a plant"),
            ("coach", "It really can lower the levels of some anti-rejection drugs. Please don't take more until you've talked to them."),
            ("patient", "dang ok. calling tomorrow morning before school"),
        ], "scenario": {"turns": [2], "kind": "gap", "category": "medication",
                        "summary": "Taking St. John's wort 2 capsules a day for 2 weeks while on tacrolimus (and after stopping sertraline).",
                        "severity": "high", "safety_critical": True,
                        "refs": [("MedicationRequest", "medrx-tacrolimus"), ("Condition", "cond-kidney-tx"), ("CarePlan", "careplan-transplant")]}},
        {"at": f"2026-02-11T19:05:00{tz}", "turns": [
            ("coach", "Hi Jamal, did you reach the transplant team?"),
            ("patient", "yeah they told me to stop it and come in for labs friday. I stopped"),
            ("coach", "Good. How are you feeling?"),
            ("patient", "fine honestly. no fevers, no pain over the kidney, I check like they taught me"),
            ("coach", "Great to hear. Keep doing those checks. Gym this week?"),
            ("patient", "twice! and bed by 11:30 three nights"),
            ("coach", "Progress on both fronts!"),
        ], "traps": [([4], "Negations: no fever and no graft tenderness.")],
           "memories": [(6, "Went to the gym twice and was in bed by 11:30 three nights")]},
        {"at": f"2026-02-18T19:25:00{tz}", "turns": [
            ("coach", "Hey Jamal! How's the week going?"),
            ("patient", "kinda stressed. my home blood pressure has been high, 164/102 sunday and 158/98 this morning. usually I'm like 125/80"),
            ("coach", "Thanks for tracking it. Your plan says to call for readings over 160/100, so please call the transplant office tomorrow and share those numbers."),
            ("patient", "could be the stress from concert season"),
            ("coach", "Maybe, but they'd want to know either way. Writing the readings down with the times helps."),
            ("patient", "ok I'll call"),
        ], "scenario": {"turns": [2], "kind": "gap", "category": "observation",
                        "summary": "Home blood pressure 164/102 and 158/98 (usually about 125/80).",
                        "severity": "medium", "safety_critical": False,
                        "refs": [("Observation", "obs-bp-10"), ("Condition", "cond-htn"), ("MedicationRequest", "medrx-amlodipine")]}},
        {"at": f"2026-02-25T19:10:00{tz}", "turns": [
            ("coach", "Hi Jamal, how are you?"),
            ("patient", "not great. I'm peeing way less than normal the last few days and my ankles are puffy. scale is up 5 lbs"),
            ("coach", "I'm glad you told me. Less urine, swelling and weight gain are on your transplant team's list of things to call about right away. Can you call them tonight? They have an on-call line."),
            ("patient", "tonight? it's late"),
            ("coach", "That's what the on-call line is for. This is important for your kidney."),
            ("patient", "ok calling now"),
        ], "scenario": {"turns": [2], "kind": "gap", "category": "condition",
                        "summary": "Passing much less urine for several days, new ankle swelling and 5 lb weight gain after a transplant.",
                        "severity": "high", "safety_critical": True,
                        "refs": [("Condition", "cond-kidney-tx"), ("Observation", "obs-creat-10"), ("MedicationRequest", "medrx-tacrolimus")]}},
        {"at": f"2026-03-04T19:20:00{tz}", "turns": [
            ("coach", "Hi Jamal, how did things go after you called?"),
            ("patient", "they had me come in, labs and an ultrasound. still waiting on some stuff. feeling a bit better"),
            ("coach", "I'm glad you went in. How's your mood been?"),
            ("patient", "ok. Dr Fischer and I have an appointment next week. if the low mood comes back I might ask about going back on the zoloft, we'll see"),
            ("coach", "That sounds like a good conversation to have with him."),
            ("patient", "yeah"),
        ], "traps": [([4], "Hypothetical restart of sertraline; nothing decided.")],
           "memories": [(4, "Has an appointment with Dr. Fischer next week")]},
        {"at": f"2026-03-11T19:05:00{tz}", "turns": [
            ("coach", "Hey Jamal! How's concert season?"),
            ("patient", "spring concert was last night!! the 7th graders killed it"),
            ("coach", "Congratulations! How are you holding up?"),
            ("patient", "tired but happy. gym 2x this week and I've been doing the phone in the other room thing at night"),
            ("coach", "That's a great sleep habit. Want to keep 2 gym days and add a walk on the weekend?"),
            ("patient", "deal 👍"),
        ], "memories": [(4, "Keeps his phone in another room at night to sleep better"),
                        (6, "Goal: 2 gym days plus a weekend walk")]},
    ]
    return r, sessions


PATIENTS = [("walter-ostrowski", walter), ("denise-arbogast", denise), ("jamal-whitfield", jamal)]


if __name__ == "__main__":
    main()

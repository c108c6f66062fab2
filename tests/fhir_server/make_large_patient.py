"""Generate tests/data/fhir/large_patient.json: one synthetic patient with 2,000+ resources (deterministic).

Run: python tests/fhir_server/make_large_patient.py   (the output is committed; rerunning rewrites it identically)

The record is 12 years of a type 2 diabetic with hypertension and CKD: ~1,800 observations of vitals and
labs, encounters, conditions (some resolved, one entered-in-error), medications (active, stopped, one
entered-in-error), allergies (one inactive), immunizations, procedures and care plans. One Observation,
`obs-offspec-1`, is deliberately off-spec (a string valueQuantity.value and an unknown element) so that the
record pull can prove it tolerates such resources.
"""
from __future__ import annotations

import json
import random
import uuid
from datetime import date, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "data" / "fhir" / "large_patient.json"
PATIENT_ID = "pt-large-harlan-voss"
SNOMED, RXNORM, LOINC, CVX = "http://snomed.info/sct", "http://www.nlm.nih.gov/research/umls/rxnorm", "http://loinc.org", "http://hl7.org/fhir/sid/cvx"
UCUM = "http://unitsofmeasure.org"
START = date(2014, 1, 6)
END = date(2026, 1, 12)

# (loinc, display, unit, mean, sd, decimals, category)
VITALS = [
    ("8480-6", "Systolic blood pressure", "mm[Hg]", 142, 12, 0),
    ("8462-4", "Diastolic blood pressure", "mm[Hg]", 86, 8, 0),
    ("8867-4", "Heart rate", "/min", 74, 8, 0),
    ("29463-7", "Body weight", "kg", 98, 3, 1),
    ("39156-5", "Body mass index (BMI) [Ratio]", "kg/m2", 31.5, 1, 1),
]
LABS = [
    ("4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood", "%", 7.8, 0.7, 1),
    ("2339-0", "Glucose [Mass/volume] in Blood", "mg/dL", 152, 30, 0),
    ("2160-0", "Creatinine [Mass/volume] in Serum or Plasma", "mg/dL", 1.5, 0.2, 2),
    ("33914-3", "Glomerular filtration rate/1.73 sq M.predicted", "mL/min/{1.73_m2}", 48, 6, 0),
    ("2823-3", "Potassium [Moles/volume] in Serum or Plasma", "mmol/L", 4.6, 0.4, 1),
    ("2951-2", "Sodium [Moles/volume] in Serum or Plasma", "mmol/L", 139, 2, 0),
    ("2093-3", "Cholesterol [Mass/volume] in Serum or Plasma", "mg/dL", 188, 20, 0),
    ("13457-7", "Cholesterol in LDL [Mass/volume] in Serum or Plasma by calculation", "mg/dL", 104, 18, 0),
    ("14959-1", "Microalbumin/Creatinine [Mass Ratio] in Urine", "mg/g", 85, 25, 0),
    ("718-7", "Hemoglobin [Mass/volume] in Blood", "g/dL", 12.9, 0.8, 1),
]
CONDITIONS = [
    ("44054006", "Diabetes mellitus type 2", "active", "2011-03-02"),
    ("38341003", "Hypertensive disorder, systemic arterial", "active", "2009-07-15"),
    ("431856006", "Chronic kidney disease stage 2", "resolved", "2015-05-20"),
    ("433144002", "Chronic kidney disease stage 3", "active", "2019-02-11"),
    ("55822004", "Hyperlipidemia", "active", "2012-10-01"),
    ("162864005", "Body mass index 30+ - obesity", "active", "2014-01-06"),
    ("195662009", "Acute viral pharyngitis", "resolved", "2016-12-02"),
    ("10509002", "Acute bronchitis", "resolved", "2018-02-14"),
    ("444814009", "Viral sinusitis", "resolved", "2020-11-03"),
    ("239873007", "Osteoarthritis of knee", "active", "2021-06-08"),
    ("78275009", "Obstructive sleep apnea syndrome", "active", "2017-09-19"),
    ("35489007", "Depressive disorder", "resolved", "2016-04-12"),
    ("90560007", "Gout", "active", "2022-08-30"),
    ("40055000", "Chronic sinusitis", "resolved", "2013-05-05"),
    ("302870006", "Hypertriglyceridemia", "active", "2015-08-08"),
    ("271737000", "Anemia", "entered-in-error", "2020-01-10"),
]
# (rxnorm, display, status, start, end-or-None)
MEDICATIONS = [
    ("860975", "metformin hydrochloride 500 MG Extended Release Oral Tablet", "stopped", "2011-03-02", "2019-02-11"),
    ("861007", "metformin hydrochloride 500 MG Oral Tablet", "active", "2019-02-11", None),
    ("314076", "lisinopril 10 MG Oral Tablet", "stopped", "2009-07-15", "2017-03-01"),
    ("314077", "lisinopril 20 MG Oral Tablet", "active", "2017-03-01", None),
    ("197361", "amlodipine 5 MG Oral Tablet", "active", "2018-06-12", None),
    ("617311", "atorvastatin 40 MG Oral Tablet", "active", "2012-10-01", None),
    ("310798", "hydrochlorothiazide 25 MG Oral Tablet", "stopped", "2013-01-20", "2019-02-11"),
    ("1373463", "canagliflozin 100 MG Oral Tablet", "stopped", "2016-05-01", "2018-09-01"),
    ("1991306", "semaglutide 0.25 MG/DOSE Pen Injector", "active", "2023-03-14", None),
    ("197319", "allopurinol 100 MG Oral Tablet", "active", "2022-08-30", None),
    ("312941", "sertraline 50 MG Oral Tablet", "completed", "2016-04-12", "2017-10-12"),
    ("197807", "ibuprofen 800 MG Oral Tablet", "stopped", "2021-06-08", "2021-07-01"),
    ("313782", "acetaminophen 325 MG Oral Tablet", "active", "2021-07-01", None),
    ("308182", "amoxicillin 250 MG Oral Capsule", "completed", "2016-12-02", "2016-12-12"),
    ("243670", "aspirin 81 MG Oral Tablet", "entered-in-error", "2020-01-10", None),
]
ALLERGIES = [
    ("91936005", "Allergy to penicillin", "active", "high"),
    ("300916003", "Latex allergy", "active", "low"),
    ("418689008", "Allergy to grass pollen", "inactive", "low"),
    ("294505008", "Allergy to sulfonamide", "active", "high"),
]
VACCINES = [("140", "Influenza, seasonal, injectable, preservative free"), ("133", "Pneumococcal conjugate PCV 13"),
            ("33", "Pneumococcal polysaccharide PPV23"), ("115", "Tdap"), ("208", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose"),
            ("43", "Hepatitis B, adult dosage"), ("187", "Zoster vaccine recombinant")]
PROCEDURES = [("252779009", "Single bright light pattern electroretinography"), ("401191002", "Monofilament foot sensation test"),
              ("73761001", "Colonoscopy"), ("268556000", "Diabetic retinopathy screening"), ("430193006", "Medication reconciliation")]


def coding(system: str, code: str, display: str) -> dict:
    return {"coding": [{"system": system, "code": code, "display": display}], "text": display}


def main() -> None:
    rng = random.Random(20260112)
    patient_ref = {"reference": f"Patient/{PATIENT_ID}"}
    resources: list[dict] = [
        {"resourceType": "Practitioner", "id": "prac-large-1", "name": [{"prefix": ["Dr."], "given": ["Miriam"], "family": "Castellanos"}]},
        {"resourceType": "Practitioner", "id": "prac-large-2", "name": [{"prefix": ["Dr."], "given": ["Tobias"], "family": "Lindqvist"}]},
        {"resourceType": "Patient", "id": PATIENT_ID, "gender": "male", "birthDate": "1957-10-21",
         "name": [{"use": "official", "given": ["Harlan", "J."], "family": "Voss"}],
         "address": [{"city": "Duluth", "state": "MN", "country": "US"}]},
    ]
    # Visits: roughly monthly, each with vitals; labs every third visit.
    encounters, day, n = [], START, 0
    while day <= END:
        n += 1
        enc_id = f"enc-{n:04d}"
        start = datetime(day.year, day.month, day.day, 9, rng.randrange(0, 50))
        encounters.append((enc_id, start))
        resources.append({
            "resourceType": "Encounter", "id": enc_id, "status": "finished",
            "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB", "display": "ambulatory"},
            "type": [coding(SNOMED, "185349003", "Encounter for check up")], "subject": patient_ref,
            "participant": [{"individual": {"reference": f"Practitioner/prac-large-{1 + n % 2}"}}],
            "period": {"start": start.isoformat() + "Z", "end": (start + timedelta(minutes=25)).isoformat() + "Z"},
        })
        day += timedelta(days=rng.choice([24, 28, 31, 35, 42]))
    obs_n = 0

    def observation(code: str, display: str, unit: str, value: float, when: datetime, enc_id: str, category: str) -> dict:
        nonlocal obs_n
        obs_n += 1
        return {
            "resourceType": "Observation", "id": f"obs-{obs_n:05d}", "status": "final",
            "category": [coding("http://terminology.hl7.org/CodeSystem/observation-category", category, category.replace("-", " ").title())],
            "code": coding(LOINC, code, display), "subject": patient_ref, "encounter": {"reference": f"Encounter/{enc_id}"},
            "effectiveDateTime": when.isoformat() + "Z", "issued": (when + timedelta(hours=2)).isoformat() + "Z",
            "valueQuantity": {"value": value, "unit": unit, "system": UCUM, "code": unit},
        }

    for index, (enc_id, when) in enumerate(encounters):
        drift = index / max(len(encounters), 1)
        for code, display, unit, mean, sd, decimals in VITALS:
            value = round(rng.gauss(mean - 8 * drift if code == "8480-6" else mean, sd), decimals)
            resources.append(observation(code, display, unit, value, when, enc_id, "vital-signs"))
        if index % 3 == 0:
            for code, display, unit, mean, sd, decimals in LABS:
                value = round(max(rng.gauss(mean, sd), 0.1), decimals)
                resources.append(observation(code, display, unit, value, when + timedelta(minutes=30), enc_id, "laboratory"))
    # Home glucose readings between visits fill the history to ~1,800 observations.
    while obs_n < 1800:
        when = datetime.combine(START, datetime.min.time()) + timedelta(days=rng.randrange((END - START).days), hours=7)
        enc_id = encounters[rng.randrange(len(encounters))][0]
        resources.append(observation("2339-0", "Glucose [Mass/volume] in Blood", "mg/dL", round(rng.gauss(148, 28)), when, enc_id, "laboratory"))
    resources.append({
        "resourceType": "Observation", "id": "obs-offspec-1", "status": "final", "vendorFlag": True,
        "code": coding(LOINC, "4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood"), "subject": patient_ref,
        "effectiveDateTime": "2025-12-01T09:00:00Z", "valueQuantity": {"value": "7.4", "unit": "%"},
    })
    resources.append({
        "resourceType": "Observation", "id": "obs-error-1", "status": "entered-in-error",
        "code": coding(LOINC, "2823-3", "Potassium [Moles/volume] in Serum or Plasma"), "subject": patient_ref,
        "effectiveDateTime": "2025-11-03T09:00:00Z", "valueQuantity": {"value": 7.9, "unit": "mmol/L", "system": UCUM, "code": "mmol/L"},
    })
    for i, (code, display, status, onset) in enumerate(CONDITIONS, 1):
        condition = {
            "resourceType": "Condition", "id": f"cond-{i:03d}",
            "category": [coding("http://terminology.hl7.org/CodeSystem/condition-category", "problem-list-item", "Problem List Item")],
            "code": coding(SNOMED, code, display), "subject": patient_ref, "onsetDateTime": onset, "recordedDate": onset,
        }
        if status == "entered-in-error":
            condition["verificationStatus"] = coding("http://terminology.hl7.org/CodeSystem/condition-ver-status", "entered-in-error", "Entered in Error")
        else:
            condition["clinicalStatus"] = coding("http://terminology.hl7.org/CodeSystem/condition-clinical", status, status.title())
            condition["verificationStatus"] = coding("http://terminology.hl7.org/CodeSystem/condition-ver-status", "confirmed", "Confirmed")
            if status == "resolved":
                condition["abatementDateTime"] = (date.fromisoformat(onset) + timedelta(days=rng.randrange(10, 900))).isoformat()
        resources.append(condition)
    for i, (code, display, status, start, end) in enumerate(MEDICATIONS, 1):
        med = {
            "resourceType": "MedicationRequest", "id": f"medrx-{i:03d}", "status": status, "intent": "order",
            "medicationCodeableConcept": coding(RXNORM, code, display), "subject": patient_ref, "authoredOn": start,
            "requester": {"reference": "Practitioner/prac-large-1"},
            "dosageInstruction": [{"text": "Take as directed", "timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}}}],
        }
        if end:
            med["dispenseRequest"] = {"validityPeriod": {"start": start, "end": end}}
        resources.append(med)
        # Refill history: a MedicationStatement per year while the medication was taken.
        stop = date.fromisoformat(end) if end else END
        year = date.fromisoformat(start).year
        while status != "entered-in-error" and year <= min(stop.year, END.year) and year >= START.year - 3:
            resources.append({
                "resourceType": "MedicationStatement", "id": f"medstmt-{i:03d}-{year}",
                "status": "active" if (not end and year == END.year) else "completed",
                "medicationCodeableConcept": coding(RXNORM, code, display), "subject": patient_ref,
                "effectivePeriod": {"start": f"{year}-01-01", "end": f"{year}-12-31"},
                "dateAsserted": f"{year}-12-31",
            })
            year += 1
    for i, (code, display, status, criticality) in enumerate(ALLERGIES, 1):
        resources.append({
            "resourceType": "AllergyIntolerance", "id": f"allergy-{i:03d}",
            "clinicalStatus": coding("http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", status, status.title()),
            "verificationStatus": coding("http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", "confirmed", "Confirmed"),
            "type": "allergy", "criticality": criticality, "code": coding(SNOMED, code, display), "patient": patient_ref,
        })
    imm = 0
    for year in range(START.year, END.year + 1):
        for cvx, display in ([VACCINES[0]] + ([VACCINES[4]] if year >= 2021 else [])):
            imm += 1
            resources.append({
                "resourceType": "Immunization", "id": f"imm-{imm:03d}", "status": "completed",
                "vaccineCode": coding(CVX, cvx, display), "patient": patient_ref, "occurrenceDateTime": f"{year}-10-{rng.randrange(1, 28):02d}",
                "primarySource": True,
            })
    for cvx, display in VACCINES[1:4] + VACCINES[5:]:
        imm += 1
        resources.append({"resourceType": "Immunization", "id": f"imm-{imm:03d}", "status": "completed", "vaccineCode": coding(CVX, cvx, display),
                          "patient": patient_ref, "occurrenceDateTime": f"{rng.randrange(2014, 2025)}-05-{rng.randrange(1, 28):02d}", "primarySource": True})
    for i in range(24):
        code, display = PROCEDURES[i % len(PROCEDURES)]
        enc_id, when = encounters[(i * 7) % len(encounters)]
        resources.append({"resourceType": "Procedure", "id": f"proc-{i + 1:03d}", "status": "completed", "code": coding(SNOMED, code, display),
                          "subject": patient_ref, "encounter": {"reference": f"Encounter/{enc_id}"}, "performedDateTime": when.isoformat() + "Z"})
    for i, (code, display, status) in enumerate([("698360004", "Diabetes self management plan", "active"),
                                                 ("443402002", "Lifestyle education regarding hypertension", "active"),
                                                 ("736690008", "Dementia care plan", "entered-in-error"),
                                                 ("734163000", "Care plan", "completed")], 1):
        resources.append({"resourceType": "CarePlan", "id": f"careplan-{i:03d}", "status": status, "intent": "plan",
                          "category": [coding(SNOMED, code, display)], "subject": patient_ref, "period": {"start": "2019-02-11"}})
    bundle = {"resourceType": "Bundle", "id": "large-patient", "type": "collection",
              "entry": [{"fullUrl": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, r['resourceType'] + '/' + r['id'])}", "resource": r}
                        for r in resources]}
    OUT.write_text(json.dumps(bundle, separators=(",", ":")) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for r in resources:
        counts[r["resourceType"]] = counts.get(r["resourceType"], 0) + 1
    print(f"{OUT.name}: {len(resources)} resources, {OUT.stat().st_size / 1e6:.2f} MB", counts)


if __name__ == "__main__":
    main()

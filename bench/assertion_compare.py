"""Assertion and subject: medspaCy ConText with chat rules (narrative/assertion) against the engine's own context.py.

    python bench/assertion_compare.py                      # dev, demo and every tune patient present
    python bench/assertion_compare.py --only tune --detail # plus every disagreement with the labels (tune split only)

Labelled turns: a scenario's patient turns state the patient's own affirmed fact; a trap's patient turns about another
person, a negation, a hypothetical or hearsay must not yield the patient's affirmed fact (traps that agree with the record
or retell a recorded past event are not assertion traps and are left out). A turn's clinical targets are the terminology
lexicon's hits (with the record's own names); only targets the label's text names are scored (the label's summary or
reason and, for scenarios, the cited resources), so a trap turn's other, correct facts do not count against it.
Scores per implementation: scenario turns with a named target read patient+affirmed (higher is better); trap turns with a
named target read patient+affirmed (lower is better), by trap class; and sentences/s of the assertion call alone.
Sealed patients are never read: the tune list excludes them by name.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconcile_app.fhir.clinical import build_clinical_record, resources_from_bundle  # noqa: E402
from reconcile_app.narrative.assertion import default_context  # noqa: E402
from reconcile_app.terminology.lexicon import default_lexicon, lower_same_length, normalize_phrase, record_overlay  # noqa: E402

SEALED = frozenset({"eli", "fay", "jon", "kit"})
TUNE_AUTHORS = ("ava", "ben", "cal", "dee", "gus", "hal", "ivy")
CORPUS_BUILD = Path("/work/corpus_build")
TRAP_CLASSES = ("other", "negation", "hypothetical", "hearsay")
HEADLINE_TRAPS = ("other", "negation", "hypothetical")

# Trap class from the label's reason, first match wins. These read the labels, never the engine's input.
_TRAP_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("skip", re.compile(r"\bcoach('s)?\b.*\b(names|quotes|mentions|restates|raises|brings up|remark|reminder|own words)", re.I)),
    ("negation", re.compile(r"^\W*(a )?negation\b|\bdenies\b", re.I)),
    ("hypothetical", re.compile(r"hypothetical|conditional|\b(only )?a plan\b|future (plan|question)|possible future|"
                                r"intends to|would ask|might ask|may ask", re.I)),
    ("hearsay", re.compile(r"hearsay|social[- ]media|\bclaim\b|advertisement|article|forum|tiktok|facebook|youtube", re.I)),
    ("skip", re.compile(r"\bagree|\bmatch(es)? (the|both|its)|already (in|on) the record|already recorded", re.I)),
    ("other", re.compile(r"another person|not (the patient|his|hers|her own|his own|hers)\b|belongs? to|are (his|her) \w+'s|"
                         r"is (his|her) \w+'s|'s, not|(husband|wife|son|daughter|mother|father|brother|sister|sponsor|"
                         r"friend|baby|mother-in-law|brother-in-law)'s\b", re.I)),
    ("negation", re.compile(r"\bno (falls|bleeding|new|fever|leg|palpitations|panic)", re.I)),
]


def trap_class(why: str) -> str:
    for name, pattern in _TRAP_RULES:
        if pattern.search(why):
            return name
    return "skip"  # agreements with the record and retold recorded events are no assertion traps


def datasets(only: str) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    if only in ("all", "dev"):
        out += [("dev", p) for p in sorted((ROOT.parent / "shared" / "eval" / "dev").glob("*/labels.json"))]
    if only in ("all", "demo"):
        out += [("demo", p) for p in sorted((ROOT / "reconcile_app" / "sandbox" / "demo_data").glob("*/labels.json"))]
    if only in ("all", "tune"):
        tune = ROOT / "corpus" / "tune"
        if tune.is_dir():
            out += [("tune", p) for p in sorted(tune.glob("*/labels.json"))]
        else:
            for author in TUNE_AUTHORS:
                assert author not in SEALED
                out += [("tune", p) for p in sorted((CORPUS_BUILD / author / "out").glob(f"{author}*/labels.json"))]
    return [(group, p.parent) for group, p in out if (p.parent / "transcript.json").exists()]


# ---- the two implementations behind one call --------------------------------------------------------------

@dataclass
class Sent:
    text: str  # original case
    low: str
    tokens: list[tuple[str, int, int]]
    names_tok: set[int]
    names_chr: list[tuple[int, int]]
    targets: list[tuple[int, int, int, int, str, frozenset[str]]]  # char start, end, tok start, tok end, surface, canonicals


def _engine_helpers() -> tuple[Callable, Callable | None, Any]:
    """Sentence splitting and the name finder of the rules engine (read only; they move with the engine's restructure)."""
    from reconcile_app.narrative.engines import context as own
    try:
        from reconcile_app.narrative.engines.clauses import split_sentences
    except ImportError:  # pragma: no cover - after the engine's restructure
        from reconcile_app.narrative.engines.rules.clauses import split_sentences  # type: ignore[no-redef]
    try:
        from reconcile_app.narrative.engines.rules import _names
    except ImportError:  # pragma: no cover
        _names = None
    return split_sentences, _names, own


def own_verdicts(own: Any, sent: Sent) -> list[tuple[bool, str]]:
    words = own.mark_clause_final([t for t, _, _ in sent.tokens], sent.tokens, sent.low)
    triggers = own.find_assertion_triggers(words)
    skip = {i for t in sent.targets for i in range(t[2], t[3])}
    people = own.find_people(words, sent.names_tok, False, skip=skip)
    out = []
    for _, _, ts, te, _, _ in sent.targets:
        res = own.assess(words, ts, te, triggers=triggers, people=people)
        out.append((res.subject == "patient" and res.assertion == "affirmed", f"{res.subject}/{res.assertion} {res.triggers}"))
    return out


def medspacy_verdicts(ctx: Any, sent: Sent, frame: Any) -> list[tuple[bool, str]]:
    res = ctx.assert_targets(sent.text, [(t[0], t[1]) for t in sent.targets], names=sent.names_chr, frame=frame)
    return [(a.is_patient_affirmed, f"{a.subject}/{'neg ' if a.negated else ''}{'hyp ' if a.hypothetical else ''}"
             f"{'hist ' if a.historical else ''}{'unc ' if a.uncertain else ''}{list(a.cues)}") for a in res]


# ---- reading a patient ------------------------------------------------------------------------------------

def _label_canonicals(lex: Any, text: str, overlay: dict) -> tuple[set[str], str]:
    low = lower_same_length(text)
    return {e.canonical for h in lex.match(low, None, overlay) for e in h.entries}, " " + normalize_phrase(text) + " "


def _resource_words(bundle: dict, ids: set[str]) -> str:
    words = []
    for entry in bundle.get("entry", []):
        res = entry.get("resource", {})
        if res.get("id") in ids:
            for key in ("code", "medicationCodeableConcept", "vaccineCode"):
                concept = res.get(key) or {}
                words.append(concept.get("text", ""))
                words += [c.get("display", "") for c in concept.get("coding", [])]
    return " ".join(w for w in words if w)


@dataclass
class Tally:
    turns: Counter = field(default_factory=Counter)  # (kind, class) -> labelled turns with a named target
    hits: Counter = field(default_factory=Counter)  # (impl, kind, class) -> turns read patient+affirmed
    no_target: Counter = field(default_factory=Counter)
    sentences: int = 0
    patient_turns: int = 0
    seconds: Counter = field(default_factory=Counter)


def score_patient(folder: Path, group: str, lex: Any, helpers: tuple, ctx: Any, tally: Tally, detail: bool) -> None:
    split_sentences, names_fn, own = helpers
    bundle = json.loads((folder / "bundle.json").read_text(encoding="utf-8"))
    transcript = json.loads((folder / "transcript.json").read_text(encoding="utf-8"))
    labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    overlay = record_overlay(build_clinical_record(resources_from_bundle(bundle)), lex)
    wanted: dict[str, list[tuple[str, str, set[str], str]]] = defaultdict(list)  # turn -> (kind, class, canon, text)
    for sc in labels.get("scenarios", []):
        refs = {r.get("id", "") for r in sc.get("fhir_refs", [])}
        text = sc.get("summary", "") + " " + _resource_words(bundle, refs)
        canon, norm = _label_canonicals(lex, text, overlay)
        for tid in sc.get("turn_ids", []):
            wanted[tid].append(("scenario", "fact", canon, norm))
    for trap in labels.get("traps", []):
        cls = trap_class(trap.get("why", ""))
        if cls == "skip":
            continue
        canon, norm = _label_canonicals(lex, trap.get("why", ""), overlay)
        for tid in trap.get("turn_ids", []):
            wanted[tid].append(("trap", cls, canon, norm))
    for session in transcript.get("sessions", []):
        for turn in session.get("turns", []):
            if turn.get("speaker") != "patient":
                continue
            text = turn.get("text") or ""
            tally.patient_turns += 1
            sents = _sentences(text, lex, overlay, split_sentences, names_fn)
            frame = ctx.speaker_frame(text, None, names=[n for s in sents for n in _shift(s)])
            verdicts = _run(sents, own, ctx, frame, tally)
            for kind, cls, canon, norm in wanted.get(turn["id"], []):
                named = [(v_own, v_med, t) for s, vs in zip(sents, verdicts) for t, v_own, v_med in zip(s.targets, *vs)
                         if (t[5] & canon) or f" {t[4]} " in norm]
                if not named:
                    tally.no_target[(group, kind, cls)] += 1
                    continue
                tally.turns[(group, kind, cls)] += 1
                for impl, idx in (("own", 0), ("medspacy", 1)):
                    affirmed = any(v[idx][0] for v in named)
                    tally.hits[(impl, group, kind, cls)] += affirmed
                if detail and (any(v[0][0] for v in named) != any(v[1][0] for v in named)
                                                   or (kind == "trap") == any(v[1][0] for v in named)):
                    print(f"[{folder.name} {turn['id']} {kind}:{cls}] {text[:300]!r}")
                    for v_own, v_med, t in named:
                        print(f"    {t[4]!r}: own={v_own[1]} | medspacy={v_med[1]}")


def _shift(sent: Sent) -> list[tuple[int, int]]:
    return [(sent.offset + s, sent.offset + e) for s, e in sent.names_chr]  # type: ignore[attr-defined]


def _sentences(text: str, lex: Any, overlay: dict, split_sentences: Callable, names_fn: Callable | None) -> list[Sent]:
    low = lower_same_length(text)
    out = []
    for s in split_sentences(low):
        hits = lex.match(s.low, s.tokens, overlay)
        names_tok: set[int] = set()
        if names_fn is not None:
            try:
                names_tok = names_fn(text, s, [t for t, _, _ in s.tokens])
            except Exception:  # noqa: BLE001 - the engine's private helper may change shape during its restructure
                names_tok = set()
        names_chr = [(s.tokens[i][1], s.tokens[i][2] - (2 if s.tokens[i][0].endswith("'s") else 0)) for i in sorted(names_tok)]
        targets = [(h.start, h.end, h.tok_start, h.tok_end, s.low[h.start:h.end], frozenset(e.canonical for e in h.entries))
                   for h in hits]
        sent = Sent(text[s.start:s.end], s.low, s.tokens, names_tok, names_chr, targets)
        sent.offset = s.start  # type: ignore[attr-defined]
        out.append(sent)
    return out


def _run(sents: list[Sent], own: Any, ctx: Any, frame: Any, tally: Tally) -> list[tuple[list, list]]:
    out = []
    for sent in sents:
        if not sent.targets:
            out.append(([], []))
            continue
        tally.sentences += 1
        t0 = time.perf_counter()
        a = own_verdicts(own, sent)
        t1 = time.perf_counter()
        b = medspacy_verdicts(ctx, sent, frame)
        t2 = time.perf_counter()
        tally.seconds["own"] += t1 - t0
        tally.seconds["medspacy"] += t2 - t1
        out.append((a, b))
    return out


def report(tally: Tally, groups: list[str]) -> None:
    def share(impl: str, group: str, kind: str, classes: tuple[str, ...]) -> str:
        n = sum(tally.turns[(group, kind, c)] for c in classes)
        k = sum(tally.hits[(impl, group, kind, c)] for c in classes)
        return f"{k / n:6.1%} ({k}/{n})" if n else "     -"
    print(f"{'group':6} {'measure':34} {'own context.py':>18} {'medspaCy ConText':>18}")
    for group in groups:
        rows = [("scenario turns patient+affirmed ^", "scenario", ("fact",)),
                ("traps taken, other+neg+hyp v", "trap", HEADLINE_TRAPS)]
        rows += [(f"  traps taken: {c}", "trap", (c,)) for c in TRAP_CLASSES]
        for label, kind, classes in rows:
            print(f"{group:6} {label:34} {share('own', group, kind, classes):>18} {share('medspacy', group, kind, classes):>18}")
        missing = sum(v for (g, _, _), v in tally.no_target.items() if g == group)
        print(f"{group:6} {'  labelled turns without a named target':34} {missing:>18}")
    for impl in ("own", "medspacy"):
        secs = tally.seconds[impl]
        print(f"speed  {impl:10} {tally.sentences / secs if secs else 0:8.0f} sentences/s, "
              f"{1000 * secs / max(tally.patient_turns, 1):.3f} ms per patient turn "
              f"({tally.sentences} sentences with targets in {tally.patient_turns} patient turns)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("all", "dev", "demo", "tune"), default="all")
    parser.add_argument("--detail", action="store_true", help="print tune turns where an implementation errs or they differ")
    args = parser.parse_args()
    lex = default_lexicon()
    helpers = _engine_helpers()
    ctx = default_context()
    tally = Tally()
    found = datasets(args.only)
    for group, folder in found:
        score_patient(folder, group, lex, helpers, ctx, tally, args.detail)
    groups = [g for g in ("dev", "demo", "tune") if any(f[0] == g for f in found)]
    print(f"patients: " + ", ".join(f"{g} {sum(1 for f in found if f[0] == g)}" for g in groups))
    report(tally, groups)


if __name__ == "__main__":
    main()

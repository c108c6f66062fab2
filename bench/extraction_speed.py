"""Extraction speed of the default (rules) engine over the dev set in one process: patient turns/s and peak memory.

Usage: python bench/extraction_speed.py [DATASET_DIR] [--repeat N]
Pure Python, no database: reads the dataset folders the way `extract_report` does.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from reconcile_app.terminology import lexicon as lexicon_module  # noqa: E402
from reconcile_app.narrative.engines.devset import load_case, patient_folders  # noqa: E402
from reconcile_app.narrative.engines.rules import RulesExtractor  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", nargs="?", default=str(ROOT.parent / "shared" / "eval" / "dev"))
    parser.add_argument("--repeat", type=int, default=3, help="passes over the dataset (the best is reported)")
    args = parser.parse_args()

    cases = [load_case(folder, with_labels=False) for folder in patient_folders(Path(args.dataset))]
    patient_turns = sum(c.patient_turns for c in cases)
    all_turns = sum(len(s.turns) for c in cases for s in c.sessions)

    tracemalloc.start()
    t0 = time.perf_counter()
    lex = lexicon_module.default_lexicon()  # from the on-disk cache when present, else built from the packages
    lexicon_seconds = time.perf_counter() - t0
    _, lexicon_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    extractor = RulesExtractor(lex)

    def one_pass() -> int:
        count = 0
        for case in cases:
            prior: list = []
            for session in case.sessions:
                drafts = extractor.extract_session(session, prior=prior, record=case.record)
                prior.extend(d for d in drafts if d.is_patient_affirmed)
                count += len(drafts)
        return count

    # Speed is timed untraced (tracemalloc slows Python several times); memory comes from one traced pass.
    best = float("inf")
    memories = 0
    for _ in range(max(1, args.repeat)):
        t1 = time.perf_counter()
        memories = one_pass()
        best = min(best, time.perf_counter() - t1)
    tracemalloc.start()
    one_pass()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    rows = [
        ("engine", f"{extractor.name} {extractor.version}"),
        ("patients / sessions", f"{len(cases)} / {sum(len(c.sessions) for c in cases)}"),
        ("turns (patient / all)", f"{patient_turns} / {all_turns}"),
        ("memories per pass", str(memories)),
        ("lexicon phrases", str(lex.stats.get("phrases"))),
        ("lexicon load s (cache)" if "load_seconds" in lex.stats else "lexicon build s", f"{lexicon_seconds:.2f}"),
        ("lexicon first build s", str(lex.stats.get("build_seconds"))),
        ("extraction s (best pass)", f"{best:.2f}"),
        ("patient turns / s", f"{patient_turns / best:.0f}"),
        ("all turns / s", f"{all_turns / best:.0f}"),
        ("peak traced MB: lexicon load", f"{lexicon_peak / 2**20:.0f}"),
        ("peak traced MB: extraction pass", f"{peak / 2**20:.1f}"),
        ("max RSS MB", f"{rss_mb:.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    print("extraction speed (one process)")
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")


if __name__ == "__main__":
    main()

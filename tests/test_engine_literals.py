"""No tuning to phrasing: no literal of four or more words in engine code or knowledge data occurs in an evaluation transcript."""
from __future__ import annotations

import ast
import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "reconcile_app"
ALLOWLIST = ROOT / "tests" / "data" / "literal_allowlist.json"
WINDOW = 4

# What counts as engine code and knowledge data: both rules engines, the shared terminology, the
# reconciliation tables and matching, the cue data, and the prompts of the LLM engines.
ENGINE_CODE = [
    APP / "narrative" / "engines",
    APP / "reconciliation" / "engines",
    APP / "reconciliation" / "matching.py",
    APP / "reconciliation" / "knowledge.py",
    APP / "reconciliation" / "gate.py",
    APP / "terminology",
]
ENGINE_DATA = [APP / "narrative" / "data", APP / "reconciliation" / "data", APP / "terminology", APP / "narrative" / "prompts",
               APP / "reconciliation" / "prompts"]

# Regex syntax between words: character classes and quantifiers become a space, group and alternation
# boundaries end a fragment (a literal's words are only those that appear next to each other).
_REGEX_GAP = re.compile(r"\\[WsSdDwb][+*?]?|\{\d*,?\d*\}|[+*?^$.]")
_FRAGMENT_BREAK = re.compile(r"[|()\[\]]")
_WORD = re.compile(r"[a-z0-9]+")


def _normal(text: str) -> str:
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("'", "")
    return " ".join(_WORD.findall(text))


def _windows(words: list[str]) -> Iterator[tuple[str, ...]]:
    for i in range(len(words) - WINDOW + 1):
        yield tuple(words[i : i + WINDOW])


def _literal_fragments(value: str) -> Iterator[str]:
    for fragment in _FRAGMENT_BREAK.split(_REGEX_GAP.sub(" ", value)):
        words = _normal(fragment)
        if words.count(" ") >= WINDOW - 1:
            yield words


def _python_literals(path: Path) -> Iterator[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value


def _json_strings(node: object) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("source", "sources", "why_source", "reference"):
                continue  # citations of where an entry comes from are never matched against text
            yield from _json_strings(key)
            yield from _json_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _json_strings(value)


def _files(roots: list[Path], suffixes: tuple[str, ...]) -> Iterator[Path]:
    for root in roots:
        if root.is_file() and root.suffix in suffixes:
            yield root
        elif root.is_dir():
            yield from sorted(p for p in root.rglob("*") if p.suffix in suffixes and "__pycache__" not in p.parts)


def engine_literals() -> Iterator[tuple[str, str]]:
    """(where, normalised fragment of four or more words) for every string in engine code and data."""
    for path in _files(ENGINE_CODE, (".py",)):
        for where, value in _python_literals(path):
            for fragment in _literal_fragments(value):
                yield where, fragment
    for path in _files(ENGINE_DATA, (".json", ".txt")):
        text = path.read_text(encoding="utf-8")
        values = _json_strings(json.loads(text)) if path.suffix == ".json" else iter(text.splitlines())
        for value in values:
            for fragment in _literal_fragments(value):
                yield str(path.relative_to(ROOT)), fragment


def _transcript_texts(data: dict) -> Iterator[str]:
    for session in data.get("sessions", []):
        for turn in session.get("turns", []):
            yield turn.get("text", "")


def evaluation_transcripts() -> Iterator[tuple[str, dict]]:
    """Every evaluation transcript there is: the shared dev set, the corpus (both splits) and the demo data."""
    dev = ROOT.parent / "shared" / "eval" / "dev"
    folders = [dev] if dev.is_dir() else []
    folders += [ROOT / "corpus" / "tune", APP / "sandbox" / "demo_data"]
    for folder in folders:
        for path in sorted(folder.glob("*/transcript.json")):
            yield str(path), json.loads(path.read_text(encoding="utf-8"))
    sealed = ROOT / "corpus" / "sealed" / "sealed.tar.gz"
    if sealed.exists():
        with tarfile.open(sealed, "r:gz") as tar:  # read by the test only, never printed
            for member in tar.getmembers():
                if member.name.endswith("transcript.json"):
                    handle = tar.extractfile(member)
                    if handle is not None:
                        yield "sealed", json.loads(handle.read().decode("utf-8"))


def transcript_windows() -> tuple[set[tuple[str, ...]], int]:
    seen: set[tuple[str, ...]] = set()
    count = 0
    for _, data in evaluation_transcripts():
        count += 1
        for text in _transcript_texts(data):
            seen.update(_windows(_normal(text).split()))
    return seen, count


def allowlist() -> dict[str, str]:
    entries = json.loads(ALLOWLIST.read_text(encoding="utf-8")) if ALLOWLIST.exists() else []
    return {_normal(e["literal"]): e["reason"] for e in entries}


def test_the_allowlist_gives_a_reason_for_every_entry() -> None:
    for literal, reason in allowlist().items():
        assert len(reason.split()) >= 4, f"allowlisted literal {literal!r} needs a reason"


def test_evaluation_transcripts_are_found() -> None:
    _, count = transcript_windows()
    assert count >= 3, "no evaluation transcripts found: the check below would pass vacuously"


def test_no_engine_literal_of_four_or_more_words_occurs_in_an_evaluation_transcript() -> None:
    seen, _ = transcript_windows()
    allowed = allowlist()
    offenders: dict[str, str] = {}
    for where, fragment in engine_literals():
        if fragment in allowed:
            continue
        for window in _windows(fragment.split()):
            if window in seen and " ".join(window) not in allowed:
                offenders.setdefault(" ".join(window), where)
    if offenders:
        listing = "\n".join(f"  {where}: {window!r}" for window, where in sorted(offenders.items(), key=lambda kv: kv[1]))
        pytest.fail(f"{len(offenders)} engine literal(s) of {WINDOW}+ words occur in evaluation transcripts "
                    f"(remove, generalise, or allowlist with a reason in {ALLOWLIST.relative_to(ROOT)}):\n{listing}")

"""Extraction engines behind one interface, chosen by the EXTRACTION_ENGINE setting or per run."""
from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from .base import Extractor

ENGINES = {
    "rules": "reconcile_app.narrative.engines.rules.RulesExtractor",
    "llm": "reconcile_app.narrative.engines.llm.LlmExtractor",
    "hybrid": "reconcile_app.narrative.engines.rules.RulesExtractor",  # hybrid reconciles over rules memories
}

_cache: dict[str, Extractor] = {}


def get_extractor(name: str | None = None) -> Extractor:
    """One instance per process: lexicons are built once per worker, not per task."""
    name = name or settings.EXTRACTION_ENGINE
    if name not in ENGINES:
        raise ValueError(f"unknown extraction engine {name!r}; choose from {sorted(ENGINES)}")
    if name not in _cache:
        _cache[name] = import_string(ENGINES[name])()
    return _cache[name]

"""Reconciliation engines behind one interface, chosen by the RECONCILIATION_ENGINE setting or per run."""
from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from .base import Reconciler

ENGINES = {
    "rules": "reconcile_app.reconciliation.engines.rules.RulesReconciler",
    "llm": "reconcile_app.reconciliation.engines.llm.LlmReconciler",
    "hybrid": "reconcile_app.reconciliation.engines.hybrid.HybridReconciler",
}

_cache: dict[str, Reconciler] = {}


def get_reconciler(name: str | None = None) -> Reconciler:
    name = name or settings.RECONCILIATION_ENGINE
    if name not in ENGINES:
        raise ValueError(f"unknown reconciliation engine {name!r}; choose from {sorted(ENGINES)}")
    if name not in _cache:
        _cache[name] = import_string(ENGINES[name])()
    return _cache[name]

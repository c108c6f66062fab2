"""Fixtures of the narrative tests: the rules extractor without its learned turn detector (pure, no DB)."""
from __future__ import annotations

from reconcile_app.narrative.engines.delta import DeltaDetector
from reconcile_app.narrative.engines.rules import RulesExtractor


def rules_extractor(assertion: str | None = None) -> RulesExtractor:
    """The rules engine without its learned layer: these tests pin down what the sourced rules and cue data read in
    one sentence. The turn detector (a corpus-trained score per turn that may add a 'clinical statement' fallback
    memory for the reconciler's judge to weigh) has its own tests (test_delta.py) and is measured end to end by the
    replay scores; its operating point moves with every retrain, the rules' reading must not."""
    engine = RulesExtractor(assertion=assertion)
    engine.__dict__["_delta"] = DeltaDetector.from_models(None, None)
    return engine

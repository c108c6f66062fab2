"""Fixtures of the narrative tests: the rules extractor without its learned turn detector (pure, no DB)."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from reconcile_app.narrative.engines.delta import DeltaDetector
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import SessionInput, TurnInput


def rules_extractor(assertion: str | None = None) -> RulesExtractor:
    """The rules engine without its learned layer: these tests pin down what the sourced rules and cue data read in
    one sentence. The turn detector (a corpus-trained score per turn that may add a 'clinical statement' fallback
    memory for the reconciler's judge to weigh) has its own tests (test_delta.py) and is measured end to end by the
    replay scores; its operating point moves with every retrain, the rules' reading must not."""
    engine = RulesExtractor(assertion=assertion)
    engine.delta = DeltaDetector.from_models(None, None)
    return engine


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    """The rules extractor of a module's tests (a module that needs another assertion engine defines its own)."""
    return rules_extractor()


def chat(at: datetime, *texts: str) -> SessionInput:
    """One session whose turns alternate coach, patient, coach..., a minute apart from `at`."""
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", at + timedelta(minutes=i), text)
                  for i, text in enumerate(texts))
    return SessionInput("s1", at, turns)

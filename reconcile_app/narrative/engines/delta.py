"""The learned turn detector: how likely a patient turn carries a clinical change the record may lack (a delta).

The rules read what a turn says; this model, trained on the labelled corpus (evaluation/training.py), scores
whether it matters, from the words of the turn and of the coach's question before it plus record-aware features
the rules compute (which kinds of terms it names, whether they are on the patient's record and in what state,
numbers with units, cue families). Every memory of the turn carries the score and the features that drove it
(`attributes["delta"]`); a turn the model is sure about but the rules left without a clinical memory gets one
memory of the category the model predicts, so that reconciliation can look at it (the cascade the dual-stream
paper measures is mostly memories lost here).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reconcile_app.core.linear import LinearModel, load_model
from reconcile_app.narrative.types import Assertion, MemoryCategory, MemoryDraft, SessionInput, Subject, TurnInput

MODEL_DIR = Path(__file__).resolve().parent.parent / "learned"
DETECTOR_PATH = MODEL_DIR / "turn-delta.json"
CATEGORY_PATH = MODEL_DIR / "turn-category.json"

CLINICAL = frozenset({"medication", "condition", "symptom", "allergy", "procedure", "immunization", "measurement", "care_activity"})
# A number with a unit or a reading shape: home readings and doses are what the record is compared with.
_READING = re.compile(r"\b\d{2,3}\s*/\s*\d{2,3}\b|\b\d+(?:\.\d+)?\s*(?:mg|mcg|units?|lbs?|pounds?|kg|kilos?|%|bpm|mmhg|mg/dl|ml)\b")
_QUESTION = re.compile(r"\?")


@dataclass(frozen=True)
class TurnHit:
    """A terminology hit in a turn, as the detector sees it: its kind and, when it names the patient's record, the state."""

    kind: str
    record_state: str = ""  # "active", "historical", "inactive" when the hit names a record entry


def turn_dense(turn_text: str, coach_text: str, hits: Sequence[TurnHit], coach_hits: Sequence[TurnHit],
               drafts: Sequence[MemoryDraft]) -> dict[str, float]:
    """Record-aware features of one patient turn (names only, no text): the same function trains and runs."""
    dense: dict[str, float] = {}
    for h in hits:
        dense[f"hit:{h.kind}"] = 1.0
        if h.record_state:
            dense[f"rec:{h.kind}:{h.record_state}"] = 1.0
    for h in coach_hits:
        dense[f"coach_hit:{h.kind}"] = 1.0
    if _READING.search(turn_text.lower()):
        dense["reading"] = 1.0
    if _QUESTION.search(coach_text):
        dense["coach_asked"] = 1.0
    for d in drafts:
        who = "self" if d.subject == Subject.PATIENT else "other"
        dense[f"mem:{d.category}:{who}:{d.assertion}"] = 1.0
        action = str(d.attributes.get("action") or d.attributes.get("stated_status") or "")
        if action and who == "self":
            dense[f"act:{d.category}:{action}"] = 1.0
        if d.attributes.get("record_ref") and who == "self":
            dense[f"ref:{d.category}"] = 1.0
    return dense


def turn_texts(turn_text: str, coach_text: str) -> dict[str, str]:
    return {"t": turn_text, "c": coach_text}


class DeltaDetector:
    """Scores patient turns; absent model files mean a rules-only engine (the scores are then not attached)."""

    def __init__(self, detector_path: Path = DETECTOR_PATH, category_path: Path = CATEGORY_PATH) -> None:
        self.detector: LinearModel | None = load_model(str(detector_path)) if detector_path.exists() else None
        self.category: LinearModel | None = load_model(str(category_path)) if category_path.exists() else None

    @classmethod
    def from_models(cls, detector: LinearModel | None, category: LinearModel | None) -> DeltaDetector:
        """In-memory models (training scores each fold with a model that never saw it)."""
        self = cls.__new__(cls)
        self.detector, self.category = detector, category
        return self

    @property
    def version(self) -> str:
        return f"delta.{self.detector.fingerprint()[:6]}" if self.detector else "delta.none"

    def annotate(self, session: SessionInput, drafts: list[MemoryDraft], hits_of: dict[str, tuple[list[TurnHit], list[TurnHit]]]) -> list[MemoryDraft]:
        """Attach each patient turn's score to its memories; add a fallback memory where the model is sure and the rules silent."""
        if self.detector is None:
            return drafts
        raw_of = self.turn_inputs(session, drafts, hits_of)
        features = {turn_id: self.detector.featurize(*raw) for turn_id, raw in raw_of.items()}
        scores = {turn_id: (self.detector.positive(features[turn_id]), *raw) for turn_id, raw in raw_of.items()}
        return self.attach(session, drafts, scores, features=features)

    @staticmethod
    def turn_inputs(session: SessionInput, drafts: Sequence[MemoryDraft],
                    hits_of: dict[str, tuple[list[TurnHit], list[TurnHit]]]) -> dict[str, tuple[dict[str, str], dict[str, float]]]:
        """The models' input for every patient turn of the session: its texts and its dense features."""
        by_turn: dict[str, list[MemoryDraft]] = {}
        for d in drafts:
            by_turn.setdefault(d.anchor_turn_id, []).append(d)
        out: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
        coach = ""
        for turn in session.turns:
            if turn.speaker != "patient":
                coach = turn.text or ""
                continue
            hits, coach_hits = hits_of.get(turn.id, ([], []))
            out[turn.id] = (turn_texts(turn.text or "", coach),
                            turn_dense(turn.text or "", coach, hits, coach_hits, by_turn.get(turn.id, [])))
        return out

    def attach(self, session: SessionInput, drafts: list[MemoryDraft],
               scores: dict[str, tuple[float, dict[str, str], dict[str, float]]],
               features: dict[str, dict[str, float]] | None = None) -> list[MemoryDraft]:
        """Put each turn's score on its memories and add fallback memories (scores given: training uses out-of-fold ones).
        `features`: the detector's features of each turn when the caller has them (annotate), not computed again."""
        threshold = self.detector.threshold if self.detector else 1.0
        by_turn: dict[str, list[MemoryDraft]] = {}
        for d in drafts:
            by_turn.setdefault(d.anchor_turn_id, []).append(d)
        out: list[MemoryDraft] = []
        for turn in session.turns:
            if turn.speaker != "patient":
                continue
            mine = by_turn.pop(turn.id, [])
            if turn.id in scores:
                score, texts, dense = scores[turn.id]
                why: list[str] = []
                if self.detector:
                    x = features[turn.id] if features and turn.id in features else self.detector.featurize(texts, dense)
                    why = [name for name, _ in self.detector.explain(x, top=4)]
                for d in mine:
                    d.attributes["delta"] = {"score": round(score, 4), "why": why}
                if score >= threshold and not any(d.category in CLINICAL and d.is_patient_affirmed for d in mine):
                    fallback = self._fallback(turn, texts, dense, score, why)
                    if fallback is not None:
                        mine = [*mine, fallback]
            out.extend(mine)
        for rest in by_turn.values():  # memories anchored outside the session's patient turns keep their place
            out.extend(rest)
        return out

    def _fallback(self, turn: TurnInput, texts: dict[str, str], dense: dict[str, float], score: float, why: list[str]) -> MemoryDraft | None:
        category = self.category.predict(self.category.featurize(texts, dense)) if self.category else MemoryCategory.SYMPTOM
        if category not in CLINICAL:
            return None
        text = (turn.text or "").strip()
        return MemoryDraft(
            category=category, content=f"Clinical statement ({category.replace('_', ' ')})", anchor_turn_id=turn.id,
            turn_ids=(turn.id,), quote=text[:500], quote_start=0, quote_end=min(len(text), 500), speaker=turn.speaker,
            mention_time=turn.at, subject=Subject.PATIENT, assertion=Assertion.AFFIRMED, confidence=round(score, 4),
            attributes={"fallback": True, "delta": {"score": round(score, 4), "why": why}},
        )

"""Cue words and patterns of the reconciler, loaded from reviewed data (reconciliation/data/cues.json), each with its source."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reconcile_app.core.cues import cues_load

CUES_PATH = Path(__file__).resolve().parents[2] / "data" / "cues.json"


def _load_cues() -> dict[str, dict[str, Any]]:
    """cues.json, then data/cues/*.json (one file per family of phenomena); a cue id is defined once."""
    return cues_load([CUES_PATH, *sorted((CUES_PATH.parent / "cues").glob("*.json"))])


_CUES: dict[str, dict[str, Any]] = _load_cues()


def pattern(cue_id: str) -> re.Pattern[str]:
    cue = _CUES[cue_id]
    return re.compile(cue["pattern"], re.IGNORECASE if "i" in cue.get("flags", "") else 0)


def words(cue_id: str) -> frozenset[str]:
    return frozenset(_CUES[cue_id]["words"])


STOP = pattern("stop")


STOP_REFERRING = pattern("stop_referring")


DEVICE_OFF = pattern("device_off")


PLANNED = pattern("planned")


DONE = pattern("done")


NEW_MEDICINE_RULE = pattern("new_medicine_rule")


DIET_NAME = pattern("diet_name")


DIET_GENERIC = words("diet_generic")


DIET_LAPSE = pattern("diet_lapse")


GENERIC_SCOPE = pattern("generic_scope")


VACCINE_DENIED = pattern("vaccine_denied")


BRIEF_DISCONNECT = pattern("brief_disconnect")


SKIP = pattern("skip")


SKIP_HABIT = pattern("skip_habit")


HALF = pattern("half")


MORE = pattern("more")


LESS = pattern("less")


RESUME = pattern("resume")


START = pattern("start")


ONCE = pattern("once")


OTHER_SOURCE = pattern("other_source")


POSSESSION_RETRACTED = pattern("possession_retracted")


OUTSIDE = pattern("outside")


RESOLVED = pattern("resolved")


RESOLVED_AFTER = pattern("resolved_after")


CLINICIAN_NAMED = pattern("clinician_named")


ALLERGY_NOT_MINE = pattern("allergy_not_mine")


DIAGNOSED = pattern("diagnosed")


TOLERATED = pattern("tolerated")


EXPOSURE = pattern("exposure")


ALLERGY_RECALLED = pattern("allergy_recalled")


SURGERY = pattern("surgery")


PREGNANT = pattern("pregnant")
PREGNANT_PAST = pattern("pregnant_past")


REGULAR = pattern("regular")


THIRD_PERSON = pattern("third_person")


FIRST_PERSON_USE = pattern("first_person_use")


def about_someone_else(quote: str) -> bool:
    """The quote speaks of a third person ("his cardiologist keeps him on it") with no word of the patient's own use."""
    return bool(THIRD_PERSON.search(quote)) and not FIRST_PERSON_USE.search(quote)


MODAL_START = pattern("modal_start")


WENT_AWAY = pattern("went_away")


REACTION = pattern("reaction")


ENVIRONMENTAL = words("environmental")


OCCASIONAL = pattern("occasional")


SUPPLY_RESUMED = pattern("supply_resumed")


CHAT_WORDS = words("chat_words")


BROAD_CLASSES = words("broad_classes")


CURRENT_USE = pattern("current_use")


CLINICIAN_SAID = pattern("clinician_said")


HEDGED = pattern("hedged")


DIAGNOSIS_RATED = words("diagnosis_rated")


CHRONIC = words("chronic")


OTC_CLASSES = words("otc_classes")


MG = pattern("mg")


RECORD_MG = pattern("record_mg")


TABLETS = pattern("tablets")


WORD_NUM = {k: float(v) for k, v in _CUES["word_num"]["numbers"].items()}
CLAUSE_SPLIT = pattern("clause_split")


RELATION = pattern("relation")


THIRD_PRONOUN = pattern("third_pronoun")


FIRST_SUBJECT = pattern("first_subject")


PAST_EXPRESSION = pattern("past_expression")


LAB_KINDS = tuple(_CUES["lab_kinds"]["words"])


FASTING = pattern("fasting")


WEIGHT_INTENT = pattern("weight_intent")


WEIGHT_INTENT_DENIED = pattern("weight_intent_denied")


WEIGHT_LOSS_GOAL = pattern("weight_loss_goal")


PROCEDURE_HEADS = pattern("procedure_heads")


PROCEDURE_DONE = pattern("procedure_done")


PROCEDURE_FUTURE = pattern("procedure_future")


PROCEDURE_GENERIC = words("procedure_generic")


VACCINE_RECEIVED = pattern("vaccine_received")

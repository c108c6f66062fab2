"""Readings and amounts as measurements; smoking and drinking also as care-plan behaviours and tobacco use."""
from __future__ import annotations

import re

from reconcile_app.narrative.types import Assertion, MemoryCategory

from .. import context as ctx
from ..cues import cue_pattern
from .state import Mention, SentenceScope
from .sentences import _event_time


_RELAPSE = cue_pattern("relapse")
_BEHAVIOUR_CARE = {"tobacco_use": "smoking cessation", "alcohol_use": "alcohol use"}


def _s_measurements(s: SentenceScope) -> None:
    """Readings and amounts (blood pressure, glucose, weight, smoking, drinking) as measurements."""
    state, sent, words, triggers, people, measurements, out = s.state, s.sent, s.words, s.triggers, s.people, s.measurements, s.out
    for meas in measurements:
        tok_start = next((i for i, t in enumerate(sent.tokens) if sent.start + t[1] >= meas.start), 0)
        tok_end = next((i for i, t in enumerate(sent.tokens) if sent.start + t[1] >= meas.end), len(words))
        res = ctx.assess(words, tok_start, max(tok_end, tok_start + 1), triggers=triggers, people=people)
        attrs = meas.attributes()
        mention = Mention(MemoryCategory.MEASUREMENT, state.turn, sent, meas.start, meas.end, attrs, res.subject,
                          res.relation, res.assertion, confidence=0.8, turn_ids=[state.turn.id], name=meas.kind)
        if mention.assertion == Assertion.UNCERTAIN and re.search(r"\b(?:maybe|probably|guess)\s+(?:like\s+|about\s+|around\s+)?$",
                                                              state.low[max(0, meas.start - 22) : meas.start]):
            mention.assertion = res.assertion = Assertion.AFFIRMED  # "maybe half a pack a day": the amount is hedged, not the fact
        if meas.qualifier == "usual" and mention.assertion == Assertion.AFFIRMED:
            mention.assertion = Assertion.HISTORICAL  # "I'm usually in the 120s" is a baseline, not a reading
        mention.event_time = _event_time(state, sent)
        out.append(mention)
        if meas.kind in _BEHAVIOUR_CARE and not any(x.category == MemoryCategory.CARE_ACTIVITY and x.name == _BEHAVIOUR_CARE[meas.kind] for x in out):
            # smoking and drinking are also care-plan behaviours (cessation, limits)
            name = _BEHAVIOUR_CARE[meas.kind]
            care = Mention(MemoryCategory.CARE_ACTIVITY, state.turn, sent, meas.start, meas.end,
                           {"name": name, "detail": state.low[meas.start:meas.end],
                            "action": "stopped" if meas.qualifier == "former" else "using" if meas.kind == "tobacco_use" else ""},
                           res.subject, res.relation, res.assertion, confidence=0.5, turn_ids=[state.turn.id], name=name)
            if not care.attributes["action"]:
                del care.attributes["action"]
            care.event_time = mention.event_time
            out.append(care)
        if meas.kind == "tobacco_use" and meas.qualifier != "former" and mention.assertion == Assertion.AFFIRMED \
                and state.low[meas.start:meas.end] not in ("dip", "tobacco", "nicotine") \
                and not any(x.category == MemoryCategory.CONDITION and x.name == "tobacco use" for x in out):
            # current smoking is also a condition (tobacco use, a smoker finding): a record that says
            # "ex-smoker" or "never smoked" is contradicted by it
            relapse = bool(_RELAPSE.search(sent.low))
            cond = Mention(MemoryCategory.CONDITION, state.turn, sent, meas.start, meas.end,
                           {"name": "tobacco use", "term": state.low[meas.start:meas.end],
                            "stated_status": "relapsed" if relapse else "active"},
                           res.subject, res.relation, res.assertion, confidence=0.6, turn_ids=[state.turn.id],
                           name="tobacco use")
            cond.event_time = mention.event_time
            out.append(cond)

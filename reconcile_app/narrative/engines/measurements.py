"""Measurements in chat text: blood pressure, glucose, A1c, INR, weight change, heart rate, SpO2, temperature, tobacco use."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .cues import cue_pattern, cue_rules


@dataclass
class Measurement:
    kind: str
    value: float | None
    start: int
    end: int
    value2: float | None = None
    unit: str = ""
    values: list[float] = field(default_factory=list)
    qualifier: str = ""  # "usual" ("I'm usually in the 120s"), "range" ("in the 130s"), "below"/"above"
    setting: str = ""
    delta: bool = False  # weight change rather than a weight
    baseline: float | None = None  # an earlier value the patient compares with ("I was 163 at the endo in December")
    daily: bool = False  # readings tagged with successive days (a daily log)

    def attributes(self) -> dict:
        out: dict = {"kind": self.kind, "value": None if self.value is None else _clean(self.value), "unit": self.unit}
        if self.value2 is not None:
            out["value2"] = _clean(self.value2)
        if len(self.values) > 1:
            out["values"] = [_clean(v) for v in self.values]
        if self.qualifier:
            out["qualifier"] = self.qualifier
        if self.setting:
            out["setting"] = self.setting
        if self.delta:
            out["change"] = True
        if self.baseline is not None:
            out["baseline"] = _clean(self.baseline)
        if self.daily:
            out["daily"] = True
        return out


def _clean(v: float) -> float | int:
    return int(v) if float(v).is_integer() else round(v, 2)


_N = r"(\d{1,3}(?:\.\d{1,2})?)"
_BP = re.compile(r"(?<![\d/.])(\d{2,3})(s)?\s*(?:/|over|\\)\s*(\d{2,3})(s)?(?![\d/])")
_BP_WORD = re.compile(r"\b(?:blood pressure|bp|pressure|systolic|top number)\b")
_BP_SINGLE = re.compile(r"\b(?:blood pressure|bp|pressure|systolic|top number)\b[^.!?\d]{0,40}?(?:(under|below|over|above|in the|around|about|like)\s+)?(\d{2,3})(s)?\b")
# Glucose devices (continuous monitors and meters, by kind and by common brand) name the analyte themselves.
_GLUCOSE_DEVICES = r"cgm|dexcom|libre|freestyle|glucometer|glucose meter|accu-?chek|one ?touch|contour next|guardian sensor"
_GLUCOSE_KEY = re.compile(r"\b(?:blood sugars?|sugars?|glucose|fasting|meter|bg|cbg|fingerstick|finger stick|readings?|numbers?|"
                          + _GLUCOSE_DEVICES + r")\b")
# "dropped to 48 on my cgm", "was 260 on the libre": the value comes before the device
_GLUCOSE_BEFORE_DEVICE = re.compile(r"(?<![\d.])(\d{2,3})(?![\d%]|\.\d)\s+(?:mg/dl\s+)?(?:on|per|according to)\s+(?:my|the|his|her)\s+(?:"
                                    + _GLUCOSE_DEVICES + r"|meter)\b")
# a number ends at a sentence period ("it said 52."), not at a decimal point ("5.2")
_LIST = re.compile(r"(?<![\d.])(\d{2,3})(s)?(?:\s*(?:,|and|&|then|to|-|or)\s*(?:and\s+|then\s+)?(\d{2,3})(s)?)*(?![\d%]|\.\d)")
_A1C = re.compile(r"\b(?:hb\s*a1c|hba1c|a1c|a1-c|a 1 c|hemoglobin a1c)\b\D{0,25}?(\d{1,2}(?:\.\d)?)\s*(%|percent)?")
_INR = re.compile(r"\binr\b\D{0,20}?(\d(?:\.\d{1,2})?)\b")
_INR_DEVICE = re.compile(r"\b(?:inr|coagu?chek|pt/inr|protime)\b")
_READING = re.compile(r"\b(?:said|says|read|reads|showed|shows|was|came back|came out|at|gave me|got)\s+(?:a\s+|an\s+|like\s+|about\s+)?"
                      r"(\d\.\d{1,2})(?!\d)")
_WEIGHT_CHANGE = re.compile(
    r"\b(down|lost|lose|losing|dropped|drop|gained|gain|gaining|up|put on)\s+(?:like\s+|about\s+|almost\s+|over\s+|nearly\s+|another\s+)?"
    r"(\d{1,3}(?:\.\d)?)\s*(lbs?|pounds?|kgs?|kilos?)\b")
_WEIGHT_CHANGE2 = re.compile(r"\b(\d{1,3}(?:\.\d)?)\s*(lbs?|pounds?|kgs?|kilos?)\s+(down|lighter|heavier|up|gained|lost|gone)\b")
_WEIGHT = re.compile(r"\b(?:weigh|weighed|weighs|weight is|weight was|scale said|scale says|i'm at|im at)\s+(?:in\s+at\s+)?(?:like\s+|about\s+)?(\d{2,3}(?:\.\d)?)\s*(lbs?|pounds?|kgs?|kilos?)?\b")
_HR = re.compile(r"\b(?:heart rate|heartrate|pulse|hr)\b\D{0,20}?(\d{2,3})\b|\b(\d{2,3})\s*bpm\b")
_SPO2 = re.compile(r"\b(?:oxygen|o2|sats?|spo2|pulse ox|saturation|oxygen level|ox)\b(\D{0,20}?)(\d{2,3})\s*(%|percent)?")
_TEMP = re.compile(r"\b(?:fever|temp|temperature|thermometer)\b\D{0,20}?(\d{2,3}(?:\.\d)?)\b|\b(\d{2,3}(?:\.\d)?)\s*(?:degrees?|°\s*f?|deg)\b")
_TOBACCO = re.compile(
    r"\b(?:(?P<n>\d{1,2}(?:\s*(?:-|to)\s*\d{1,2})?|a few|few|couple|a couple|half a|a|one|two)\s+)?(?:of\s+)?"
    r"(?P<what>cigs|cigarettes|cigarette|smokes|vapes?|cigars?|packs?(?=\s+(?:a|per)\s+day))\b(?:\s+(?:a|per)\s+day)?")
_TOBACCO_RATE = re.compile(r"\b(\d{1,2})\s*(?:-|to)?\s*(\d{1,2})?\s+(?:a|per)\s+day\b")

_QUAL = r"(high|low|up|down|elevated|through the roof|erratic|crazy|nuts|out of control|running high|running low|sky high|dropping|bottoming out)"
_LINK = r"(?:'s|\s)\s*(?:has |have |had )?(?:been |is |was |were |are |running |went |goes |going |gone |got |gets |getting |stays? |staying |keeps? )+(?:\w+ ){0,2}?"
_SUGAR_WORDS = re.compile(r"\b(blood sugars?|sugars?|glucose|sugar levels?|sugar numbers?)" + _LINK + _QUAL + r"\b")
_PRESSURE_WORDS = re.compile(r"\b(blood pressure|bp|pressure)" + _LINK + _QUAL + r"\b")
_SMOKING = re.compile(r"\b(smok(?:e|es|ed|ing|er)|cigarettes?|cigs|vap(?:e|es|ed|ing)|tobacco|nicotine|chewing tobacco|dip)\b")
_PAIN_SCORE = re.compile(r"\b(?:pain|it|hurts?|ache)\b[^.!?]{0,20}?\b(?:is |was |like |at |about |a )*(\d{1,2})\s*(?:/\s*10|out of (?:10|ten))")
_ALCOHOL = re.compile(
    r"\b(?P<n>\d{1,2}(?:\s*(?:-|to)\s*\d{1,2})?|a few|few|a couple(?: of)?|couple(?: of)?|several)\s+"
    r"(?:beers?|drinks?|glasses of wine|glasses|shots of \w+|cocktails?|margaritas?|seltzers?)\b"
    r"(?:\s+(?:a|per|every)\s+(?P<per>day|night|week|weekend))?")
_LAB_NAMES = {"ejection fraction": "ejection fraction", "ef": "ejection fraction", "ldl": "ldl", "hdl": "hdl", "cholesterol": "cholesterol", "triglycerides": "triglycerides", "potassium": "potassium",
              "sodium": "sodium", "creatinine": "creatinine", "egfr": "egfr", "gfr": "egfr", "tsh": "tsh", "hemoglobin": "hemoglobin",
              "hgb": "hemoglobin", "platelets": "platelets", "psa": "psa", "ferritin": "ferritin", "b12": "b12", "vitamin d": "vitamin d",
              "kidney function": "egfr", "white count": "wbc", "wbc": "wbc", "iron": "iron"}
_LAB = re.compile(r"\b(ejection fraction|ef|ldl|hdl|cholesterol|triglycerides|potassium|sodium|creatinine|egfr|gfr|tsh|hemoglobin|hgb|platelets|psa|"
                  r"ferritin|b12|vitamin d|kidney function|white count|wbc|iron)\b(?: level| levels| number| count)?[^.!?\d]{0,20}?"
                  r"(\d{1,4}(?:\.\d{1,2})?)(?!\s*(?:mg\b|mcg|pills?|tabs?|times|days|weeks))")
_DRINKING = re.compile(r"\b(?:drinking|drink|drank|been drinking)\s+(a lot|every night|every day|daily|more|heavily|again|most nights|too much|a bunch)\b")
_SLEEP = re.compile(r"\b(?:sleep(?:ing)?|slept|getting|get)\s+(?:only |maybe |about |like |around )?(\d{1,2}(?:\.\d)?)\s*(?:hours?|hrs?)\b")
_PEAK_FLOW = re.compile(r"\bpeak flow\b\D{0,15}?(\d{2,3})\b")
# home readings read through reviewed cues (narrative/data/cues/measurements.json)
_WEIGHT_ANCHOR = cue_pattern("weight_anchor")
_WEIGHT_NUMBER = cue_pattern("weight_number")
_WEIGHT_STRONG_BEFORE = cue_pattern("weight_strong_before")
_WEIGHT_STRONG_AFTER = cue_pattern("weight_strong_after")
_WEIGHT_WEAK_BEFORE = cue_pattern("weight_weak_before")
_WEIGHT_SERIES_GAP = cue_pattern("weight_series_gap")
_WEIGHT_OTHER_UNIT = cue_pattern("weight_other_unit")
_WEIGHT_PAST = [(re.compile(r["pattern"]), r["where"]) for r in cue_rules("weight_past")]
_WEIGHT_DAYS = cue_pattern("weight_days_series")
_WEIGHT_NOT_BODY = [(re.compile(r["pattern"]), r["where"]) for r in cue_rules("weight_not_body")]
_HEART_ANCHOR = cue_pattern("heart_anchor")
_HEART_DEVICE_READING = cue_pattern("heart_device_reading")
_INR_CONTEXT = cue_pattern("inr_context")
_VIRAL_LOAD = cue_pattern("viral_load")
_GLUCOSE_ANCHOR = cue_pattern("glucose_anchor")
_OTHER_QUANTITY_QUESTION = cue_pattern("other_quantity_question")
_GLUCOSE_READ = cue_pattern("glucose_read")
_NOT_GLUCOSE_UNIT = cue_pattern("not_a_glucose_unit")
_SPO2_DEVICE = cue_pattern("spo2_device")
_PEAK_FLOW_DEVICE = cue_pattern("peak_flow_device")
_PEAK_FLOW_BEST = cue_pattern("peak_flow_best")
_SPO2_DEVICE_READING = cue_pattern("spo2_device_reading")
_HOME = re.compile(r"\b(my (?:machine|meter|cuff|monitor|scale|watch)|at home|home (?:cuff|machine|monitor)|my bp|checked (?:it|my)|i checked)\b")
_OUTSIDE = re.compile(r"\b(at work|work|pharmacy|health fair|urgent care|er|emergency room|hospital|store|the nurse|fire station|clinic|her cuff|his cuff|kiosk)\b")
_CLINIC = re.compile(r"\b(doctor'?s office|at the doctor|at my appointment|at my appt|the office|at the clinic)\b")


def _setting(text: str) -> str:
    if _CLINIC.search(text):
        return "clinic"
    if _HOME.search(text):
        return "home"
    if _OUTSIDE.search(text):
        return "outside"
    return ""


def find_measurements(low: str, context: str = "") -> list[Measurement]:
    """Every measurement in a lowered turn; overlapping numbers are claimed once, most specific first.

    `context` is the text of the turns just before (the coach's question and the patient's previous message): bare
    numbers that answer a question about sugars or weight are read as that measure.
    """
    found: list[Measurement] = []
    claimed: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return not any(a < e and s < b for s, e in claimed)

    def claim(m: Measurement) -> None:
        found.append(m)
        claimed.append((m.start, m.end))

    setting = _setting(low)
    for m in _A1C.finditer(low):
        v = float(m.group(1))
        if 3.5 <= v <= 20 and free(m.start(1), m.end(1)):
            claim(Measurement("a1c", v, m.start(), m.end(), unit="%", setting=setting))
    for m in _INR.finditer(low):
        v = float(m.group(1))
        if 0.5 <= v <= 10 and free(m.start(1), m.end(1)):
            claim(Measurement("inr", v, m.start(), m.end(), unit="", setting=setting))
    for key in [*_INR_DEVICE.finditer(low), *_INR_CONTEXT.finditer(low)]:
        # "the home INR meter ... it said 3.8": a device that only measures INR, the reading later in the turn
        for m in _READING.finditer(low, key.end(), min(len(low), key.end() + 220)):
            v = float(m.group(1))
            if 0.8 <= v <= 9.9 and free(m.start(1), m.end(1)):
                claim(Measurement("inr", v, m.start(), m.end(), unit="", setting=setting or "home"))
                break
    for m in _BP.finditer(low):
        s, d = float(m.group(1)), float(m.group(3))
        if 60 <= s <= 260 and 30 <= d <= 160 and s > d and free(m.start(), m.end()):
            claim(Measurement("blood_pressure", s, m.start(), m.end(), value2=d, unit="mm[Hg]", setting=setting,
                              qualifier="range" if m.group(2) or m.group(4) else ""))
    for m in _SPO2.finditer(low):
        v = float(m.group(2))
        if _HEART_ANCHOR.search(m.group(1)):
            continue  # "the pulse ox said pulse 96": the oximeter's heart rate
        if 50 <= v <= 100 and free(m.start(2), m.end(2)):
            claim(Measurement("spo2", v, m.start(), m.end(), unit="%", setting=setting))
    _spo2_device_readings(low, setting, free, claim)
    for m in _HR.finditer(low):
        g = 1 if m.group(1) else 2
        v = float(m.group(g))
        if 25 <= v <= 230 and free(m.start(g), m.end(g)):
            claim(Measurement("heart_rate", v, m.start(), m.end(), unit="/min", setting=setting))
    _heart_device_readings(low, setting, free, claim)
    for m in _BP_SINGLE.finditer(low):
        v = float(m.group(2))
        if 60 <= v <= 260 and free(m.start(2), m.end(2)):
            q = {"under": "below", "below": "below", "over": "above", "above": "above", "in the": "range"}.get(m.group(1) or "", "")
            if m.group(3):
                q = "range"
            claim(Measurement("blood_pressure", v, m.start(), m.end(), unit="mm[Hg]", qualifier=q, setting=setting))
    for m in _WEIGHT_CHANGE.finditer(low):
        v = float(m.group(2))
        sign = 1 if m.group(1) in ("gained", "gain", "gaining", "up", "put on") else -1
        if v <= 200 and free(m.start(2), m.end(2)):
            claim(Measurement("weight", sign * v, m.start(), m.end(), unit=_wunit(m.group(3)), delta=True))
    for m in _WEIGHT_CHANGE2.finditer(low):
        v = float(m.group(1))
        sign = 1 if m.group(3) in ("heavier", "up", "gained") else -1
        if v <= 200 and free(m.start(1), m.end(1)):
            claim(Measurement("weight", sign * v, m.start(), m.end(), unit=_wunit(m.group(2)), delta=True))
    _weights(low, free, claim)
    _viral_load(low, setting, free, claim)
    for m in _TEMP.finditer(low):
        g = 1 if m.group(1) else 2
        v = float(m.group(g))
        unit = "[degF]" if 93 <= v <= 110 else "Cel" if 34 <= v <= 43 else ""
        if unit and free(m.start(g), m.end(g)):
            claim(Measurement("temperature", v, m.start(), m.end(), unit=unit, setting=setting))
    _glucose(low, setting, free, claim)
    _tobacco(low, free, claim)
    for m in _PAIN_SCORE.finditer(low):
        v = float(m.group(1))
        if 0 <= v <= 10 and free(m.start(1), m.end(1)):
            claim(Measurement("pain_score", v, m.start(), m.end(), unit="{score}/10"))
    for m in _ALCOHOL.finditer(low):
        if free(m.start(), m.end()):
            nums = re.findall(r"\d{1,2}", m.group("n") or "")
            value = float(nums[-1]) if nums else (3.0 if (m.group("n") or "").strip() in ("a few", "few") else
                                                     2.0 if "couple" in (m.group("n") or "") else None)
            claim(Measurement("alcohol_use", value, m.start(), m.end(), unit="drinks/" + (m.group("per") or "occasion")))
    for m in _LAB.finditer(low):
        if free(m.start(2), m.end(2)):
            claim(Measurement("lab:" + _LAB_NAMES.get(m.group(1), m.group(1)), float(m.group(2)), m.start(), m.end(), setting=setting))
    if not any(f.kind == "tobacco_use" for f in found):
        m = next((x for x in _SMOKING.finditer(low) if not (
            x.group(1) in ("smoke", "dip") and re.search(r"\b(the|of|from|fire|wildfire|chip|chips|and|salsa|sauce|in|some)\s+$", low[max(0, x.start() - 12) : x.start()]))), None)
        if m and free(m.start(), m.end()):
            quit_ = re.search(r"\b(quit|stopped|gave up|don'?t|never|no longer|not)\b", low[max(0, m.start() - 25) : m.end() + 5])
            claim(Measurement("tobacco_use", None, m.start(), m.end(), qualifier="former" if quit_ else "current"))
    if not any(f.kind == "alcohol_use" for f in found):
        m = _DRINKING.search(low)
        if m and free(m.start(), m.end()):
            claim(Measurement("alcohol_use", None, m.start(), m.end(), qualifier=m.group(1)))
    for m in _SLEEP.finditer(low):
        if free(m.start(1), m.end(1)):
            claim(Measurement("sleep_duration", float(m.group(1)), m.start(), m.end(), unit="h"))
    _peak_flows(low, free, claim)
    for m in _PEAK_FLOW.finditer(low):
        if free(m.start(1), m.end(1)):
            claim(Measurement("peak_flow", float(m.group(1)), m.start(), m.end(), unit="L/min"))
    for kind, rx in (("glucose", _SUGAR_WORDS), ("blood_pressure", _PRESSURE_WORDS)):
        if any(f.kind == kind for f in found):
            continue
        for m in rx.finditer(low):
            if free(m.start(), m.end()):
                q = m.group(2)
                q = "high" if q in ("up", "elevated", "through the roof", "crazy", "nuts", "out of control", "running high", "sky high") \
                    else "low" if q in ("down", "running low", "dropping", "bottoming out") else "variable" if "all over" in q else q
                claim(Measurement(kind, None, m.start(), m.end(), unit="mg/dL" if kind == "glucose" else "mm[Hg]",
                                  qualifier=q, setting=setting))
                break
    if context and not found:
        _answer_readings(low, context, free, claim)
    found.sort(key=lambda x: x.start)
    return found


def _wunit(u: str) -> str:
    return "kg" if u.startswith("k") else "[lb_av]"


def _weights(low: str, free, claim) -> None:
    """Body weights read from a scale: one reading, a series, and an earlier value the patient compares them with.

    A number is a weight when a scale, a weigh verb or a unit frames it (strong); "I was 163", "then 176" and the
    like count only in a turn that already reports a weight that way (weak), so ages and counts stay out.
    """
    strong_spans = {m.start(1) for m in _WEIGHT.finditer(low)}
    if not strong_spans and not _WEIGHT_ANCHOR.search(low):
        return
    found: list[tuple[re.Match, bool]] = []  # (number, strong)
    for m in _WEIGHT_NUMBER.finditer(low):
        after = low[m.end(1) : m.end(1) + 24]
        if _WEIGHT_OTHER_UNIT.match(after) or not free(m.start(1), m.end(1)):
            continue
        before = low[max(0, m.start(1) - 40) : m.start(1)]
        if any(rx.search(before) if where == "before" else rx.match(after) for rx, where in _WEIGHT_NOT_BODY):
            continue  # a load or another body's pounds, not the patient's weight
        strong = m.start(1) in strong_spans or bool(_WEIGHT_STRONG_BEFORE.search(before) or _WEIGHT_STRONG_AFTER.match(after))
        if not strong and found and _WEIGHT_SERIES_GAP.match(low[found[-1][0].end(1) : m.start(1)]):
            strong = True  # the next number of a list of weights ("171 on Sunday, 173 Monday")
        weak = bool(_WEIGHT_WEAK_BEFORE.search(before))
        if strong or weak:
            found.append((m, strong))
    if not any(strong for _, strong in found):
        return
    kg = bool(re.search(r"\b(?:kgs?|kilos?|kilograms?)\b", low)) and not re.search(r"\b(?:lbs?|pounds?)\b", low)
    lo, hi = (30, 300) if kg else (70, 650)
    readings = [(m, _weight_is_past(low, m)) for m, _ in found if lo <= float(m.group(1)) <= hi]
    current = [float(m.group(1)) for m, past in readings if not past]
    earlier = [float(m.group(1)) for m, past in readings if past]
    if not current:
        return
    first, last = readings[0][0], readings[-1][0]
    if not all(free(m.start(1), m.end(1)) for m, _ in readings):
        return
    daily = len(current) >= 3 and len(_WEIGHT_DAYS.findall(low[first.start(1) : last.end(1) + 20])) >= 2
    # the earlier value the patient compares with, else the first of a series ("171 on Sunday ... 176 this morning")
    baseline = earlier[0] if earlier else (current[0] if len(current) >= 2 else None)
    claim(Measurement("weight", current[-1], first.start(1), last.end(1), unit="kg" if kg else "[lb_av]", values=current,
                      baseline=baseline, daily=daily))


def _answer_readings(low: str, context: str, free, claim) -> None:
    """Bare numbers answering a question about one measure ("How are your sugars? ... Any numbers?" - "52 at practice,
    41 thursday"): read as that measure when the turn names no measure of its own and the context names exactly one."""
    if _GLUCOSE_ANCHOR.search(low) or _WEIGHT_ANCHOR.search(low) or _BP_WORD.search(low) or _HEART_ANCHOR.search(low):
        return
    if _OTHER_QUANTITY_QUESTION.search(context):
        return  # "How long were the walks?" - "45 Saturday": the numbers answer the last question
    kinds = [k for k, rx in (("glucose", _GLUCOSE_ANCHOR), ("weight", _WEIGHT_ANCHOR)) if rx.search(context)]
    if len(kinds) != 1 or _BP_WORD.search(context) or _HEART_ANCHOR.search(context):
        return
    lo, hi = (20, 600) if kinds[0] == "glucose" else (70, 650)
    nums = []
    for m in _WEIGHT_NUMBER.finditer(low):
        v = float(m.group(1))
        if lo <= v <= hi and not _WEIGHT_OTHER_UNIT.match(low[m.end(1) : m.end(1) + 24]) and free(m.start(1), m.end(1)):
            nums.append(m)
    if not nums:
        return
    values = [float(m.group(1)) for m in nums]
    unit = "mg/dL" if kinds[0] == "glucose" else "[lb_av]"
    claim(Measurement(kinds[0], values[-1], nums[0].start(1), nums[-1].end(1), unit=unit, values=values,
                      setting="home", daily=kinds[0] == "weight" and len(values) >= 3))


def _weight_is_past(low: str, m: re.Match) -> bool:
    before = low[max(0, m.start(1) - 30) : m.start(1)]
    after = low[m.end(1) : m.end(1) + 40]
    return any(rx.search(before) if where == "before" else rx.match(after) for rx, where in _WEIGHT_PAST)


def _heart_device_readings(low: str, setting: str, free, claim) -> None:
    """A pulse a cuff, watch or monitor shows as bare numbers, in a turn about the heart's rate or rhythm."""
    if not _HEART_ANCHOR.search(low):
        return
    for m in _HEART_DEVICE_READING.finditer(low):
        near = low[max(0, m.start() - 160) : m.end() + 120]
        if not _HEART_ANCHOR.search(near) or _GLUCOSE_ANCHOR.search(low[max(0, m.start() - 60) : m.start()]):
            continue
        nums = [float(x) for x in re.findall(r"\d{2,3}", m.group(0))]
        if not nums or not all(35 <= v <= 230 for v in nums) or not free(m.start(1), m.end()):
            continue
        claim(Measurement("heart_rate", max(nums), m.start(1), m.end(), unit="/min", values=nums, setting=setting or "home"))


def _spo2_device_readings(low: str, setting: str, free, claim) -> None:
    """Saturations a home oximeter shows, read after it is named in lay words ("the finger oxygen thing ... reads 85 or
    so, resting it climbs back to 93"); the lowest is the reading that matters, every one is kept."""
    for device in _SPO2_DEVICE.finditer(low):
        nums: list[float] = []
        first = last = -1
        for m in _SPO2_DEVICE_READING.finditer(low, device.end(), min(len(low), device.end() + 240)):
            if _HEART_ANCHOR.search(low[max(device.end(), m.start() - 30) : m.start()]):
                continue  # "pulse was 96": the oximeter's other number
            values = [float(x) for x in re.findall(r"\d{2,3}", m.group(0))]
            if not values or not all(50 <= v <= 100 for v in values) or not free(m.start(1), m.end()):
                continue
            nums += values
            first = m.start(1) if first < 0 else first
            last = m.end()
        if nums:
            claim(Measurement("spo2", min(nums), first, last, unit="%", values=nums, setting=setting or "home"))
            return


def _peak_flows(low: str, free, claim) -> None:
    """Peak flows read after the meter is named in lay words ("the blow tube ... 310, 300, 320 this week"), with the
    personal best the patient compares them with ("my best is 450"), so the zone can be counted from it."""
    device = _PEAK_FLOW_DEVICE.search(low)
    if device is None:
        return
    best = _PEAK_FLOW_BEST.search(low)
    window = low[device.end() : min(len(low), device.end() + 260)]
    nums: list[tuple[float, int, int]] = []
    for m in re.finditer(r"(?<![\d.,/:$])(\d{2,3})(?![\d%/:]|s\b|'s\b)", window):
        at = device.end() + m.start(1)
        if best is not None and best.start(1) == at:
            continue  # the personal best is the yardstick, not a reading
        if _WEIGHT_OTHER_UNIT.match(window[m.end(1) : m.end(1) + 24]) or not free(at, at + len(m.group(1))):
            continue
        v = float(m.group(1))
        if 60 <= v <= 900:
            nums.append((v, at, at + len(m.group(1))))
    if nums:
        values = [v for v, _, _ in nums]
        claim(Measurement("peak_flow", min(values), nums[0][1], nums[-1][2], unit="L/min", values=values, setting="home",
                          baseline=float(best.group(1)) if best else None))


def _viral_load(low: str, setting: str, free, claim) -> None:
    for m in _VIRAL_LOAD.finditer(low):
        if free(m.start(1), m.end(1)):
            claim(Measurement("viral_load", float(m.group(1).replace(",", "")), m.start(), m.end(), unit="{copies}/mL",
                              setting=setting))


def _glucose(low: str, setting: str, free, claim) -> None:
    for m in _GLUCOSE_BEFORE_DEVICE.finditer(low):
        v = float(m.group(1))
        if 20 <= v <= 700 and free(m.start(1), m.end(1)):
            claim(Measurement("glucose", v, m.start(), m.end(), unit="mg/dL", values=[v], setting=setting or "home"))
    for key in _GLUCOSE_KEY.finditer(low):
        window_end = min(len(low), key.end() + 90)
        for m in _LIST.finditer(low, key.end(), window_end):
            nums = [float(x) for x in re.findall(r"\d{2,3}", m.group())]
            if not nums or not all(20 <= v <= 700 for v in nums) or not free(m.start(), m.end()):
                continue
            between = low[key.end() : m.start()]
            if _NOT_GLUCOSE_UNIT.match(low[m.end() : m.end() + 20]):
                continue  # "I went 40 feet farther": a distance, not a sugar
            if re.search(r"\b(blood pressure|bp|pressure|weight|a1c|inr|pulse|heart rate)\b", between):
                continue
            q = "range" if m.group(2) else ""
            if re.search(r"\b(usually|normally|typically|used to be)\b", low[max(0, m.start() - 30) : m.start()]):
                q = "usual"
            claim(Measurement("glucose", nums[-1], m.start(), m.end(), unit="mg/dL", values=nums, qualifier=q,
                              setting=setting or "home"))
            break
    _glucose_reads(low, setting, free, claim)


def _glucose_reads(low: str, setting: str, free, claim) -> None:
    """Numbers the patient got or read in a turn about blood sugar, beyond the window of the sugar word itself
    ("my mom's meter ... so I did it a few mornings, I got 141 on Tuesday and 148 on Thursday")."""
    anchors = [a.end() for a in _GLUCOSE_ANCHOR.finditer(low)]
    if not anchors:
        return
    reads = []
    for m in _GLUCOSE_READ.finditer(low):
        v = float(m.group(1))
        before = low[max(0, m.start() - 80) : m.start()]
        if not (40 <= v <= 700) or not free(m.start(1), m.end(1)) or not any(a <= m.start() <= a + 300 for a in anchors):
            continue
        if _HEART_ANCHOR.search(before) or _BP_WORD.search(before) or _WEIGHT_ANCHOR.search(before):
            continue
        if _NOT_GLUCOSE_UNIT.match(low[m.end(1) : m.end(1) + 20]):
            continue
        reads.append(m)
    if reads:
        nums = [float(m.group(1)) for m in reads]
        claim(Measurement("glucose", nums[-1], reads[0].start(), reads[-1].end(), unit="mg/dL", values=nums, setting=setting or "home"))


def _tobacco(low: str, free, claim) -> None:
    found: list[Measurement] = []
    for m in _TOBACCO.finditer(low):
        if not free(m.start(), m.end()):
            continue
        n = m.group("n") or ""
        value: float | None = None  # "back on the cigarettes": smoking, amount not stated
        nums = re.findall(r"\d{1,2}", n)
        pack = m.group("what").startswith("pack")
        if nums:
            value = float(nums[-1])
        else:
            rate = _TOBACCO_RATE.search(low, m.end(), min(len(low), m.end() + 60))
            if rate:
                value = float(rate.group(2) or rate.group(1))
            elif n == "half a":
                value = 0.5
            elif n in ("a", "one") and pack:
                value = 1.0
            elif n == "two" and pack:
                value = 2.0
            elif n in ("a few", "few"):
                value = 3.0
            elif n in ("couple", "a couple"):
                value = 2.0
        found.append(Measurement("tobacco_use", value, m.start(), m.end(), unit="packs/day" if pack else "/d"))
    # one statement of an amount is the reading; bare mentions of the product only when no amount is given
    counted = [f for f in found if f.value is not None]
    for f in counted or found[:1]:
        claim(f)


OPEN_QUESTION_TURNS = 6  # how far back a coach's question about a reading can stay open ("let me grab the meter" ... "118")


def open_question_context(previous: list[tuple[str, str]]) -> str:
    """The context a bare number answers: the coach's latest question and what the patient said since (turns as
    (speaker, lowered text), oldest first). A question stays open across the patient's holding turns and the coach's
    turns that ask nothing ("sure, take your time"), up to OPEN_QUESTION_TURNS back; the next question closes it
    (conversation analysis: an adjacency pair may be expanded by inserted sequences, Schegloff 2007, Sequence
    Organization in Interaction, ch. 6). Without an open question, the last two turns, as before."""
    window = previous[-OPEN_QUESTION_TURNS:]
    for i in range(len(window) - 1, -1, -1):
        speaker, low = window[i]
        if speaker != "patient" and "?" in low:
            # "any numbers?" names no measure: it asks about the one the conversation was on
            start = i if _names_a_measure(low) else 0
            return " ".join(text for _, text in window[start:])
    return " ".join(text for _, text in previous[-2:])


def _names_a_measure(low: str) -> bool:
    return any(rx.search(low) for rx in (_GLUCOSE_ANCHOR, _WEIGHT_ANCHOR, _BP_WORD, _HEART_ANCHOR))

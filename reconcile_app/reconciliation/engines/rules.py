"""The offline rules reconciler: each memory matched against the record through the curated knowledge tables."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from reconcile_app.fhir.clinical import ClinicalEntry, ClinicalRecord, State
from reconcile_app.narrative.types import Assertion, MemoryDraft, Subject
from reconcile_app.reconciliation.gate import ERROR_RULE_PREFIX, citation_gate
from reconcile_app.reconciliation.knowledge import Drug, Knowledge, eval_rule, load_knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import (
    DrugMention,
    RecordIndex,
    allergens_in_text,
    careplan_activities,
    careplan_text as careplan_text_of,
    concepts_in_text,
    content_words,
    drugs_in_text,
    expand_activity_words,
    procedures_in_text,
    sites_in_text,
    stage_of,
    stems,
    terminology_drugs,
    vaccines_in_text,
)
from reconcile_app.reconciliation.types import SEVERITY_RANK, Citation, FindingCategory, FindingDraft, FindingKind, Severity

from .base import Reconciler
from .judge import Judge

AGREE, CONTRA, GAP, NCR = (FindingKind.AGREEMENT, FindingKind.CONTRADICTION, FindingKind.GAP, FindingKind.NO_CLINICAL_RELEVANCE)
Cat = FindingCategory

# --- cue lexicons: general chat verbs, not phrases from any transcript -------------------------------------

_STOP = re.compile(
    r"\b(?:stopp?ed|stopping|quit|quitting|gave up|give up|ran out|run out|no longer|not taking|not using|"
    r"haven'?t (?:been )?(?:taking|taken|using|used|done|had|touched|filled|picked up)|havent (?:been )?(?:taking|taken|using|used|done|had)|"
    r"off (?:of )?(?:my|the|it|them)|came off|went off|discontinu\w*|dropped|ditched|done with|walked away|"
    r"don'?t (?:take|use) (?:it|them|that)? ?any ?more|not on (?:it|that|them) anymore|threw (?:it|them) out)\b"
)
# a stop said about the drug by reference in a later sentence: "so I quit it", "I ran out and haven't had any for a week"
_STOP_REFERRING = re.compile(
    r"\b(?:quit|stopped|stop|off) (?:it|them|that|those|taking it|taking them)\b|\bran out\b|\brun out\b|"
    r"\bhaven'?t (?:had|taken|used) (?:any|it|them|one)\b|\bnone (?:left|since|for)\b|\bwithout (?:it|them|any) for\b"
)
# a delivery device taken off: "took my pump off", "disconnected the pump for the weekend", "pump break"
_DEVICE_OFF = re.compile(
    r"\b(?:took|take|taking|pulled|pull|had) (?:my |the |her |his |their |it |them )?(?:\w+ ){0,2}(?:off|out)\b|\b(?:disconnect\w*|unhook\w*|detach\w*)\b|"
    r"\b(?:pump|pod) (?:break|vacation|holiday)\b|\bwithout (?:my |the )?(?:pump|pod)\b"
)
_PLANNED = re.compile(
    r"\b(?:wants? me to|get me to|on me to|after me to|supposed to (?:get|have|go)|going to (?:get|have)|gonna (?:get|have)|"
    r"thinking (?:about|of) (?:getting|having)|talk(?:ing)? me into|nagging me|(?:keeps?|kept) \w+ing me to)\b"
)
_DONE = re.compile(r"\b(?:had|got|did|done|went in|was|were|removed|fixed|finished|came out|took out)\b")
# a care-plan rule about any new medicine: "check with the pharmacist before starting new medicines or supplements"
_NEW_MEDICINE_RULE = re.compile(
    r"\b(?:do not|don'?t|never|avoid|before|without|check\w*|ask\w*|call\w*)\b[^.;]{0,60}\bnew (?:\w+ ){0,2}"
    r"(?:medicines?|medications?|meds|drugs?|supplements?|herbals?|vitamins?|products?|prescriptions?)\b"
)
# a named diet in a care plan ("strict gluten-free diet", "low sodium diet", "renal diet") and lapses from one
_DIET_NAME = re.compile(r"\b((?:[a-z]+[- ]){1,2})(?:diet|free)\b")
_DIET_GENERIC = {"diet", "free", "low", "strict", "a", "the", "healthy", "follow", "on", "keep", "and", "per", "day", "high", "with", "plan", "to"}
_DIET_LAPSE = re.compile(
    r"\bcheat\w*|\b(?:fell|fallen|falling|been|went|go|going) off (?:of )?(?:my|the)\b|\bnot (?:really )?(?:following|sticking|keeping|doing)\b|"
    r"\b(?:slipp\w*|blew|blown|blowing|ignor\w*) (?:on |up )?(?:my|the)\b|\bgave up (?:on )?(?:my|the)\b"
)
_GENERIC_SCOPE = re.compile(r"\b(?:scope|scopes|scoped|scoping)\b")
_VACCINE_DENIED = re.compile(
    r"\bnever (?:ever )?(?:had|got|gotten|received|taken|done)\b|\bhaven'?t ever (?:had|got|gotten)\b|\bnot (?:a )?single (?:one|dose|shot)\b|"
    r"\b(?:shot|shots|vaccine|vaccines|jab|jabs)\W+never\b|\bnever (?:got|get) (?:around to|vaccinated)\b"
)
# routine short disconnections (a shower, a swim, a few minutes) are how pumps are used, not a stop
_BRIEF_DISCONNECT = re.compile(r"\b(?:to|for) (?:a |my )?(?:shower|swim|bath)|\bright back\b|\bfew minutes\b|\b(?:an|half an|one) hour\b|\bfor (?:a )?minutes?\b")
_SKIP = re.compile(r"\b(?:skip\w*|miss(?:ed|ing)|forg[eo]t\w*|every other day instead|only some days)\b")
_SKIP_HABIT = re.compile(r"\b(?:skipp(?:ing|ed) (?:it|them|doses|a few|most|some|days|a lot)|(?:missing|missed) (?:a lot of|most|several|a few|lots of) (?:doses|days|pills))\b")
_HALF = re.compile(r"\b(?:half|halv\w*|cut (?:it|them|the \w+|my \w+(?: \w+)?) in (?:half|two)|split (?:it|them|the pills?))\b")
_MORE = re.compile(r"\b(?:doubl\w*|two instead of one|an extra|extra (?:pill|dose|tablet)|twice as much|upped|increased (?:it|my)|more than (?:prescribed|i'?m supposed))\b")
_LESS = re.compile(r"\b(?:cut back on (?:my|the) \w+|lower(?:ed)? (?:my|the) dose|less than (?:prescribed|i'?m supposed)|only (?:take|taking|taken) one|every other day|to make (?:it|them) last|stretch(?:ing)? (?:it|them|out)|only (?:on )?(?:some|certain) days)\b")
_RESUME = re.compile(r"\b(?:back on|restart\w*|started (?:\w+ )?again|resum\w*|going again)\b")
_START = re.compile(r"\b(?:start\w*|began|put me on|prescribed|gave me|added|switched (?:me )?to|new (?:pill|med|medicine|prescription))\b")
_ONCE = re.compile(r"\b(?:took (?:a|one|an|some|a couple|two)|once|one time|last night only)\b")
_OTHER_SOURCE = re.compile(
    r"\b(?:husband|wife|spouse|partner|mom|mother|dad|father|son|daughter|sister|brother|friend|roommate|neighbor|"
    r"boyfriend|girlfriend|coworker|co-worker|aunt|uncle|grandma|grandpa|cousin)(?:'?s)\b(?: (?:old|leftover|extra|spare))?"
)
_OUTSIDE = re.compile(r"\b(?:urgent care|er\b|emergency room|specialist|walk-?in|pharmacy|dentist|clinic|med spa|online|telehealth|another doctor|second opinion|hospital)\b")
_RESOLVED = re.compile(
    r"\b(?:(?:is|are|was) (?:gone|cured|resolved|fixed|reversed|healed)|no longer have|don'?t have (?:it|that|\w+) any ?more|got rid of|"
    r"cured|in remission|reversed|outgr[eo]w\w*|not (?:a )?diabetic any ?more|went away for good)\b"
)
_DIAGNOSED = re.compile(r"\b(?:diagnos\w*|told me i (?:have|had|am)|said i (?:have|had|am|was)|found (?:out )?(?:that )?i (?:have|had)|i'?m \w+ now|now (?:have|i have)|turns out i have)\b")
_TOLERATED = re.compile(
    r"\b(?:no (?:reaction|hives|rash|problems?|issues?|trouble|symptoms|swelling|itching)|without (?:any )?(?:reaction|problems?|issues?)|"
    r"not allergic|not even (?:a|an) (?:itch|rash|hive|reaction|bump)|outgr[eo]w\w*|fine with|tolerat\w*|didn'?t (?:react|break out|have (?:a|any) (?:reaction|problem))|nothing happened|zero reaction|was fine)\b"
)
_EXPOSURE = re.compile(r"\b(?:took|taking|gave me|prescribed|ate|eaten|eating|used|wore|wearing|stung|exposed)\b")
_SURGERY = re.compile(
    r"\b(?:surgery|surgeries|operation|operated|procedure|removed|repair\w*|fixed|biopsy|biopsied|scope|scoped|injection|shot in (?:my|the)|"
    r"ablation|implant\w*|pacemaker|stitches|sutures|cast|transplant|replacement|replaced|scan|mri|x-?ray|ultrasound|echo|"
    r"mammogram|endoscopy|colonoscopy|angiogram|cath\w*|stent\w*|lasik|laser)\b"
)
_PREGNANT = re.compile(r"\bpregnan\w*\b|\bexpecting (?:a baby|again)\b|\bmissed (?:my )?period\b")
_REGULAR = re.compile(r"\b(?:every (?:day|morning|night|evening)|daily|twice a day|(?:\d+|one|two|three) (?:times|x) a (?:day|week)|each (?:day|morning|night)|nightly|weekly|for (?:a|about|like|\d+) (?:week|month)|since)\b")
# someone else's use said in the third person ("his doctor started him on", "she's on blood thinners")
_THIRD_PERSON = re.compile(
    r"\b(?:started|put|switched|got) (?:him|her|them) on\b|\b(?:his|her|their) (?:\w+ ){0,2}(?:doctor|prescription|pills?|meds?|medicines?|insulin|inhaler|shots?)\b|"
    r"\b(?:he|she|they)(?:'s|s| is| are| was| has| just)? (?:\w+ )?(?:on|taking|takes|uses|using|started|been taking|switched)\b"
)
_FIRST_PERSON_USE = re.compile(r"\b(?:i|i'm|im|i've|ive|me|my)\b (?:\w+ ){0,3}(?:take|taking|took|use|using|used|started|on|tried|had|have)\b|\bgave me\b|\bput me\b|\bstarted me\b")
_MODAL_START = re.compile(r"\b(?:might|maybe|thinking (?:about|of)|want(?:s)? to|wanna|going to|gonna|plan(?:ning)? to|should i|considering|hope to|wondering (?:if|about))\b(?:\s+\w+){0,3}\s+(?:try|trying|start|starting|take|taking|get|getting|use|using|ask)\b")
_WENT_AWAY = re.compile(r"\b(?:went (?:away|down)|gone (?:now|by)|(?:is|are|was|were|been|it's|they're) (?:long |all |totally |completely )?gone|faded|better now|back to normal|cleared up|resolved|settled down|passed)\b")
_REACTION = re.compile(r"\b(?:hives|rash|swell\w*|swollen|itch\w*|reaction|broke out|break out|welts|wheez\w*|throat (?:\w+ )?(?:tight|closing))\b")
# seasonal and household allergens: itchy eyes in pollen season is chatter, not an allergy-list question
_ENVIRONMENTAL = {"pollen", "dust_mite", "cat", "dog", "adhesive"}
_OCCASIONAL = re.compile(r"\b(?:sometimes|now and then|once in a while|occasionally|as needed|here and there|if i need (?:it|one|to)|when i need (?:it|one|to)|every so often|once or twice)\b")
_SUPPLY_RESUMED = re.compile(r"(?<!n't )(?<!nt )(?<!not )(?<!never )(?<!yet to )\b(?:picked (?:it|them) up|got (?:it|them) (?:the next day|the day after|later|back)|refilled|back on (?:it|them)|(?:started|taking) (?:it|them) again|only missed (?:a|one) (?:day|dose))\b")
# chat words that say nothing about a body part or disease
_CHAT_WORDS = {"surgery", "removed", "repair", "repaired", "fixed", "clinic", "doctor", "yesterday", "today", "started", "finally",
               "procedure", "hospital", "urgent", "center", "office", "outside", "week", "weeks", "month", "months", "right", "left",
               "pretty", "really", "there", "their", "about", "after", "before", "again", "said", "told", "think", "thing", "things",
               "little", "because", "going", "still", "since", "would", "could", "should", "where", "which", "while", "other"}
_BROAD_CLASSES = {"supplement", "antibiotic", "nsaid_like", "teratogen", "antidiabetic", "antihypertensive", "diuretic", "antidepressant"}
_CURRENT_USE = re.compile(r"\b(?:still|every (?:day|morning|night|evening)|daily|nightly|each (?:day|morning|night)|again|now|currently|been (?:taking|using|on)|keep taking|(?:once|twice|three times) a day|\d+ (?:times|x) a day|at bedtime|with (?:breakfast|dinner|meals)|each morning|most days|regularly)\b")
_CLINICIAN_SAID = re.compile(r"\b(?:doctor|dr|doc|nephrologist|cardiologist|specialist|endocrinologist|pulmonologist|they|she|he|nurse|np|pa)\b(?:\s+\w+){0,2}\s+(?:said|says|told|confirmed|thinks)\b|\bno longer have\b|\bin remission\b|\bcured\b|\breversed\b")
_HEDGED = re.compile(r"\b(?:kinda|kind of|sort of|sorta|a bit|a little|not as (?:much|often)|slack\w*|here and there|less than i should)\b")
# chronic diseases whose unrecorded mention is itself worth a look (they carry a diagnosis rating in the table)
_DIAGNOSIS_RATED = {"diabetes", "ckd", "copd", "asthma", "heart_failure", "coronary_disease", "atrial_fibrillation", "epilepsy",
                    "hiv", "cancer", "stroke", "vte", "liver_disease", "transplant", "bipolar"}
_CHRONIC = _DIAGNOSIS_RATED | {"hypertension", "hyperlipidemia", "hypothyroidism", "prediabetes", "osteoporosis", "gout", "anemia", "obesity", "osa", "gerd", "allergic_rhinitis", "migraine"}
_OTC_CLASSES = {"acetaminophen", "antihistamine", "nsaid", "supplement", "vitamin", "iron", "ppi", "h2_blocker", "sleep_aid", "cold_medicine",
                "laxative"}


def _severity_max(*levels: str) -> str:
    return max((lv for lv in levels if lv), key=lambda lv: SEVERITY_RANK.get(lv, 0), default=Severity.LOW)


@dataclass
class Verdict:
    """A finding under construction; citations keep order and stay unique."""

    kind: str
    category: str
    rule: str
    severity: str = Severity.LOW
    safety: bool = False
    explanation: str = ""
    cites: list[ClinicalEntry] = field(default_factory=list)

    def cite(self, *entries: ClinicalEntry | None) -> Verdict:
        for e in entries:
            if e is not None and all((c.resource_type, c.id) != (e.resource_type, e.id) for c in self.cites):
                self.cites.append(e)
        return self

    def raise_to(self, severity: str, safety: bool) -> None:
        self.severity = _severity_max(self.severity, severity)
        self.safety = self.safety or safety


@dataclass
class Context:
    idx: RecordIndex
    kb: Knowledge
    session_text: str  # every patient quote of the session, for co-mentions (an explanation, a drug before a reaction)
    history: Sequence[MemoryDraft]
    turn_text: dict[str, str] = field(default_factory=dict)  # a turn's patient text, rebuilt from its memories' quotes

    def around(self, m: MemoryDraft) -> str:
        """The memory's quote plus the rest of its turn(s): "its the water pill. so i quit it." spans two sentences."""
        parts = [m.quote]
        for turn_id in m.turn_ids:
            text = self.turn_text.get(turn_id, "")
            if text and text not in parts:
                parts.append(text)
        return " ".join(parts)


def _citation(entry: ClinicalEntry) -> Citation:
    coding = entry.primary_coding
    return Citation(entry.resource_type, entry.id, coding.system if coding else "", coding.code if coding else "", entry.display)


def _order_text(entry: ClinicalEntry) -> str:
    """An order's display, detail and dosage instructions, lowercased: how the record says the drug is given."""
    raw = entry.raw or {}
    dosage = " ".join(str(d.get("text") or "") for d in raw.get("dosageInstruction") or [] if isinstance(d, dict))
    return regex_text(" ".join([entry.display or "", entry.detail or "", dosage, str(raw.get("note") or "")]))


def _as_needed(entry: ClinicalEntry) -> bool:
    """An order taken only when needed (FHIR dosageInstruction.asNeeded, or "as needed"/"PRN" in its instructions)."""
    dosages = [d for d in (entry.raw or {}).get("dosageInstruction") or [] if isinstance(d, dict)]
    if any(d.get("asNeededBoolean") or d.get("asNeededCodeableConcept") for d in dosages):
        return True
    return bool(re.search(r"\b(?:as needed|prn)\b", _order_text(entry)))


def _short(entry: ClinicalEntry) -> str:
    name = re.sub(r"\s*\((?:disorder|finding|procedure|situation|substance|regime/therapy)\)\s*$", "", entry.display).strip()
    return _clip(name, 80)


def _text(memory: MemoryDraft) -> str:
    return " ".join(p for p in (memory.quote, memory.content) if p)


def _attr(memory: MemoryDraft, *keys: str) -> str:
    for key in keys:
        value = memory.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _lexicon_terms(memory: MemoryDraft) -> list[str]:
    hits = memory.attributes.get("lexicon") or []
    out = []
    for hit in hits if isinstance(hits, list) else []:
        if isinstance(hit, dict):
            out.extend(str(hit.get(k) or "") for k in ("canonical", "term"))
    return [t for t in out if t]


class RulesReconciler(Reconciler):
    name = "rules"
    base_version = "2.0.0"  # bump whenever a rule's verdict can change: with the judge's fingerprint it keys run idempotency

    @property
    def version(self) -> str:  # type: ignore[override]
        return self.base_version if self.judge is None else f"{self.base_version}+{self.judge.version}"

    def __init__(self) -> None:
        self.kb = load_knowledge()
        self.judge: Judge | None = Judge.load()
        # earlier memories are judged again on every later session (for repeats): remember their keys, for one
        # record object at a time (a new record, or a changed one, starts afresh)
        self._past: dict[tuple, tuple[str, str] | None] = {}
        self._past_record: ClinicalRecord | None = None

    def reconcile(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        """The rules' verdicts through the citation gate, then the learned judge (when its model is shipped)."""
        drafts = [citation_gate(d, record) for d in self.reconcile_rules(memories, record, history=history)]
        return self.judge.apply(memories, drafts, record) if self.judge is not None else drafts

    def reconcile_rules(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        idx = RecordIndex(record, self.kb)
        session_text = " ".join(dict.fromkeys(m.quote for m in memories if m.subject == Subject.PATIENT))
        turn_quotes: dict[str, list[str]] = {}
        for mem in memories:
            quotes = turn_quotes.setdefault(mem.anchor_turn_id, [])
            if mem.quote and mem.quote not in quotes:
                quotes.append(mem.quote)
        ctx = Context(idx=idx, kb=self.kb, session_text=session_text, history=history,
                      turn_text={t: " ".join(q) for t, q in turn_quotes.items()})
        raised = self._raised_before(history, ctx)
        out = []
        for m in memories:
            verdict = self._judge(m, ctx)
            key = _repeat_key(verdict)
            earlier = raised.get(key) if key else None
            if earlier is not None and _elapsed(earlier, m.mention_time) <= REPEAT_WINDOW:
                # the same discrepancy on the same resource was raised from an earlier session: the queue already
                # holds it, and a follow-up mention ("still on half a pill") is not a new finding
                verdict = Verdict(NCR, verdict.category, f"repeat-of-{verdict.rule}"[:80],
                                  explanation="Repeats a discrepancy already raised from an earlier session.").cite(*verdict.cites[:1])
            out.append(self._finding(verdict, m))
        return out

    def _raised_before(self, history: Sequence[MemoryDraft], ctx: Context) -> dict[tuple[str, str], datetime]:
        """Discrepancies the rules raise on the patient's earlier memories: (rule, resource) -> latest mention."""
        if not history:
            return {}
        past = Context(idx=ctx.idx, kb=ctx.kb, session_text="", history=())
        raised: dict[tuple[str, str], datetime] = {}
        if self._past_record is not ctx.idx.record or len(self._past) > 20000:
            self._past = {}
            self._past_record = ctx.idx.record
        for m in history:
            cache_key = (m.anchor_turn_id, m.turn_ids, m.quote, m.category, m.subject, m.assertion, m.mention_time,
                         repr(sorted(m.attributes.items(), key=lambda kv: kv[0])))
            if cache_key not in self._past:
                self._past[cache_key] = _repeat_key(self._judge(m, past))
            key = self._past[cache_key]
            if key and (key not in raised or raised[key] < m.mention_time):
                raised[key] = m.mention_time
        return raised

    def _finding(self, v: Verdict, memory: MemoryDraft) -> FindingDraft:
        discrepancy = v.kind in (CONTRA, GAP)
        v.cites = v.cites[:MAX_CITATIONS]  # the resource the finding is about comes first; a reviewer opens a handful
        return FindingDraft(
            kind=str(v.kind),
            severity=str(v.severity if discrepancy else Severity.LOW),
            # high severity means acute harm potential, which is what the safety flag marks; the flag can still be
            # set on a medium finding (a stopped controller inhaler) from the tables
            safety_critical=bool((v.safety or v.severity == Severity.HIGH) and discrepancy),
            category=str(v.category),
            citations=[_citation(e) for e in v.cites],
            explanation=_sentences(v.explanation, MAX_EXPLANATION),
            rule=v.rule,
            engine=self.name,
            engine_version=self.version,
        )

    # --- dispatch ------------------------------------------------------------------------------

    def _judge(self, m: MemoryDraft, ctx: Context) -> Verdict:
        category = m.category
        if m.subject != Subject.PATIENT and not _only_the_patient_in(m.quote):
            return Verdict(NCR, _record_category(category), "subject-other", explanation="About another person, not the patient.")
        if m.assertion in (Assertion.HYPOTHETICAL, Assertion.UNCERTAIN):
            return Verdict(NCR, _record_category(category), f"assertion-{m.assertion}", explanation="Hypothetical or uncertain; nothing to reconcile.")
        text = _text(m)
        if m.assertion == Assertion.AFFIRMED and _PREGNANT.search(regex_text(m.quote)) and category not in ("goal", "preference"):
            return self._pregnancy(m, ctx)
        if category in ("lifestyle", "care_activity") and m.assertion == Assertion.AFFIRMED:
            # a high-risk symptom filed as chatter ("black tarry stools for 3 days") still reaches the queue
            flag = self._red_flag_verdict(m, ctx, regex_text(m.quote))
            if flag is not None and flag.severity == Severity.HIGH and flag.safety:
                flag.rule = f"{flag.rule}+reread"
                return flag
        handler = {
            "medication": self._medication,
            "allergy": self._allergy,
            "condition": self._condition,
            "symptom": self._condition,
            "measurement": self._measurement,
            "procedure": self._procedure,
            "immunization": self._immunization,
            "care_activity": self._care_activity,
            "lifestyle": self._lifestyle,
        }.get(category)
        if handler is None:
            return Verdict(NCR, Cat.CAREPLAN, "non-clinical", explanation="Goal or preference; no clinical content to reconcile.")
        verdict = handler(m, ctx)
        if verdict.kind == NCR and category not in ("lifestyle",):
            smoking = self._smoking(m, ctx, text)
            if smoking is not None:
                return smoking
        return verdict

    # --- medications ---------------------------------------------------------------------------

    def _drug_mention(self, m: MemoryDraft, ctx: Context | None = None) -> DrugMention:
        """The drug(s) the memory is about, grounded in the patient's own words.

        The extractor's attribute picks which drug of the quote is meant. A drug the quote does not name is trusted
        when the extractor grounded it elsewhere (see `_attributed_drug`); an over-eager fuzzy match is not.
        """
        grounded = drugs_in_text(m.quote, self.kb)
        named_text = " ; ".join([_attr(m, "drug"), _attr(m, "drug_class"), *_lexicon_terms(m)]).strip(" ;")
        named = drugs_in_text(named_text, self.kb) if named_text else DrugMention()
        if not named and not grounded and named_text:
            # the extractor resolved a described device ("the orange disk one") to a class by its name: keep the class
            # when the quote names one of its dosage forms; the record then says which order of that class is meant
            text, words = f" {norm(named_text)} ", set(norm(m.quote).split())
            forms = {c.id for c in self.kb.classes.values() if c.forms and (f" {norm(c.label).strip()} " in text or f" {c.id.replace('_', ' ')} " in text)
                     and words & set(c.forms)}
            if forms:
                return DrugMention(lay_classes=forms)
        if named:
            drugs = [d for d in named.drugs if d in grounded.drugs]
            classes = named.lay_classes & grounded.lay_classes
            if drugs or classes:
                return DrugMention(drugs=drugs, lay_classes=classes if not drugs else set())
            if grounded and (not _attr(m, "drug") or not any(d.name in norm(m.quote) or any(a in norm(m.quote) for a in d.aliases)
                                                               for d in named.drugs)):
                # the attribute names a drug the quote never says (carried over from the turn before): the quote's own drug wins
                return grounded
            # the extractor resolved a lay name ("the hydro something", "water pill") to a drug: keep it when the
            # quote names that drug's class or a prefix of it
            quote = norm(m.quote)
            for d in named.drugs:
                if grounded.lay_classes & self.kb.drug_classes(d) or any(
                    len(w) >= 4 and d.name.startswith(w) for w in quote.split()
                ):
                    return DrugMention(drugs=[d])
            return self._attributed_drug(m, ctx, named) if not grounded else DrugMention()
        if grounded:
            return grounded
        drug = _attr(m, "drug")
        if drug and f" {norm(drug).strip()} " in norm(m.quote):
            return DrugMention(raw_names={w for w in norm(drug).split() if len(w) >= 4 and w.isalpha()})
        return self._attributed_drug(m, ctx, named)

    def _attributed_drug(self, m: MemoryDraft, ctx: Context | None, named: DrugMention) -> DrugMention:
        """The extractor's drug when the quote does not name it but the extractor grounded it: linked to the record's
        order ("my pen" -> the liraglutide order), or named in the memory's own turns under any of its names (the
        class in one sentence, "Sudafed" in the next). A near-miss spelling the conversation never says is not."""
        drug = _attr(m, "drug")
        if not drug:
            return DrugMention()
        if not _attr(m, "record_ref").startswith(("MedicationRequest/", "MedicationStatement/")):
            text = " ".join([m.quote, ctx.around(m) if ctx is not None else ""])
            if drug not in terminology_drugs(text):
                return DrugMention()
        if named.drugs:
            return DrugMention(drugs=list(named.drugs))
        return DrugMention(raw_names={w for w in norm(drug).split() if len(w) >= 4 and w.isalpha()})

    def _action(self, m: MemoryDraft, ctx: Context | None = None) -> str:
        action = _attr(m, "action").lower()
        change = _attr(m, "dose_change").lower()
        quote = regex_text(m.quote)
        clause = _drug_clause(m.quote, self.kb)  # only the clause naming the drug: "stopped the Advil, taking Tylenol"
        if action in ("", "taking") and clause and not change:
            if _HALF.search(clause) or _LESS.search(clause):
                return "less"
            if _MORE.search(clause):
                return "more"
            if _STOP.search(clause) or _SKIP_HABIT.search(clause):
                return "stopped"
        if ctx is not None and action in ("", "taking"):
            # a stop said about "it" in the next sentence of the same turn ("its the water pill. so i quit it.")
            rest = regex_text(ctx.around(m))
            if not _STOP.search(quote) and _STOP.search(rest) and _STOP_REFERRING.search(rest):
                # the stop must not be about another drug named in the same sentence
                names = {d.name for d in drugs_in_text(m.quote, self.kb, fuzzy=False).drugs}
                for sentence in re.split(r"(?<=[.!?])\s+", rest):
                    if _STOP_REFERRING.search(sentence):
                        other = {d.name for d in drugs_in_text(sentence, self.kb, fuzzy=False).drugs}
                        if not other or other & names:
                            return "stopped"
        if m.assertion == Assertion.NEGATED and action in ("", "taking", "took_once"):
            action = "stopped"
        if action in ("changed_dose", "") or change:
            if change in ("half", "less") or _HALF.search(quote) or _LESS.search(quote):
                return "less"
            if change in ("double", "more") or _MORE.search(quote):
                return "more"
        if action:
            return {"skipped": "stopped", "changed_dose": "changed"}.get(action, action)
        if _STOP.search(quote):
            return "stopped"
        if _SKIP.search(quote):
            return "stopped"
        if _RESUME.search(quote):
            return "resumed"
        if _START.search(quote):
            return "started"
        if _ONCE.search(quote) and not _REGULAR.search(quote):
            return "took_once"
        return "taking"

    def _class_sev(self, classes: set[str], which: str, default: tuple[str, bool]) -> tuple[str, bool]:
        best = default if not classes else ("", False)
        for cid in classes:
            cls = self.kb.classes.get(cid)
            if not cls or not getattr(cls, which)[0]:
                continue  # a class the tables hold no facts about says nothing about severity
            sev, safe = getattr(cls, which)
            best = (_severity_max(best[0], sev), best[1] or safe)
        return best if best[0] else default

    def _entry_classes(self, ctx: Context, entries: list[ClinicalEntry]) -> set[str]:
        ids = {(e.resource_type, e.id) for e in entries}
        out: set[str] = set()
        for me in ctx.idx.meds:
            if (me.entry.resource_type, me.entry.id) in ids:
                out |= me.classes
        return out

    def _mention_classes(self, mention: DrugMention, class_text: str = "") -> set[str]:
        classes = set(mention.lay_classes)
        for d in mention.drugs:
            classes |= self.kb.drug_classes(d)
        if not classes and class_text:
            # a drug the tables do not know: the extractor's class words ("opioid analgesic") name a known class
            normed = norm(class_text)
            for cls in self.kb.classes.values():
                if f" {norm(cls.label).strip()} " in normed or f" {cls.id.replace('_', ' ')} " in normed:
                    classes |= self.kb.class_closure({cls.id})
        return classes

    def _context_conditions(self, ctx: Context, text: str) -> list[ClinicalEntry]:
        """Active conditions the patient's words point at: named concepts, or a body site ("for my knee")."""
        found = ctx.idx.conditions_for(concepts_in_text(text, self.kb) - {"pain", "infection", "edema"})
        found += [e for e in self._site_related(ctx, sites_in_text(text, self.kb)) if e.resource_type == "Condition"]
        return found

    def _indications(self, ctx: Context, classes: set[str], text: str = "") -> list[ClinicalEntry]:
        concepts: set[str] = set()
        for cid in classes:
            cls = self.kb.classes.get(cid)
            if cls:
                concepts |= set(cls.indications)
        concepts |= self._purpose_concepts(text)
        found = self._conditions_with_related(ctx, concepts)
        procedures = {p for cid in classes if cid in self.kb.classes for p in self.kb.classes[cid].procedures}
        found += [e for e, pids, _ in ctx.idx.procedures if pids & procedures and e.state == State.ACTIVE]
        return found

    def _purpose_concepts(self, text: str) -> set[str]:
        out: set[str] = set()
        for match in re.finditer(r"\bfor (?:my|the|his|her|our|a|an|some)? ?((?:\w+ ){0,2}\w+)", regex_text(text)):
            phrase = norm(match.group(1))
            for concept in self.kb.conditions.values():
                if any(f" {norm(p).strip()} " in phrase for p in (*concept.purpose, *concept.terms)):
                    out.add(concept.id)
        return out

    def _conditions_with_related(self, ctx: Context, concepts: set[str]) -> list[ClinicalEntry]:
        found = ctx.idx.conditions_for(concepts)
        if not found:
            related = {r for c in concepts if c in self.kb.conditions for r in self.kb.conditions[c].related}
            found = ctx.idx.conditions_for(related)
        return found

    def _interactions(self, ctx: Context, classes: set[str], drugs: list[Drug], *, live_vaccine: bool = False,
                      pregnant: bool = False) -> list[tuple[str, bool, str, list[ClinicalEntry]]]:
        """Interaction rows that fire for what the patient takes against the record: (severity, safety, why, partners)."""
        mine = {f"class:{c}" for c in classes} | {f"drug:{n}" for d in drugs for n in (d.name, *d.components)}  # Tylenol PM is diphenhydramine too
        if live_vaccine:
            mine.add("vaccine:live")
        out = []
        for row in self.kb.interactions:
            for own, other in ((row.a, row.b), (row.b, row.a)):
                if own not in mine:
                    continue
                partners = self._partners(ctx, other, pregnant)
                if partners is None:
                    continue
                lab = ctx.idx.latest_observation(row.loinc) if row.loinc else None
                out.append((row.severity, row.safety, row.why, partners + ([lab] if lab else [])))
                break
        return out

    def _partners(self, ctx: Context, ref: str, pregnant: bool) -> list[ClinicalEntry] | None:
        kind, _, value = ref.partition(":")
        if kind == "class":
            found = ctx.idx.meds_of_classes({value})
        elif kind == "drug":
            found = [me.entry for me in ctx.idx.meds if me.entry.state == State.ACTIVE and value in me.names]
        elif kind == "condition":
            found = ctx.idx.conditions_for({value})
        elif kind == "state" and value == "pregnancy":
            return [] if pregnant or ctx.idx.conditions_for({"pregnancy"}) else None
        else:
            return None
        return found or None

    def _medication(self, m: MemoryDraft, ctx: Context) -> Verdict:
        quote = regex_text(m.quote)
        if _THIRD_PERSON.search(quote) and not _FIRST_PERSON_USE.search(quote):
            return Verdict(NCR, Cat.MEDICATION, "subject-other-in-quote", explanation="The quote describes someone else's medicine.")
        device = self._device_stopped(m, ctx)
        if device is not None:
            return device  # "took my insulin pump off": the device names the order, whatever else the quote names
        mention = self._drug_mention(m, ctx)
        if not mention:
            device = self._device_stopped(m, ctx)
            if device is not None:
                return device
            procedure = self._procedure_like(m, ctx)
            if procedure is not None:
                return procedure
            return Verdict(NCR, Cat.MEDICATION, "med-unnamed", explanation="No drug could be identified.")
        sources = _attr(m, "source").lower()
        someone_else = sources == "someone_else" or bool(_OTHER_SOURCE.search(quote))
        action = self._action(m, ctx)
        if someone_else and _attr(m, "action").lower() in ("", "taking", "took_once", "started"):
            action = "taking"  # "my wife's pills when mine run out": the borrowing is the news, not a stop
        if action == "stopped" and _SUPPLY_RESUMED.search(quote):
            action = "taking"  # "the pharmacy was out, I picked it up the next day": a bridged gap, not a stop
        match = ctx.idx.match_meds(mention)
        classes = self._mention_classes(mention, _attr(m, "drug_class")) | self._entry_classes(ctx, match.active + match.historical + match.error)
        label = _clip(", ".join(sorted(mention.names)), 60) or "this medicine"

        # a red flag in the same breath (rescue inhaler many times a day) outranks a plain agreement
        if match.active and action not in ("stopped", "less"):
            flag = self._red_flag_verdict(m, ctx, regex_text(m.quote), only_classes=self._entry_classes(ctx, match.active))
            if flag is not None:
                return flag

        if m.assertion == Assertion.HISTORICAL and action not in ("stopped",):
            if match.active or match.historical:
                return Verdict(AGREE, Cat.MEDICATION, "med-historical-known", explanation=f"Past use of {label} is in the record.").cite(*(match.historical or match.active))
            return Verdict(NCR, Cat.MEDICATION, "med-historical", explanation="Past medication use; nothing current to reconcile.")

        allergy = self._allergen_taken(m, ctx, mention, action)
        if allergy is not None:
            return allergy

        if action == "stopped" and _attr(m, "action").lower() == "skipped" and match.active and all(_as_needed(e) for e in match.active):
            # a dose of an as-needed order not taken is how the order is meant to be used
            return Verdict(NCR, Cat.MEDICATION, "med-prn-not-needed", explanation=f"{_short(match.active[0])} is ordered as needed.").cite(*match.active)
        if action == "stopped":
            if match.active:
                sev, safe = self._class_sev(self._entry_classes(ctx, match.active), "stop", ("medium", False))
                v = Verdict(CONTRA, Cat.MEDICATION, "med-stopped-active", sev, safe,
                            f"Record lists {_short(match.active[0])} as active; patient reports stopping or not taking it.")
                return v.cite(*match.active, *self._indications(ctx, self._entry_classes(ctx, match.active))[:2])
            if match.historical:
                return Verdict(AGREE, Cat.MEDICATION, "med-stopped-agrees", explanation=f"Record also shows {_short(match.historical[0])} as stopped.").cite(*match.historical)
            return self._careplan_or(m, ctx, Verdict(NCR, Cat.MEDICATION, "med-stopped-unknown", explanation="Stopped a medicine the record does not list."))

        if action in ("less", "more", "changed"):
            if match.active:
                sev, safe = self._class_sev(self._entry_classes(ctx, match.active), "change", ("medium", False))
                word = {"less": "taking less than prescribed (e.g. half a tablet)", "more": "taking more than prescribed"}.get(action, "taking a different dose")
                v = Verdict(CONTRA, Cat.MEDICATION, f"med-dose-{action}", sev, safe,
                            f"Record lists {_short(match.active[0])} ({match.active[0].detail or 'as prescribed'}); patient reports {word}.")
                return v.cite(*match.active, *self._indications(ctx, self._entry_classes(ctx, match.active))[:2])

        # taking / started / resumed / took once / changed dose of an unknown drug
        if match.active and someone_else:
            v = Verdict(GAP, Cat.MEDICATION, "med-undocumented-someone-else", "medium", False,
                        f"Patient reports taking someone else's {label}; the record's own order is {_short(match.active[0])}.")
            return v.cite(*match.active)
        if match.active:
            mismatch = _dose_mismatch(m, match.active)
            if mismatch is not None:
                entry, said = mismatch
                sev, safe = self._class_sev(self._entry_classes(ctx, [entry]), "change", ("medium", False))
                v = Verdict(CONTRA, Cat.MEDICATION, "med-dose-mismatch", sev, safe,
                            f"Record lists {_short(entry)} ({entry.detail or 'as prescribed'}); patient reports {said:g} mg.")
                return v.cite(entry, *self._indications(ctx, self._entry_classes(ctx, [entry]))[:1])
            return Verdict(AGREE, Cat.MEDICATION, "med-active-agrees", explanation=f"Record lists {_short(match.active[0])} as active.").cite(*match.active)
        interactions = self._interactions(ctx, classes, mention.drugs)
        if match.historical and not match.by_class_only and not (_CURRENT_USE.search(regex_text(ctx.around(m))) or action in ("started", "resumed")):
            # a passing mention of a drug the record shows as stopped or completed ("the amoxicillin they gave me")
            return Verdict(NCR, Cat.MEDICATION, "med-historical-mention", explanation="Mentions a past medicine; no current use stated.").cite(*match.historical)
        if match.historical and not match.by_class_only:
            sev, safe = self._class_sev(classes, "new", ("low", False))
            v = Verdict(CONTRA, Cat.MEDICATION, "med-taking-stopped", sev, safe,
                        f"Record shows {_short(match.historical[0])} as {match.historical[0].status}; patient reports taking it.")
            v.cite(*match.historical)
        elif match.error and not match.by_class_only:
            sev, safe = self._class_sev(classes, "new", ("medium", False))
            v = Verdict(GAP, Cat.MEDICATION, f"{ERROR_RULE_PREFIX}med-only-entry", sev, safe,
                        f"Patient reports taking {label}; its only record entry ({_short(match.error[0])}) is marked entered-in-error.")
            v.cite(*match.error)
            v.cite(*self._indications(ctx, classes, m.quote)[:3])
        else:
            if match.by_class_only:
                # "my water pill" with no matching active entry: a lay class name alone is too vague to call a gap
                return Verdict(NCR, Cat.MEDICATION, "med-class-only", explanation="A drug class was named; no specific drug to check.")
            otc = bool(classes) and classes <= (_OTC_CLASSES | {"nsaid_like"})
            if _MODAL_START.search(quote) and action not in ("stopped",):
                return Verdict(NCR, Cat.MEDICATION, "med-considering", explanation="Considering a medicine; nothing taken yet.")
            if otc and not someone_else and not interactions and _OCCASIONAL.search(quote):
                return Verdict(NCR, Cat.MEDICATION, "med-otc-occasional", explanation=f"Occasional over-the-counter {label}.")
            if action == "took_once" and otc and not someone_else:
                # a single over-the-counter dose is coaching material, even where a habit of it would conflict
                return Verdict(NCR, Cat.MEDICATION, "med-otc-once", explanation=f"A single dose of over-the-counter {label}.")
            sev, safe = self._class_sev(classes, "new", ("medium", False))
            if someone_else:
                sev = _severity_max(sev, "medium")
            who = "someone else's prescription" if someone_else else ("an undocumented medicine or supplement")
            v = Verdict(GAP, Cat.MEDICATION, "med-undocumented-someone-else" if someone_else else "med-undocumented", sev, safe,
                        f"Patient reports taking {label} ({who}); the record has no entry for it.")
            v.cite(*ctx.idx.meds_sharing_ingredient(mention.drugs))
            v.cite(*self._indications(ctx, classes, m.quote + " " + _attr(m, "reason"))[:4])
            # therapeutic duplication: what the record already prescribes of the same class
            v.cite(*ctx.idx.meds_of_classes(classes - _BROAD_CLASSES)[:2])
            self._cite_new_medicine_rule(v, ctx)
            v.cite(*self._context_conditions(ctx, ctx.around(m) + " " + _attr(m, "reason"))[:3])
        for sev, safe, why, partners in interactions:
            v.raise_to(sev, safe)
            v.cite(*partners[:3])
            if why not in v.explanation:
                v.explanation = f"{v.explanation} Interaction: {why}."
        return self._careplan_or(m, ctx, v)

    def _careplan_or(self, m: MemoryDraft, ctx: Context, v: Verdict) -> Verdict:
        """Add a documented care-plan restriction the memory runs into (a gap becomes a contradiction)."""
        conflict = self._restriction_hit(m, ctx)
        if conflict is None:
            return v
        careplan, clause = conflict
        if v.kind == NCR:
            v = Verdict(CONTRA, Cat.CAREPLAN, "careplan-restriction", Severity.LOW, False, f"The care plan restricts {_clip(clause, 120)}; the patient reports doing it.")
        elif v.kind == GAP:
            v.kind = CONTRA
            v.rule = f"{v.rule}+careplan"
            v.explanation = f"{v.explanation} The care plan restricts it ({_clip(clause, 80)})."
        if all((c.resource_type, c.id) != (careplan.resource_type, careplan.id) for c in v.cites):
            v.cites.insert(1 if v.cites else 0, careplan)  # the restricting plan right after what it is about
        self._protected_drug(v, clause, ctx)
        return v

    def _cite_new_medicine_rule(self, v: Verdict, ctx: Context) -> None:
        """A plan that says to check before starting any new medicine or supplement is what an undocumented one runs into."""
        for entry, _ in ctx.idx.careplans:
            if entry.state != State.ACTIVE:
                continue
            for activity in careplan_activities(entry):
                text = regex_text(activity)
                if _NEW_MEDICINE_RULE.search(text):
                    v.cite(entry)
                    for row in self.kb.protected_classes:  # and the drug that rule protects (warfarin, a transplant drug)
                        if any(f" {norm(t).strip()} " in f" {norm(activity)} " for t in row["terms"]) or any(
                                f" {norm(t).strip()} " in f" {norm(careplan_text_of(entry))} " for t in row["terms"]):
                            v.cite(*ctx.idx.meds_of_classes({row["class"]})[:1])
                    return

    def _protected_drug(self, v: Verdict, clause: str, ctx: Context) -> None:
        """A restriction that guards an active high-risk drug (vitamin K with warfarin) is a safety matter: raise and cite the drug."""
        text = f" {norm(clause)} "
        classes = {row["class"] for row in self.kb.protected_classes if any(f" {norm(t).strip()} " in text for t in row["terms"])}
        for d in drugs_in_text(clause, self.kb, fuzzy=False).drugs:
            classes |= self.kb.drug_classes(d)
        for row in self.kb.protected_classes:
            if row["class"] not in classes:
                continue
            meds = ctx.idx.meds_of_classes({row["class"]})
            if meds:
                v.raise_to(row["severity"], bool(row["safety"]))
                v.cite(*meds[:2])
                v.explanation += f" The plan guards {self.kb.classes[row['class']].label} therapy."
                return

    def _allergen_taken(self, m: MemoryDraft, ctx: Context, mention: DrugMention, action: str) -> Verdict | None:
        if action in ("stopped",) or not mention.drugs:
            return None
        hits = [ae for ae in ctx.idx.allergy_matches(set(), mention.drugs)]
        active = [ae.entry for ae in hits if ae.entry.state == State.ACTIVE]
        if not active:
            return None
        quote = regex_text(m.quote + " " + _attr(m, "reaction"))
        anaphylaxis = any(f.id == "anaphylaxis" and f.matches(quote) for f in self.kb.red_flags)
        reaction = _attr(m, "reaction") or any(f.id in ("rash", "anaphylaxis") and f.matches(quote) for f in self.kb.red_flags)
        if reaction and not _TOLERATED.search(quote):
            v = Verdict(CONTRA, Cat.ALLERGY, "allergy-listed-allergen-reaction", "high" if anaphylaxis else "medium", anaphylaxis,
                        f"Record lists an active allergy ({_short(active[0])}); patient took a related drug and reacted.")
        else:
            v = Verdict(CONTRA, Cat.ALLERGY, "allergy-tolerated", Severity.LOW, False,
                        f"Record lists an active allergy ({_short(active[0])}); patient reports taking a related drug without a reaction.")
        orders = ctx.idx.match_meds(mention)
        return v.cite(*active, *orders.active, *orders.historical)

    # --- allergies -----------------------------------------------------------------------------

    def _allergy(self, m: MemoryDraft, ctx: Context) -> Verdict:
        substance = _attr(m, "substance")
        text = " ".join([substance, m.content, m.quote])
        quote = regex_text(m.quote + " " + _attr(m, "reaction"))
        allergen_ids = allergens_in_text(substance or m.content, self.kb) or allergens_in_text(m.quote, self.kb)
        mention = drugs_in_text(substance, self.kb) if substance else DrugMention()
        if not mention.drugs:
            mention = drugs_in_text(m.content + " " + m.quote, self.kb)
        hits = ctx.idx.allergy_matches(allergen_ids, mention.drugs)
        active = [ae.entry for ae in hits if ae.entry.state == State.ACTIVE]
        inactive = [ae.entry for ae in hits if ae.entry.state == State.INACTIVE]
        stated = _attr(m, "stated_status").lower()
        reaction = _attr(m, "reaction").lower()
        tolerated = (m.assertion == Assertion.NEGATED or stated in ("tolerated", "resolved") or reaction in ("none", "no reaction", "no")
                     or bool(_TOLERATED.search(quote)))
        if m.assertion == Assertion.HISTORICAL and not tolerated:
            if active or inactive:
                return Verdict(AGREE, Cat.ALLERGY, "allergy-historical-known", explanation="The allergy is in the record.").cite(*(active or inactive))
            return Verdict(NCR, Cat.ALLERGY, "allergy-historical", explanation="A past reaction; nothing current to reconcile.")
        if tolerated:
            if active:
                return Verdict(CONTRA, Cat.ALLERGY, "allergy-tolerated", Severity.LOW, False,
                               f"Record lists an active allergy ({_short(active[0])}); patient reports exposure without a reaction.").cite(*active)
            if inactive:
                return Verdict(AGREE, Cat.ALLERGY, "allergy-inactive-agrees", explanation=f"Record already marks {_short(inactive[0])} inactive.").cite(*inactive)
            return Verdict(NCR, Cat.ALLERGY, "allergy-none", explanation="No reaction reported; nothing to reconcile.")
        if not (allergen_ids or mention.drugs):
            return self._condition(m, ctx)
        if active:
            # the exposure may be told in the turn around the reaction ("took one Sunday... my lips felt puffy")
            exposed = _EXPOSURE.search(quote) or ((stated == "new" or reaction) and _EXPOSURE.search(regex_text(ctx.around(m))))
            if mention.drugs and exposed:
                v = Verdict(CONTRA, Cat.ALLERGY, "allergy-listed-allergen-reaction", Severity.MEDIUM, False,
                            f"Record lists {_short(active[0])} as an active allergy; patient reports being given it again.")
                self._anaphylaxis(v, quote, ctx)
                orders = ctx.idx.match_meds(mention)
                return v.cite(*active, *orders.active, *orders.historical)
            return Verdict(AGREE, Cat.ALLERGY, "allergy-known", explanation=f"Record lists {_short(active[0])} as an active allergy.").cite(*active)
        rule = "allergy-reaction-inactive" if inactive else "allergy-new-reaction"
        v = Verdict(GAP, Cat.ALLERGY, rule, Severity.MEDIUM, False,
                    "Patient reports a reaction to " + (substance or ", ".join(sorted(mention.names)) or "a substance") + " that the allergy list does not show.")
        v.cite(*inactive)
        v.cite(*ctx.idx.allergy_list)
        drug_entries = ctx.idx.match_meds(mention) if mention.drugs else None
        if drug_entries:
            v.cite(*drug_entries.active, *drug_entries.historical, *drug_entries.error)
        drug_allergen = any(a.classes or a.drugs for a in self.kb.allergens if a.id in allergen_ids)
        if mention.drugs or drug_allergen:
            # an unrecorded drug reaction: the next prescriber will not know to avoid it
            v.safety = True
            v.rule = "allergy-new-drug-reaction"
        self._anaphylaxis(v, quote, ctx)
        return v

    def _anaphylaxis(self, v: Verdict, quote: str, ctx: Context) -> None:
        for flag in self.kb.red_flags:
            if flag.id == "anaphylaxis" and flag.matches(quote):
                v.raise_to(flag.severity, flag.safety)
                v.cite(*ctx.idx.conditions_for(set(flag.conditions)))
                v.cite(*ctx.idx.meds_of_classes(set(flag.classes)))
                v.explanation += " Signs of anaphylaxis."

    # --- conditions and symptoms --------------------------------------------------------------

    def _red_flag_verdict(self, m: MemoryDraft, ctx: Context, text: str, *, only_classes: set[str] | None = None) -> Verdict | None:
        flags = [f for f in self.kb.red_flags if f.matches(text)]
        turns = regex_text(" ".join(ctx.turn_text.get(t, "") for t in m.turn_ids))
        if turns:
            # the quote may end before the answer: "asked if I still get dizzy spells ... I told her no, not since"
            flags = [f for f in flags if f.matches(turns) or not any(p.search(turns) for p in f.patterns)]
        if only_classes is not None:
            # inside a medication memory only the flags about that drug's own use count (rescue inhaler overuse)
            flags = [f for f in flags if set(f.classes) & only_classes and f.careplan]
        flags = [f for f in flags if not f.requires_conditions or ctx.idx.conditions_for(set(f.requires_conditions))]
        flags = [f for f in flags if not f.requires_classes or ctx.idx.meds_of_classes(set(f.requires_classes))]
        session = regex_text(ctx.session_text)
        kept = []
        for flag in flags:
            explained = False
            for cid in flag.explained_by:
                if ctx.idx.meds_of_classes({cid}, active_only=False) or any(
                    cid in self.kb.drug_classes(d) for d in drugs_in_text(session, self.kb, fuzzy=False).drugs
                ) or any(norm(t).strip() in norm(session) for t in self.kb.classes[cid].lay):
                    explained = True
            if not explained:
                kept.append(flag)
        if kept and _WENT_AWAY.search(text):
            # a passing, already-resolved minor symptom ("swollen after the flight, went down overnight"); acute
            # red flags (chest pain, fainting, bleeding) matter even when they are over
            kept = [f for f in kept if f.severity == Severity.HIGH]
        if not kept:
            return None
        kept.sort(key=lambda f: (-SEVERITY_RANK[f.severity], -int(f.safety), f.id))
        top = kept[0]
        category = Cat.ALLERGY if top.id in ("anaphylaxis", "rash") else Cat.CONDITION
        v = Verdict(GAP, category, f"redflag-{top.id}", top.severity, top.safety,
                    f"Patient reports {', '.join(f.label for f in kept[:3])}; not in the record.")
        for flag in kept:
            v.raise_to(flag.severity, flag.safety)
            v.cite(*ctx.idx.conditions_for(set(flag.conditions))[:4])
            v.cite(*ctx.idx.meds_of_classes(set(flag.classes))[:3])
            if flag.loinc:
                v.cite(ctx.idx.latest_observation(flag.loinc))
            if flag.careplan:
                v.cite(*ctx.idx.careplans_addressing({e.id for e in ctx.idx.conditions_for(set(flag.conditions))}))
            if flag.id in ("anaphylaxis", "rash"):
                self._reaction_to_listed_allergen(v, m, ctx)
                v.cite(*ctx.idx.allergy_list)
        return v

    def _reaction_to_listed_allergen(self, v: Verdict, m: MemoryDraft, ctx: Context) -> None:
        """A reaction after taking something the allergy list already names contradicts the record: it is still being given."""
        around = ctx.around(m)
        mention = drugs_in_text(around, self.kb)
        hits = [ae.entry for ae in ctx.idx.allergy_matches(allergens_in_text(around, self.kb) - _ENVIRONMENTAL, mention.drugs)
                if ae.entry.state == State.ACTIVE]
        if not hits or not _EXPOSURE.search(regex_text(around)):
            return
        v.kind, v.category = CONTRA, Cat.ALLERGY
        v.rule = f"{v.rule}+listed-allergen"
        v.explanation = f"{v.explanation} Record lists an active allergy ({_short(hits[0])}) to what was taken."
        orders = ctx.idx.match_meds(mention) if mention.drugs else None
        v.cites[:0] = [h for h in hits if h not in v.cites]
        if orders:
            v.cite(*orders.active, *orders.historical)

    def _condition(self, m: MemoryDraft, ctx: Context) -> Verdict:
        name = _attr(m, "name")
        status = _attr(m, "stated_status").lower()
        quote = regex_text(m.quote)
        if m.category == "symptom" and m.assertion == Assertion.AFFIRMED and allergens_in_text(m.quote, self.kb) - _ENVIRONMENTAL and _REACTION.search(quote):
            return self._allergy(m, ctx)  # "hives from the contrast dye": a reaction to something is an allergy question
        if procedures_in_text(m.quote, self.kb) and _SURGERY.search(quote) and m.assertion != Assertion.NEGATED:
            return self._procedure(m, ctx)  # a repaired body part is a procedure, whatever the extractor called it
        grounded = concepts_in_text(m.quote, self.kb)
        named = concepts_in_text(name, self.kb) if name else set()
        # the named concept must be in the patient's words (an abbreviation like "mi" for miles is not a heart attack)
        concepts = (named & grounded) or (grounded if not named else set())
        if named and not concepts and name and f" {norm(name).strip()} " in norm(m.quote):
            concepts = named
        concepts -= {"pregnancy"}
        stage = stage_of(name or m.content) or stage_of(m.quote)
        matches = ctx.idx.match_condition(concepts, content_words(name) if name else set())
        active = [ce for ce in matches if ce.entry.state == State.ACTIVE]
        historical = [ce for ce in matches if ce.entry.state == State.HISTORICAL]
        error = [ce for ce in matches if ce.entry.state == State.ERROR]
        resolved_claim = status == "resolved" or bool(_RESOLVED.search(quote))

        if m.assertion == Assertion.NEGATED:
            if active and resolved_claim:
                return self._condition_denied(active)
            return Verdict(NCR, Cat.CONDITION, "condition-negated", explanation="Denied symptom or condition; nothing to reconcile.")

        # a different stage/type than the active entry ("stage 2, not stage 3")
        if stage and active:
            same = [ce for ce in active if ce.stage == stage]
            other = [ce for ce in active if ce.stage and ce.stage != stage]
            if other and not same:
                v = Verdict(CONTRA, Cat.CONDITION, "condition-stage-conflict", Severity.LOW, False,
                            f"Record lists {_short(other[0].entry)} as active; patient reports {stage}.")
                v.cite(*(ce.entry for ce in other))
                v.cite(*self._condition_labs(ctx, concepts))
                return v
        if (resolved_claim and active and m.assertion != Assertion.HISTORICAL
                and (concepts & _CHRONIC or _CLINICIAN_SAID.search(quote) or status == "resolved")):
            # "my back pain is gone this week" is a good day, not a resolved diagnosis
            return self._condition_denied(active, concepts, ctx)

        if m.assertion == Assertion.HISTORICAL:
            if matches:
                return Verdict(AGREE, Cat.CONDITION, "condition-historical-known", explanation="The past condition is in the record.").cite(*(ce.entry for ce in (historical or active)))
            return Verdict(NCR, Cat.CONDITION, "condition-historical", explanation="A past condition; nothing current to reconcile.")

        flag = self._red_flag_verdict(m, ctx, regex_text(" ".join([m.quote, name])))
        if flag is not None and not (active and not _looks_acute(flag)):
            return flag

        if active:
            return Verdict(AGREE, Cat.CONDITION, "condition-active-agrees", explanation=f"Record lists {_short(active[0].entry)} as active.").cite(*(ce.entry for ce in active))
        diagnosed = status in ("diagnosed", "new") or bool(_DIAGNOSED.search(quote))
        if m.category == "condition" and not concepts and diagnosed and _grounded_term(m):
            term = _grounded_term(m)
            words = content_words(term) | content_words(name)
            same = [ce for ce in ctx.idx.conditions if ce.words & words and ce.entry.state in (State.ACTIVE, State.HISTORICAL)]
            if any(ce.entry.state == State.ACTIVE for ce in same):
                return Verdict(AGREE, Cat.CONDITION, "condition-active-agrees", explanation="The condition is in the record.").cite(*(ce.entry for ce in same))
            v = Verdict(GAP, Cat.CONDITION, "condition-outside-diagnosis", Severity.MEDIUM, False,
                        f"Patient reports a new diagnosis ({term}) that the record does not list.")
            v.cite(*(ce.entry for ce in same))
            v.cite(*self._context_conditions(ctx, ctx.around(m))[:2])
            v.cite(*self._site_related(ctx, sites_in_text(ctx.around(m), self.kb)))
            return v
        if m.category == "symptom" or not concepts:
            return Verdict(NCR, Cat.CONDITION, "symptom-unflagged", explanation="A symptom without red-flag features; nothing to reconcile.")
        labels = ", ".join(sorted(self.kb.conditions[c].terms[0] for c in concepts if c in self.kb.conditions))
        if error:
            v = Verdict(GAP, Cat.CONDITION, f"{ERROR_RULE_PREFIX}condition-only-entry", Severity.MEDIUM, False,
                        f"Patient reports {labels}; the record's only entry for it is marked entered-in-error.")
            v.cite(*(ce.entry for ce in error))
        elif historical:
            v = Verdict(GAP, Cat.CONDITION, "condition-recurrence", Severity.LOW, False,
                        f"Record shows {_short(historical[0].entry)} as {historical[0].entry.status}; patient reports it now.")
            v.cite(*(ce.entry for ce in historical))
        elif diagnosed:
            v = Verdict(GAP, Cat.CONDITION, "condition-outside-diagnosis", Severity.MEDIUM, False,
                        f"Patient reports a diagnosis of {labels} that is not in the record.")
            for c in concepts:
                if c in self.kb.conditions:
                    v.raise_to(*self.kb.conditions[c].diagnosis)
        else:
            # a passing mention of a common complaint ("my allergies", "anxious about it") is chatter; only a
            # chronic disease the tables rate for a diagnosis is worth a reviewer's look when the record lacks it
            if not any(c in self.kb.conditions and c in _DIAGNOSIS_RATED for c in concepts) or status not in ("", "ongoing", "new", "worse"):
                return Verdict(NCR, Cat.CONDITION, "condition-mention", explanation="A passing mention; no diagnosis reported.")
            v = Verdict(GAP, Cat.CONDITION, "condition-undocumented", Severity.LOW, False,
                        f"Patient reports {labels}, which the record does not list.")
        related = {r for c in concepts if c in self.kb.conditions for r in self.kb.conditions[c].related}
        v.cite(*ctx.idx.conditions_for(related, states=(State.ACTIVE, State.HISTORICAL)))
        v.cite(*self._condition_labs(ctx, concepts))
        if flag is not None:
            v.raise_to(flag.severity, flag.safety)
        return v

    def _condition_labs(self, ctx: Context, concepts: set[str]) -> list[ClinicalEntry]:
        out = []
        for c in sorted(concepts):
            concept = self.kb.conditions.get(c)
            if concept and concept.loinc:
                lab = ctx.idx.latest_observation(concept.loinc[:1]) or ctx.idx.latest_observation(concept.loinc)
                if lab:
                    out.append(lab)
        return out[:2]

    def _condition_denied(self, active: list, concepts: set[str] | None = None, ctx: Context | None = None) -> Verdict:
        v = Verdict(CONTRA, Cat.CONDITION, "condition-claimed-resolved", Severity.LOW, False,
                    f"Record lists {_short(active[0].entry)} as active; patient says it is resolved or absent.")
        v.cite(*(ce.entry for ce in active))
        if ctx is not None and concepts:
            v.cite(*self._condition_labs(ctx, concepts))
        return v

    # --- measurements ---------------------------------------------------------------------------

    def _measurement(self, m: MemoryDraft, ctx: Context) -> Verdict:
        kind = _attr(m, "kind").lower()
        measure = self.kb.measures.get(kind)
        quote = regex_text(m.quote)
        if measure is None:
            lab = _lab_in_quote(quote, self.kb)
            if lab is not None:
                kind, value = lab
                measure = self.kb.measures[kind]
                m = _with_attributes(m, {"kind": kind, "value": value})
        if measure is None:
            flag = self._red_flag_verdict(m, ctx, quote)
            return flag or Verdict(NCR, Cat.OBSERVATION, "measure-untracked", explanation="Not a tracked clinical measurement.")
        if m.assertion in (Assertion.NEGATED,):
            return Verdict(NCR, Cat.OBSERVATION, "measure-negated")
        readings = _readings(m, kind, quote)
        conditions = {c for c in ctx.idx.active_concepts}
        worst: tuple[int, object, dict] | None = None
        sex = (getattr(getattr(ctx.idx.record, "patient", None), "sex", "") or "").lower()
        for values in readings:
            values = {**values, "sex": sex}  # sex-specific thresholds (haemoglobin)
            for rule in measure.rules:
                if eval_rule(rule.when, values, conditions):
                    rank = SEVERITY_RANK[rule.severity] * 2 + int(rule.safety)
                    if worst is None or rank > worst[0]:
                        worst = (rank, rule, values)
                    break
        latest = ctx.idx.latest_observation(measure.loinc)
        related_conditions = self._conditions_with_related(ctx, set(measure.conditions))
        if m.assertion == Assertion.HISTORICAL and worst is None:
            return Verdict(NCR, Cat.OBSERVATION, "measure-historical")
        if worst is None:
            if not readings:
                return Verdict(NCR, Cat.OBSERVATION, "measure-no-value", explanation="No value to compare.")
            v = Verdict(AGREE, Cat.OBSERVATION, "measure-in-range", explanation=f"Reported {kind.replace('_', ' ')} is within the reference range.")
            return v.cite(latest)
        _, rule, values = worst
        shown = _show(kind, values)
        v = Verdict(GAP, Cat.OBSERVATION, f"reading-{rule.id}", rule.severity, rule.safety,
                    f"Patient reports {kind.replace('_', ' ')} {shown}, {rule.text}" + (f"; last recorded {latest.detail} ({latest.date[:10]})." if latest and latest.detail else "."))
        v.cite(*related_conditions[:3])
        v.cite(latest)
        v.cite(*(ctx.idx.careplans_mentioning(measure.careplan_terms)[:1] or ctx.idx.careplans_addressing({e.id for e in related_conditions})[:1]))
        flag = self._red_flag_verdict(m, ctx, quote)
        if flag is not None:
            v.raise_to(flag.severity, flag.safety)
            v.cite(*flag.cites[:2])
        return v

    # --- procedures and immunizations ------------------------------------------------------------

    def _event_time(self, m: MemoryDraft) -> datetime:
        if m.event_time is not None and m.event_time.start is not None:
            return m.event_time.start
        return m.mention_time

    def _procedure_like(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        if procedures_in_text(text, self.kb):
            return self._procedure(m, ctx)
        return None

    def _procedure(self, m: MemoryDraft, ctx: Context) -> Verdict:
        name = _attr(m, "name")
        text = " ".join([name, m.content, m.quote])
        ids = procedures_in_text(name, self.kb) if name else set()
        ids = ids or procedures_in_text(m.content, self.kb) or procedures_in_text(m.quote, self.kb)
        if not ids and vaccines_in_text(text, self.kb) and not _SURGERY.search(regex_text(text)):
            return self._immunization(m, ctx)
        sites = sites_in_text(text, self.kb)
        for p in self.kb.procedures:
            if p.id in ids:
                sites |= set(p.sites)
        matches = [e for e, pids, _ in ctx.idx.procedures if pids & ids and e.state == State.ACTIVE]
        term = _grounded_term(m) if m.category == "procedure" else ""
        if not ids and term:
            # a procedure the tables do not know: match record procedures on the extractor's grounded words
            words = content_words(term) | content_words(name)
            matches = [e for e, _, _ in ctx.idx.procedures if e.state == State.ACTIVE and content_words(e.display) & words]
        if not ids and not term and not _SURGERY.search(regex_text(m.quote)):
            return Verdict(NCR, Cat.PROCEDURE, "procedure-unnamed", explanation="No procedure identified.")
        if m.assertion == Assertion.NEGATED and not matches and _GENERIC_SCOPE.search(regex_text(m.quote)):
            # "never had one of those scope tests": a bare 'scope' is any -scopy the record documents
            matches = [e for e, _, _ in ctx.idx.procedures if e.state == State.ACTIVE and "scop" in e.display.lower()]
        if m.assertion == Assertion.NEGATED:
            if matches:
                return Verdict(CONTRA, Cat.PROCEDURE, "procedure-denied", Severity.LOW, False,
                               f"Record documents {_short(matches[0])} ({matches[0].date[:10]}); patient says it was never done.").cite(*matches)
            return Verdict(NCR, Cat.PROCEDURE, "procedure-negated")
        q = regex_text(m.quote)
        if m.assertion == Assertion.AFFIRMED and _PLANNED.search(q) and not _DONE.search(q):
            # "she keeps trying to get me to have one": proposed, not done; nothing to add to the record yet
            return Verdict(NCR, Cat.PROCEDURE, "procedure-proposed", explanation="A proposed procedure; nothing done yet.")
        if m.assertion == Assertion.HISTORICAL or _long_ago(m):
            if matches:
                return Verdict(AGREE, Cat.PROCEDURE, "procedure-historical-known", explanation="The procedure is in the record.").cite(*matches)
            return Verdict(NCR, Cat.PROCEDURE, "procedure-historical")
        when = self._event_time(m)
        close = [e for e in matches if _days_apart(e.date, when) is not None and _days_apart(e.date, when) <= 90]
        if close:
            return Verdict(AGREE, Cat.PROCEDURE, "procedure-recorded", explanation=f"Record documents {_short(close[0])} on {close[0].date[:10]}.").cite(*close)
        v = Verdict(GAP, Cat.PROCEDURE, "procedure-outside", Severity.LOW, False,
                    f"Patient reports a procedure ({name or ', '.join(sorted(ids)) or 'surgery'}) that the record does not document"
                    + (f"; last recorded {_short(matches[0])} on {matches[0].date[:10]}." if matches else "."))
        v.cite(*sorted(matches, key=lambda e: e.date, reverse=True)[:2])
        v.cite(*self._site_related(ctx, sites | sites_in_text(ctx.around(m), self.kb)))
        v.cite(*self._context_conditions(ctx, ctx.around(m))[:2])
        v.cite(*self._word_related(ctx, " ".join([name, m.quote]))[:2])
        # a procedure done on an anticoagulant or antiplatelet needed a hold or bridge plan: the reviewer checks it
        v.cite(*ctx.idx.meds_of_classes({c.id for c in self.kb.classes.values() if c.periprocedural})[:2])
        return v

    def _word_related(self, ctx: Context, text: str) -> list[ClinicalEntry]:
        """Record conditions sharing a distinctive word with the patient's words ("hernia repair" -> "Inguinal hernia")."""
        words = {w for w in content_words(text) if len(w) >= 5} - _CHAT_WORDS
        if not words:
            return []
        return [ce.entry for ce in ctx.idx.conditions if ce.entry.state in (State.ACTIVE, State.HISTORICAL) and ce.words & words]

    def _site_related(self, ctx: Context, sites: set[str]) -> list[ClinicalEntry]:
        if not sites:
            return []
        out: list[ClinicalEntry] = []
        for ce in ctx.idx.conditions:
            if ce.entry.state == State.ACTIVE and sites_in_text(ce.entry.display, self.kb) & sites and "encounter-diagnosis" not in ce.entry.category:
                out.append(ce.entry)
        for entry, _, psites in ctx.idx.procedures:
            if entry.state == State.ACTIVE and psites & sites:
                out.append(entry)
        for site in self.kb.sites:
            if site.id in sites:
                out.extend(ctx.idx.conditions_for(set(site.conditions)))
        return out[:3]

    def _immunization(self, m: MemoryDraft, ctx: Context) -> Verdict:
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        families = vaccines_in_text(_attr(m, "name"), self.kb) if _attr(m, "name") else set()
        families = families or vaccines_in_text(m.content, self.kb) or vaccines_in_text(m.quote, self.kb)
        if not families:
            if procedures_in_text(text, self.kb) or _SURGERY.search(regex_text(text)):
                return self._procedure(m, ctx)
            return Verdict(NCR, Cat.IMMUNIZATION, "vaccine-unnamed", explanation="No vaccine identified.")
        doses = sorted((e for e, fams in ctx.idx.vaccines if fams & families and e.state == State.ACTIVE), key=lambda e: e.date, reverse=True)
        label = ", ".join(sorted(families)).replace("_", " ")
        denied = m.assertion == Assertion.NEGATED or (m.assertion == Assertion.AFFIRMED and bool(_VACCINE_DENIED.search(regex_text(m.quote))))
        if denied:
            if doses:
                return Verdict(CONTRA, Cat.IMMUNIZATION, "vaccine-denied", Severity.LOW, False,
                               f"Record documents {len(doses)} {label} dose(s), latest {doses[0].date[:10]}; patient says never received.").cite(*doses[:4])
            return Verdict(NCR, Cat.IMMUNIZATION, "vaccine-negated")
        if m.assertion == Assertion.HISTORICAL or _long_ago(m):
            if doses:
                return Verdict(AGREE, Cat.IMMUNIZATION, "vaccine-historical-known", explanation="Vaccine history is in the record.").cite(*doses[:2])
            return Verdict(NCR, Cat.IMMUNIZATION, "vaccine-historical")
        when = self._event_time(m)
        close = [e for e in doses if (_days_apart(e.date, when) or 10**6) <= 60]
        if close:
            return Verdict(AGREE, Cat.IMMUNIZATION, "vaccine-recorded", explanation=f"Record documents {_short(close[0])} on {close[0].date[:10]}.").cite(*close)
        live = any(v.live for v in self.kb.vaccines if v.id in families)
        v = Verdict(GAP, Cat.IMMUNIZATION, "vaccine-outside-dose", Severity.LOW, False,
                    f"Patient reports a {label} vaccine dose the record does not show" + (f"; latest recorded {doses[0].date[:10]}." if doses else "."))
        v.cite(*doses[:2])
        if not doses:
            # a first dose of a family: the conditions that make it recommended are what the reviewer checks
            indications = {c for vac in self.kb.vaccines if vac.id in families for c in vac.indications}
            v.cite(*ctx.idx.conditions_for(indications)[:3])
            if not v.cites:
                v.cite(*sorted((e for e, _ in ctx.idx.vaccines if e.state == State.ACTIVE), key=lambda e: e.date, reverse=True)[:1])
        for sev, safe, why, partners in self._interactions(ctx, set(), [], live_vaccine=live):
            v.raise_to(sev, safe)
            v.cite(*partners[:2])
            v.explanation += f" {why.capitalize()}."
        return v

    # --- care activities, lifestyle, smoking, pregnancy ------------------------------------------

    def _restriction_hit(self, m: MemoryDraft, ctx: Context) -> tuple[ClinicalEntry, str] | None:
        if m.assertion != Assertion.AFFIRMED:
            return None
        words = stems(expand_activity_words(m.quote, self.kb))
        if _STOP.search(regex_text(m.quote)):
            return None
        quote = regex_text(m.quote)
        for restriction in ctx.idx.restrictions():
            if restriction.soft and not any(p.search(quote) for p in self.kb.excess):
                continue  # "limit alcohol": a drink is not a conflict, a habit of several is
            for phrase in restriction.phrases:
                if stems(phrase) <= words:
                    return restriction.careplan, restriction.text
        return None

    def _care_activity(self, m: MemoryDraft, ctx: Context) -> Verdict:
        device = self._device_stopped(m, ctx)
        if device is not None:
            return device
        quote = regex_text(m.quote)
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        quote_stems = stems(set(norm(m.quote).split()))
        stopped = (_attr(m, "action").lower() in ("stopped", "skipped") or bool(_STOP.search(quote)) or m.assertion == Assertion.NEGATED
                   or any(p.search(quote) for p in self.kb.lapse))
        def longest(therapy) -> int:  # "cardiac rehab" is cardiac rehab before it is any rehab
            return max((len(t) for t in therapy.terms if stems(set(norm(t).split())) <= quote_stems), default=0)

        for therapy in sorted(self.kb.therapies, key=lambda t: -longest(t)):
            # order-free, inflection-free term match in the patient's words ("haven't checked my blood sugar")
            named = longest(therapy) > 0
            if named and stopped and m.assertion != Assertion.HISTORICAL:
                plans = ctx.idx.careplans_mentioning(therapy.terms)
                conds = ctx.idx.conditions_for(set(therapy.conditions))
                if not plans and not conds:
                    continue
                if SEVERITY_RANK[therapy.severity] < SEVERITY_RANK[Severity.MEDIUM] and _HEDGED.search(quote):
                    continue  # "kinda stopped my PT exercises": coaching material, not a care-plan conflict
                v = Verdict(CONTRA, Cat.CAREPLAN, f"careplan-therapy-abandoned-{therapy.id}", therapy.severity, therapy.safety,
                            f"Care plan includes {therapy.terms[0]}; patient reports stopping it ({therapy.why}).")
                v.cite(*plans, *conds)
                flag = self._red_flag_verdict(m, ctx, regex_text(ctx.session_text))
                if flag is not None and flag.rule == "redflag-drowsy-driving":
                    v.raise_to(flag.severity, flag.safety)
                return v
        lapse = self._activity_lapse(m, ctx, stopped)
        if lapse is not None:
            return lapse
        if m.assertion in (Assertion.NEGATED, Assertion.HISTORICAL):
            return Verdict(NCR, Cat.CAREPLAN, "care-activity-negated")
        hit = self._restriction_hit(m, ctx)
        if hit is not None:
            careplan, clause = hit
            v = Verdict(CONTRA, Cat.CAREPLAN, "careplan-restriction", Severity.LOW, False,
                        f"The care plan restricts {_clip(clause, 120)}; the patient reports doing it.")
            v.cite(careplan)
            v.cite(*ctx.idx.conditions_for({c for c in concepts_in_text(careplan_title(careplan), self.kb)}))
            v.cite(*_addressed(ctx, careplan)[:2])
            self._protected_drug(v, clause, ctx)
            mention = drugs_in_text(text, self.kb, fuzzy=False)
            if mention.drugs:
                for sev, safe, why, partners in self._interactions(ctx, self._mention_classes(mention), mention.drugs):
                    v.raise_to(sev, safe)
                    v.cite(*partners[:3])
                    v.explanation += f" Interaction: {why}."
            return v
        diet = self._diet_conflict(m, ctx)
        if diet is not None:
            return diet
        # a drug the quote names only inside a procedure ("a cortisone shot") is that procedure, not a medicine taken
        mention = drugs_in_text(" ".join([_attr(m, "name"), m.quote]), self.kb, fuzzy=False)
        if mention.drugs and any(c not in ("supplement",) for d in mention.drugs for c in self.kb.drug_classes(d)) \
                and not procedures_in_text(m.quote, self.kb):
            return self._medication(m, ctx)
        flag = self._red_flag_verdict(m, ctx, quote)
        if flag is not None:
            return flag
        return Verdict(NCR, Cat.CAREPLAN, "care-activity", explanation="Routine care activity; nothing conflicts with the record.")

    def _activity_lapse(self, m: MemoryDraft, ctx: Context, stopped: bool) -> Verdict | None:
        """A prescribed care-plan activity the patient says they stopped (beyond the therapies table).

        Exercise and routine words are exempt: a skipped walk is coaching material, not a plan conflict.
        """
        quote = regex_text(m.quote)
        if not stopped or m.assertion == Assertion.HISTORICAL or _HEDGED.search(quote):
            return None
        words = {w for w in stems(set(norm(m.quote).split())) if len(w) >= 4} - stems(set(self.kb.lapse_exempt))
        for entry, _ in ctx.idx.careplans:
            if entry.state != State.ACTIVE:
                continue
            for activity in careplan_activities(entry):
                lowered = regex_text(activity)
                if not any(re.search(rf"\b{re.escape(v.strip())}\b", lowered) for v in self.kb.imperatives):
                    continue
                act_words = {w for w in stems(set(norm(activity).split())) if len(w) >= 4} - stems(set(self.kb.lapse_exempt))
                shared = words & act_words
                if shared:
                    return Verdict(CONTRA, Cat.CAREPLAN, "careplan-activity-lapse", Severity.LOW, False,
                                   f"The care plan asks: {_clip(activity, 100)}; the patient reports stopping it.").cite(entry)
        return None

    def _diet_lapse(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A documented diet the patient names and says they are not keeping ("cheating on my low-sodium diet")."""
        quote = regex_text(m.quote)
        if m.assertion != Assertion.AFFIRMED or not _DIET_LAPSE.search(quote):
            return None
        words = set(re.findall(r"[a-z]+", quote))
        for entry, text in ctx.idx.careplans:
            if entry.state != State.ACTIVE:
                continue
            for phrase in _DIET_NAME.findall(regex_text(text)):
                named = [w for w in re.findall(r"[a-z]+", phrase) if w not in _DIET_GENERIC]
                if named and named[-1] in words:  # the word that names the diet: "gluten", "sodium", "renal"
                    v = Verdict(CONTRA, Cat.CAREPLAN, "careplan-diet-lapse", Severity.LOW, False,
                                f"Care plan documents a {phrase.strip()}; patient reports not keeping to it.")
                    v.cite(entry)
                    v.cite(*_addressed(ctx, entry)[:2])
                    return v
        return None

    def _diet_conflict(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A habitual food or drink against a documented diet (a low-salt plan and fast food every day)."""
        if m.assertion != Assertion.AFFIRMED:
            return None
        lapse = self._diet_lapse(m, ctx)
        if lapse is not None:
            return lapse
        quote = regex_text(m.quote)
        if not any(p.search(quote) for p in self.kb.excess) or _STOP.search(quote):
            return None
        normed = norm(m.quote)
        for row in self.kb.diet_conflicts:
            if not any(f" {norm(t).strip()} " in normed for t in row["members"]):
                continue
            plans = ctx.idx.careplans_mentioning(row["plan_terms"])
            if plans:
                v = Verdict(CONTRA, Cat.CAREPLAN, f"careplan-diet-{row['id']}", row["severity"], bool(row["safety"]),
                            "Patient reports a habit that goes against the documented diet in the care plan.")
                return v.cite(plans[0])
        return None

    def _device_stopped(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """Taking off or disconnecting the device an active order is delivered by ("took my pump off") stops that drug."""
        quote = regex_text(m.quote)
        if m.assertion != Assertion.AFFIRMED or not _DEVICE_OFF.search(quote) or _BRIEF_DISCONNECT.search(quote):
            return None
        for cls in self.kb.classes.values():
            for device in cls.devices:
                if not re.search(rf"\b{re.escape(device)}s?\b", quote):
                    continue
                orders = [e for e in ctx.idx.meds_of_classes({cls.id}) if re.search(rf"\b{re.escape(device)}", _order_text(e))]
                if not orders:
                    continue
                sev, safe = cls.stop
                v = Verdict(CONTRA, Cat.MEDICATION, f"med-device-off-{cls.id}", sev, safe,
                            f"Record has {_short(orders[0])} delivered by {device}; patient reports taking the {device} off.")
                v.cite(*orders)
                v.cite(*self._indications(ctx, {cls.id}, m.quote)[:2])
                return v
        return None

    def _lifestyle(self, m: MemoryDraft, ctx: Context) -> Verdict:
        device = self._device_stopped(m, ctx)
        if device is not None:
            return device
        smoking = self._smoking(m, ctx, _text(m))
        if smoking is not None:
            return smoking
        hit = self._restriction_hit(m, ctx)
        if hit is not None:
            return self._care_activity(m, ctx)
        return self._diet_conflict(m, ctx) or Verdict(NCR, Cat.CAREPLAN, "lifestyle", explanation="Routine or context; no clinical content to reconcile.")

    def _alcohol(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        table = self.kb.smoking["alcohol"]
        quote = regex_text(m.quote)
        heavy = any(re.search(p, quote) for p in table["heavy_patterns"])
        denial = any(re.search(p, quote) for p in table["denial_patterns"])
        if not (heavy or denial) or m.assertion not in (Assertion.AFFIRMED, Assertion.NEGATED):
            return None
        status, entries = ctx.idx.alcohol_status()
        if not status:
            return None
        if heavy and m.assertion == Assertion.AFFIRMED and status in ("none",):
            return Verdict(CONTRA, Cat.OBSERVATION, "alcohol-status-contradicted", table["severity"], table["safety"],
                           "Record documents no alcohol use; patient reports drinking daily or heavily.").cite(*entries)
        if denial and not heavy and status == "heavy":
            return Verdict(CONTRA, Cat.OBSERVATION, "alcohol-denied", table["severity"], table["safety"],
                           "Record documents heavy alcohol use; patient says they do not drink.").cite(*entries)
        return None

    def _smoking(self, m: MemoryDraft, ctx: Context, text: str) -> Verdict | None:
        alcohol = self._alcohol(m, ctx)
        if alcohol is not None:
            return alcohol
        sm = self.kb.smoking
        quote = regex_text(m.quote)
        current = any(re.search(p, quote) for p in sm["current_patterns"])
        denial = any(re.search(p, quote) for p in sm["denial_patterns"])
        if not (current or denial) or m.assertion in (Assertion.HYPOTHETICAL, Assertion.UNCERTAIN):
            return None
        status, entries = ctx.idx.smoking_status()
        related = ctx.idx.conditions_for({"asthma", "copd", "coronary_disease"})
        if denial and m.assertion != Assertion.HISTORICAL and not current:
            if status == "current":
                return Verdict(CONTRA, Cat.OBSERVATION, "smoking-denied", sm["severity"], sm["safety"],
                               "Record documents current tobacco use; patient says they do not smoke.").cite(*entries)
            return Verdict(AGREE, Cat.OBSERVATION, "smoking-agrees", explanation="Not smoking agrees with the record.").cite(*entries) if entries else None
        if current and m.assertion == Assertion.AFFIRMED:
            if status in ("never", "former"):
                v = Verdict(CONTRA, Cat.OBSERVATION, "smoking-status-contradicted", sm["severity"], sm["safety"],
                            f"Record documents the patient as a {status} smoker; patient reports smoking now.")
                return v.cite(*entries, *related[:1])
            if status == "current":
                return Verdict(AGREE, Cat.OBSERVATION, "smoking-agrees", explanation="Current smoking is in the record.").cite(*entries)
            return Verdict(GAP, Cat.OBSERVATION, "smoking-undocumented", Severity.LOW, False,
                           "Patient reports smoking; the record has no smoking status.").cite(*related[:1])
        return None

    def _pregnancy(self, m: MemoryDraft, ctx: Context) -> Verdict:
        if ctx.idx.conditions_for({"pregnancy"}):
            return Verdict(AGREE, Cat.CONDITION, "pregnancy-known", explanation="Pregnancy is in the record.").cite(*ctx.idx.conditions_for({"pregnancy"}))
        v = Verdict(GAP, Cat.CONDITION, "pregnancy-undocumented", Severity.MEDIUM, False, "Patient reports a pregnancy; the record does not show one.")
        # the pregnancy is the new fact: the interaction to check is with the teratogens already prescribed
        teratogens = ctx.idx.meds_of_classes({"teratogen"})
        if teratogens:
            v.raise_to("high", True)
            v.cite(*teratogens[:4])
            v.explanation += " Active medicines include drugs to avoid in pregnancy."
        return v


# --- small pure helpers -----------------------------------------------------------------------------


_MG = re.compile(r"\b(\d+(?:\.\d+)?)\s*(?:mg|milligrams?)\b")
_RECORD_MG = re.compile(r"(\d+(?:\.\d+)?)\s*MG\b(?!\s*/)", re.IGNORECASE)
_TABLETS = re.compile(r"\b(?:take|inhale|inject)\s+(\d+(?:\.\d+)?|one|two|three|half a|1/2)\s+(?:tablets?|capsules?|pills?|puffs?)", re.IGNORECASE)
_WORD_NUM = {"one": 1.0, "two": 2.0, "three": 3.0, "half a": 0.5, "1/2": 0.5}


def _dose_mismatch(m: MemoryDraft, active: list[ClinicalEntry]) -> tuple[ClinicalEntry, float] | None:
    """A single-ingredient active order whose strength (or prescribed dose) differs from the mg the patient states."""
    said = [float(x) for x in _MG.findall(regex_text(" ".join([m.quote, _attr(m, "dose_text")])))]
    if not said:
        return None
    for entry in active:
        strengths = [float(x) for x in _RECORD_MG.findall(entry.display)]
        if len(strengths) != 1 or "/" in entry.display:
            continue
        allowed = {strengths[0]}
        for count in _TABLETS.findall(entry.detail):
            allowed.add(strengths[0] * _WORD_NUM.get(count.lower(), float(count) if count[0].isdigit() else 1.0))
        allowed |= {float(x.replace(",", "")) for x in re.findall(r"\(([\d,]+(?:\.\d+)?) ?mg", entry.detail, re.IGNORECASE)}
        for value in said:
            if all(abs(value - a) > 1e-6 for a in allowed):
                return entry, value
    return None


REPEAT_WINDOW = timedelta(days=90)
MAX_CITATIONS = 6
MAX_EXPLANATION = 600  # a reviewer reads a few sentences; longer ones end at a sentence, never mid-word


def _clip(text: str, limit: int) -> str:
    """Text for inside a sentence: whole words up to limit characters, with an ellipsis when shortened."""
    text = " ".join(text.split()).rstrip(" .;,")
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" .;,")
    return f"{cut}…"


def _sentences(text: str, limit: int) -> str:
    """Whole sentences up to limit characters (the first one is always kept whole)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    parts = re.split(r"(?<=[.!?])\s+", text)
    kept = parts[0]
    for part in parts[1:]:
        if len(kept) + 1 + len(part) > limit:
            break
        kept = f"{kept} {part}"
    return kept


def _repeat_key(v: Verdict) -> tuple[str, str] | None:
    """What makes two discrepancies the same: the rule and the first record resource it is about."""
    if v.kind not in (CONTRA, GAP) or not v.cites:
        return None
    return v.rule.split("+")[0], f"{v.cites[0].resource_type}/{v.cites[0].id}"


_CLAUSE_SPLIT = re.compile(r"[.;!?]+|,\s*|\b(?:but|and then|so|while|whereas)\b")


def _drug_clause(quote: str, kb: Knowledge) -> str:
    """The one clause of the quote that names a drug, when exactly one drug is named in the whole quote."""
    if len(drugs_in_text(quote, kb).drugs) != 1:
        return ""
    clauses = [c for c in _CLAUSE_SPLIT.split(regex_text(quote)) if c and c.strip()]
    hits = [c for c in clauses if drugs_in_text(c, kb).drugs]
    return hits[0] if len(hits) == 1 else ""


_RELATION = re.compile(
    r"\b(?:husband|wife|spouse|partner|mom|mother|dad|father|son|daughter|sister|brother|friend|roommate|neighbou?r|"
    r"boyfriend|girlfriend|coworker|co-worker|aunt|uncle|grandma|grandpa|grandmother|grandfather|cousin|kid|kids|child|"
    r"niece|nephew|boss|in-law|patient|resident|client)s?\b"
)
_THIRD_PRONOUN = re.compile(r"\b(?:he|she|him|his|her|hers|they|them|their|he's|she's)\b")
_FIRST_SUBJECT = re.compile(r"\b(?:i|i've|ive|i'm|im|i'd|i'll)\b")


def _only_the_patient_in(quote: str) -> bool:
    """The quote speaks of the patient alone: first person, no third-person pronoun, relation or proper name."""
    text = regex_text(quote)
    if not _FIRST_SUBJECT.search(text) or _THIRD_PRONOUN.search(text) or _RELATION.search(text):
        return False
    words = quote.replace("\u2019", "'").split()
    # a capitalised word inside the sentence is a name (Tina, Dr. Patel's office): someone else may be meant
    return not any(w[:1].isupper() and not w.startswith("I") and i > 0 and not words[i - 1].endswith((".", "!", "?"))
                   for i, w in enumerate(words))


_PAST_EXPRESSION = re.compile(r"\b(?:years? ago|decades? ago|in (?:19|20)\d\d|back in|since (?:19|20)\d\d|as a (?:kid|child|teen)|when i was|in (?:high school|college))\b")


def _elapsed(start: datetime, end: datetime) -> timedelta:
    """end - start, tolerating one naive and one aware timestamp (compared as wall-clock times)."""
    try:
        return end - start
    except TypeError:
        return end.replace(tzinfo=None) - start.replace(tzinfo=None)


def _long_ago(m: MemoryDraft) -> bool:
    """Past history rather than news: the event is over a year before the mention (resolved time, or a year said)."""
    if m.event_time is not None and m.event_time.start is not None and _PAST_EXPRESSION.search(regex_text(m.event_time.text)):
        # only an expression that dates the event itself; "mine was from 2016" dates an older dose, not this one
        return _elapsed(m.event_time.start, m.mention_time) > timedelta(days=365)
    # without a resolved time, only a year the event is said to happen in ("in 2010", "back in 2010", "since 2010");
    # "mine was from 2016" dates an older dose, not this one
    years = [int(y) for y in re.findall(r"\b(?:in|back in|since|around)\s+((?:19|20)\d\d)\b", regex_text(m.quote))]
    return bool(years) and max(years) < m.mention_time.year - 1


_LAB_KINDS = ("potassium", "ldl", "total_cholesterol", "egfr", "creatinine", "hemoglobin", "tsh", "psa", "a1c", "inr")


def _lab_in_quote(quote: str, kb: Knowledge) -> tuple[str, float] | None:
    """A lab the extractor has no kind for ("my potassium was 5.8"): the named lab and the number right after it."""
    for kind in _LAB_KINDS:
        measure = kb.measures.get(kind)
        if measure is None:
            continue
        for term in sorted(measure.terms, key=len, reverse=True):
            hit = re.search(rf"\b{re.escape(term)}\b(?:\s+(?:level|number|result|was|is|came back|at|of|went up to|dropped to|to|up|down|only)){{0,4}}\s*(\d+(?:\.\d+)?)", quote)
            if hit:
                return kind, float(hit.group(1))
    return None


def _with_attributes(m: MemoryDraft, attributes: dict) -> MemoryDraft:
    from dataclasses import replace

    return replace(m, attributes={**m.attributes, **attributes})


def _grounded_term(m: MemoryDraft) -> str:
    """The extractor's surface term for the memory's thing, if it really is in the quote."""
    quote = norm(m.quote)
    for candidate in [_attr(m, "term"), *(_lexicon_surface(m))]:
        if candidate and len(candidate) >= 3 and f" {norm(candidate).strip()} " in quote:
            return candidate
    return ""


def _lexicon_surface(m: MemoryDraft) -> list[str]:
    hits = m.attributes.get("lexicon") or []
    return [str(h.get("term") or "") for h in hits if isinstance(h, dict)] if isinstance(hits, list) else []


def _addressed(ctx: Context, careplan: ClinicalEntry) -> list[ClinicalEntry]:
    """The conditions a care plan says it addresses (its own references)."""
    out = []
    for ref in (careplan.raw or {}).get("addresses") or []:
        rtype, _, rid = str(ref.get("reference", "") if isinstance(ref, dict) else "").partition("/")
        entry = ctx.idx.record.get(rtype, rid) if rid else None
        if entry is not None and entry.state != State.ERROR:
            out.append(entry)
    return out


def careplan_title(entry: ClinicalEntry) -> str:
    return str((entry.raw or {}).get("title") or entry.display)


def _record_category(memory_category: str) -> str:
    return {
        "medication": Cat.MEDICATION, "allergy": Cat.ALLERGY, "condition": Cat.CONDITION, "symptom": Cat.CONDITION,
        "measurement": Cat.OBSERVATION, "procedure": Cat.PROCEDURE, "immunization": Cat.IMMUNIZATION,
    }.get(memory_category, Cat.CAREPLAN)


def _looks_acute(flag: Verdict) -> bool:
    return flag.severity == Severity.HIGH or flag.safety


def _days_apart(iso: str, when: datetime) -> int | None:
    try:
        day = datetime.fromisoformat(iso[:10]).date()
    except ValueError:
        return None
    return abs((when.date() - day).days)


_NUM = r"(\d{1,3}(?:\.\d+)?)"


def _num(value: object) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", ""))
        except ValueError:
            return None
    return None


def _readings(m: MemoryDraft, kind: str, quote: str) -> list[dict]:
    """Every reading in the memory: the extracted value plus the others the patient listed in the same quote."""
    a = m.attributes
    value, value2, unit = _num(a.get("value")), _num(a.get("value2")), str(a.get("unit") or "").lower()
    out: list[dict] = []
    if kind == "blood_pressure":
        pairs = [(float(s), float(d)) for s, d in re.findall(r"\b(\d{2,3})\s*(?:/|over)\s*(\d{2,3})\b", quote)]
        if value is not None:
            pairs.append((value, value2 or 0.0))
        out = [{"value": s, "value2": d} for s, d in pairs if 50 <= s <= 300]
    elif kind == "glucose":
        values = [value] if value is not None else []
        if "mmol" not in unit:
            values += [float(x) for x in re.findall(r"\b(\d{2,3})\b", quote) if 20 <= float(x) <= 700 and not re.search(rf"\b{x}\s*(?:%|lb|pounds|steps|min|mins|minutes|hours|days|years|mg\b(?!/))", quote)]
        out = [{"value": v * 18.0 if "mmol" in unit and v < 35 else v} for v in values]
    elif kind == "temperature":
        if value is not None:
            celsius = (value - 32) * 5 / 9 if value > 50 or "f" in unit else value
            out = [{"value": value, "celsius": celsius}]
    elif kind == "weight":
        change = _num(a.get("change"))
        gained = re.search(r"(?:gain\w*|up|put on|heavier)\D{0,15}" + _NUM + r"\s*(?:lb|lbs|pounds|kg)", quote) or re.search(
            _NUM + r"\s*(?:lb|lbs|pounds|kg)\s*(?:\w+\s*){0,3}(?:gain|heavier|up)", quote)
        lost = re.search(r"(?:lost|down|dropped)\D{0,15}" + _NUM + r"\s*(?:lb|lbs|pounds|kg)", quote)
        if change is None and gained:
            change = float(gained.group(1))
        elif change is None and lost:
            change = -float(lost.group(1))
        if change is not None:
            if "kg" in quote and "lb" not in quote and "pound" not in quote:
                change *= 2.2
            days = 7.0 if re.search(r"\b(?:a|one|this|last|in a) week\b|\bweek\b", quote) else (
                2.0 if re.search(r"\b(?:overnight|yesterday|two days|2 days|couple (?:of )?days)\b", quote) else 30.0)
            intentional = bool(re.search(r"\b(?:diet|trying|goal|on purpose|ozempic|wegovy|program|walking)\b", quote))
            out = [{"change_lb": change, "days": days, "intentional": intentional}]
    else:
        if value is not None:
            out = [{"value": value, "value2": value2}]
    return out


def _show(kind: str, values: dict) -> str:
    if kind == "blood_pressure":
        return f"{values['value']:g}/{values.get('value2') or 0:g}"
    if kind == "weight":
        return f"change of {values['change_lb']:+g} lb"
    return f"{values.get('value', 0):g}"

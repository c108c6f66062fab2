"""ConText-style assertion and experiencer (subject) detection over chat sentences, in pure Python.

The rules extractor's "own" assertion engine (EXTRACTION_ASSERTION = "own"). The alternative, "context", is medspaCy's
ConText with the chat rules of narrative/data/context_rules.json (narrative/assertion, docs/assertion.md); `assess`
hands a sentence to it when the extractor attached its judge to the triggers. This module is kept because it is the
fallback and the measured baseline, and because the extractor's discourse layer (rules/subject.py) reads its people.

The algorithm follows ConText (Harkema et al. 2009): trigger phrases with a category and a direction
(forward, backward or both), scopes that run to the sentence end or a termination term (but, however,
so, because ...), pseudo-triggers that block a trigger ("not sure" is uncertainty, not negation), and the
nearest trigger wins. Experiencer is resolved the same way, with two additions for chat:
  - SELF triggers ("I", "I'm", "me", "my" not followed by a relation word) end another person's scope;
    there is deliberately no blanket TERMINATE on "I" (a SELF trigger only competes by distance);
  - a possessive owner directly before the target ("Hector's pills") is weak: a SELF trigger earlier in
    the clause ("I took one of Hector's pills") keeps the patient as subject and marks the source.
"""
from __future__ import annotations

from dataclasses import dataclass, field

NEGATED = "negated"
HYPOTHETICAL = "hypothetical"
HISTORICAL = "historical"
UNCERTAIN = "uncertain"
AFFIRMED = "affirmed"

FWD, BWD, BOTH = "fwd", "bwd", "both"

# (phrase, category, direction, max window in tokens)
_ASSERTION_TRIGGERS: list[tuple[str, str, str, int]] = [
    # negation
    ("no", NEGATED, FWD, 6), ("not", NEGATED, FWD, 6), ("never", NEGATED, FWD, 8), ("without", NEGATED, FWD, 5),
    ("don't", NEGATED, FWD, 6), ("dont", NEGATED, FWD, 6), ("didn't", NEGATED, FWD, 6), ("didnt", NEGATED, FWD, 6),
    ("doesn't", NEGATED, FWD, 6), ("doesnt", NEGATED, FWD, 6), ("haven't", NEGATED, FWD, 6), ("havent", NEGATED, FWD, 6),
    ("hasn't", NEGATED, FWD, 6), ("hasnt", NEGATED, FWD, 6), ("isn't", NEGATED, FWD, 4), ("isnt", NEGATED, FWD, 4),
    ("wasn't", NEGATED, FWD, 4), ("wasnt", NEGATED, FWD, 4), ("aren't", NEGATED, FWD, 4), ("weren't", NEGATED, FWD, 4),
    ("won't", NEGATED, FWD, 5), ("cannot", NEGATED, FWD, 4), ("can't", NEGATED, FWD, 3), ("cant", NEGATED, FWD, 3),
    ("denies", NEGATED, FWD, 6), ("deny", NEGATED, FWD, 6), ("none", NEGATED, BOTH, 4), ("nothing", NEGATED, FWD, 4),
    ("nothin", NEGATED, FWD, 4), ("not even", NEGATED, FWD, 5), ("free of", NEGATED, FWD, 4), ("negative for", NEGATED, FWD, 5),
    ("ruled out", NEGATED, BOTH, 5), ("no sign of", NEGATED, FWD, 5), ("no signs of", NEGATED, FWD, 5), ("nor", NEGATED, FWD, 4),
    ("neither", NEGATED, FWD, 5), ("zero", NEGATED, FWD, 3), ("decided against", NEGATED, FWD, 8),
    ("declined", NEGATED, FWD, 8), ("refused", NEGATED, FWD, 8), ("turned down", NEGATED, FWD, 8), ("said no to", NEGATED, FWD, 8),
    ("opted out of", NEGATED, FWD, 8), ("put off", HYPOTHETICAL, FWD, 8), ("putting off", HYPOTHETICAL, FWD, 8),
    ("holding off on", HYPOTHETICAL, FWD, 8), ("postponed", HYPOTHETICAL, FWD, 8), ("waiting on", HYPOTHETICAL, FWD, 6),
    # hypothetical / planned / future
    ("if", HYPOTHETICAL, FWD, 20), ("what if", HYPOTHETICAL, FWD, 16), ("ill", HYPOTHETICAL, FWD, 8), ("in case", HYPOTHETICAL, FWD, 8),
    ("someday", HYPOTHETICAL, BOTH, 12), ("some day", HYPOTHETICAL, BOTH, 12), ("one day", HYPOTHETICAL, BOTH, 10),
    ("eventually", HYPOTHETICAL, BOTH, 10), ("down the road", HYPOTHETICAL, BOTH, 10), ("in the future", HYPOTHETICAL, BOTH, 10),
    ("might", HYPOTHETICAL, FWD, 10), ("may need", HYPOTHETICAL, FWD, 8), ("could", HYPOTHETICAL, FWD, 8),
    ("would", HYPOTHETICAL, FWD, 8), ("should i", HYPOTHETICAL, FWD, 8), ("thinking about", HYPOTHETICAL, FWD, 10),
    ("thinking of", HYPOTHETICAL, FWD, 10), ("considering", HYPOTHETICAL, FWD, 8), ("consider", HYPOTHETICAL, FWD, 8),
    ("plan to", HYPOTHETICAL, FWD, 8), ("planning to", HYPOTHETICAL, FWD, 8), ("planning on", HYPOTHETICAL, FWD, 8),
    ("going to", HYPOTHETICAL, FWD, 6), ("gonna", HYPOTHETICAL, FWD, 6), ("want to", HYPOTHETICAL, FWD, 6),
    ("wanna", HYPOTHETICAL, FWD, 6), ("wants me to", HYPOTHETICAL, FWD, 8), ("wanted me to", HYPOTHETICAL, FWD, 8),
    ("want me to", HYPOTHETICAL, FWD, 8), ("want me", HYPOTHETICAL, FWD, 6), ("wants me", HYPOTHETICAL, FWD, 6),
    ("wanted me", HYPOTHETICAL, FWD, 6), ("talked about", HYPOTHETICAL, FWD, 8), ("talking about", HYPOTHETICAL, FWD, 8),
    ("ask about", HYPOTHETICAL, FWD, 8), ("ask him about", HYPOTHETICAL, FWD, 8), ("ask her about", HYPOTHETICAL, FWD, 8),
    ("ask them about", HYPOTHETICAL, FWD, 8), ("suggested", HYPOTHETICAL, FWD, 8), ("recommended", HYPOTHETICAL, FWD, 8),
    ("will", HYPOTHETICAL, FWD, 6), ("i'll", HYPOTHETICAL, FWD, 6), ("hope to", HYPOTHETICAL, FWD, 6),
    ("hoping to", HYPOTHETICAL, FWD, 6), ("need to", HYPOTHETICAL, FWD, 6), ("needs to", HYPOTHETICAL, FWD, 6),
    ("have to get", HYPOTHETICAL, FWD, 6), ("gotta get", HYPOTHETICAL, FWD, 6), ("supposed to start", HYPOTHETICAL, FWD, 6),
    ("not yet", HYPOTHETICAL, BWD, 12), ("next week", HYPOTHETICAL, BWD, 8), ("next month", HYPOTHETICAL, BWD, 8),
    ("tomorrow", HYPOTHETICAL, BWD, 8), ("scheduled", HYPOTHETICAL, BOTH, 8),
    ("due for", HYPOTHETICAL, FWD, 6), ("option", HYPOTHETICAL, BOTH, 8), ("mentioned starting", HYPOTHETICAL, FWD, 8),
    ("talked about starting", HYPOTHETICAL, FWD, 8), ("brought up starting", HYPOTHETICAL, FWD, 8),
    ("might start", HYPOTHETICAL, FWD, 8), ("may start", HYPOTHETICAL, FWD, 8), ("wants to start", HYPOTHETICAL, FWD, 8),
    ("wants to put me on", HYPOTHETICAL, FWD, 8), ("if needed", HYPOTHETICAL, BWD, 8), ("we'll see", HYPOTHETICAL, BOTH, 10),
    ("well see", HYPOTHETICAL, BOTH, 10), ("or else", HYPOTHETICAL, FWD, 8),
    ("afraid of getting", HYPOTHETICAL, FWD, 6), ("scared of getting", HYPOTHETICAL, FWD, 6),
    ("risk of", HYPOTHETICAL, FWD, 5), ("to prevent", HYPOTHETICAL, FWD, 5),
    # hearsay and media: a drug talked about, read about or advertised is a mention, not a use
    ("telling me about", HYPOTHETICAL, FWD, 8), ("told me about", HYPOTHETICAL, FWD, 8), ("tell me about", HYPOTHETICAL, FWD, 8),
    ("heard about", HYPOTHETICAL, FWD, 8), ("heard that", HYPOTHETICAL, FWD, 10), ("read that", HYPOTHETICAL, FWD, 10),
    ("read about", HYPOTHETICAL, FWD, 8), ("reading about", HYPOTHETICAL, FWD, 8), ("learned about", HYPOTHETICAL, FWD, 8),
    ("commercial for", HYPOTHETICAL, FWD, 4), ("commercials for", HYPOTHETICAL, FWD, 4), ("ad for", HYPOTHETICAL, FWD, 4),
    ("ads for", HYPOTHETICAL, FWD, 4), ("article about", HYPOTHETICAL, FWD, 8), ("looking into", HYPOTHETICAL, FWD, 8),
    ("researching", HYPOTHETICAL, FWD, 8), ("curious about", HYPOTHETICAL, FWD, 8), ("asking about", HYPOTHETICAL, FWD, 8),
    # historical
    ("used to", HISTORICAL, FWD, 8), ("use to", HISTORICAL, FWD, 8), ("years ago", HISTORICAL, BWD, 10),
    ("decades ago", HISTORICAL, BWD, 10), ("as a kid", HISTORICAL, BOTH, 10), ("as a child", HISTORICAL, BOTH, 10),
    ("i was younger", HISTORICAL, BOTH, 10), ("i was little", HISTORICAL, BOTH, 10), ("growing up", HISTORICAL, BOTH, 10),
    ("in the past", HISTORICAL, BOTH, 8), ("previously", HISTORICAL, FWD, 6), ("history of", HISTORICAL, FWD, 5),
    ("back then", HISTORICAL, BOTH, 8), ("long time ago", HISTORICAL, BOTH, 10), ("in my twenties", HISTORICAL, BOTH, 8),
    ("in my 20s", HISTORICAL, BOTH, 8), ("in high school", HISTORICAL, BOTH, 8), ("in college", HISTORICAL, BOTH, 8),
    # uncertainty
    ("not sure", UNCERTAIN, BOTH, 10), ("unsure", UNCERTAIN, BOTH, 8), ("i think maybe", UNCERTAIN, FWD, 10),
    ("maybe", UNCERTAIN, FWD, 10), ("possibly", UNCERTAIN, BOTH, 6), ("probably", UNCERTAIN, FWD, 6), ("idk", UNCERTAIN, FWD, 10),
    ("don't know if", UNCERTAIN, FWD, 10), ("dont know if", UNCERTAIN, FWD, 10), ("i guess", UNCERTAIN, FWD, 8),
    ("guess", UNCERTAIN, FWD, 8), ("i wonder if", UNCERTAIN, FWD, 10), ("wondering if", UNCERTAIN, FWD, 10),
    ("might have", UNCERTAIN, FWD, 8), ("may have", UNCERTAIN, FWD, 8), ("could be", UNCERTAIN, FWD, 8),
    ("could have", UNCERTAIN, FWD, 8), ("pretty sure", UNCERTAIN, FWD, 8), ("suspect", UNCERTAIN, FWD, 8),
    ("supposedly", UNCERTAIN, FWD, 8), ("or something", UNCERTAIN, BWD, 4),
]

# Phrases that look like triggers but are not (matched first, longest wins, they consume their tokens).
_PSEUDO = [
    "not sure", "no doubt", "not only", "not just", "no wonder", "not bad", "no problem", "no worries", "not too bad",
    "even if", "as if", "what if", "no more", "not anymore", "no longer",
    "not yet", "would you", "could you", "will you", "if you", "not a big deal", "nothing new", "nothing else",
    "don't know if", "dont know if", "might have", "may have", "could be", "could have", "i think maybe", "not even",
    "never mind", "not that bad", "no big deal", "not really sure", "not great", "not good", "not so great", "not so good",
    "not well", "not too good", "not too well", "not doing great", "not doing well", "not the best", "not much", "not really",
    "not gonna lie", "no idea", "no clue", "not a lot", "no time", "not fun",
]

TERMINATORS = frozenset(
    "but however though although except yet whereas so because bc cause cuz since which while unless then".split()
)
# "since" as a time preposition ("since Thursday") must not end a scope; handled by _is_time_since.
_TIME_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun "
    "january february march april may june july august september october november december jan feb mar apr jun "
    "jul aug sep sept oct nov dec yesterday today last then thanksgiving christmas easter the this that "
    "morning night week weekend month year summer winter spring fall we i".split()
)

RELATIONS = frozenset(
    """
    husband wife hubby spouse partner boyfriend girlfriend fiance fiancee dad father mom mother mum mama papa pop
    parents parent son daughter kid kids child children brother sister sibling siblings grandma grandmother grandpa
    grandfather granddaughter grandson grandkids grandkid grandchild grandchildren aunt uncle cousin niece nephew
    in-laws inlaws mother-in-law father-in-law sister-in-law brother-in-law son-in-law daughter-in-law stepdad
    stepmom stepson stepdaughter friend friends buddy bff neighbor neighbour neighbors roommate roommates
    coworker co-worker coworkers boss colleague resident residents client clients classmate teammate dog cat
    guy lady man woman girl boy people everyone everybody someone somebody family grandbaby grandbabies bestie ex
    nana granny gramps grandad granddad auntie mr mrs
    twin youngest oldest pastor sponsor landlord teacher stepfather stepmother stepsister stepbrother hubs wifey ma pa
    gf bf bro sis mil fil patient patients fianc
    baby babies toddler infant newborn teen teenager teens goddaughter godson godmother godfather caregiver aide
    housemate housemates flatmate missus pal stepkid stepkids
    """.split()
)
OTHER_PRONOUNS = frozenset("he she him his her hers hes shes he's she's himself herself".split())
SELF_WORDS = frozenset("i i'm im i've ive i'd id me myself mine we we're were we've us our ourselves".split())
CLINICIANS = frozenset(
    """
    doctor doc dr dr's doctor's physician nurse np pa specialist endo endocrinologist cardiologist nephrologist
    neurologist pulmonologist dermatologist dentist surgeon ortho orthopedist gi oncologist psychiatrist therapist
    pharmacist obgyn gyno provider pcp rheumatologist urologist ent optometrist ophthalmologist podiatrist
    pediatrician midwife counselor chiropractor physiatrist hospitalist internist gastroenterologist hematologist
    """.split()
)
# Verbs that, after "he/she", describe a clinician acting on the patient rather than another person's health.
_PRESCRIBER_VERBS = frozenset(
    "added prescribed gave give put switched upped increased raised lowered decreased doubled halved cut changed "
    "told said says wants wanted recommended suggested ordered diagnosed referred sent started took adjusted "
    "bumped dropped stopped refilled renewed thinks".split()
)
_ME_OBJECTS = frozenset("me my i i'm im".split())
_STRONG_PRESCRIBER = frozenset("added prescribed upped increased lowered decreased ordered recommended suggested doubled halved "
                               "referred".split())
_SPEECH = frozenset("said says told thinks thought wants wanted recommended mentioned explained".split())


@dataclass(frozen=True)
class Trigger:
    start: int  # token index
    end: int
    category: str
    direction: str
    window: int
    phrase: str


@dataclass
class ContextResult:
    assertion: str = AFFIRMED
    subject: str = "patient"
    relation: str = ""
    owner: str = ""  # "hector's pills" with the patient taking them
    triggers: list[str] = field(default_factory=list)
    negation_at: int = -1  # token index of the negation trigger that applied (medication actions use it)


def _compile(phrases: list[tuple[str, str, str, int]]) -> dict[int, list[tuple[tuple[str, ...], str, str, int]]]:
    by_len: dict[int, list] = {}
    for phrase, cat, direction, window in phrases:
        toks = tuple(phrase.split())
        by_len.setdefault(len(toks), []).append((toks, cat, direction, window))
    return by_len


_TRIGGER_TABLE = {toks: (cat, d, w) for by in _compile(_ASSERTION_TRIGGERS).values() for toks, cat, d, w in by}
_PSEUDO_TABLE = {tuple(p.split()) for p in _PSEUDO}
_MAX_PHRASE = max(len(t) for t in list(_TRIGGER_TABLE) + list(_PSEUDO_TABLE))


def find_assertion_triggers(words: list[str]) -> list[Trigger]:
    out: list[Trigger] = []
    i, n = 0, len(words)
    while i < n:
        matched = False
        for size in range(min(_MAX_PHRASE, n - i), 0, -1):
            key = tuple(words[i : i + size])
            if key in _PSEUDO_TABLE and key not in _TRIGGER_TABLE:
                i += size
                matched = True
                break
            if key in _TRIGGER_TABLE:
                cat, direction, window = _TRIGGER_TABLE[key]
                if _blocked(words, i, size, key):
                    break
                out.append(Trigger(i, i + size, cat, direction, window, " ".join(key)))
                i += size
                matched = True
                break
        if not matched:
            i += 1
    return out


def _blocked(words: list[str], i: int, size: int, key: tuple[str, ...]) -> bool:
    """Contextual pseudo-triggers that need a look at the neighbours."""
    nxt = words[i + size] if i + size < len(words) else ""
    if key == ("could",) and nxt in {"barely", "hardly", "not", "feel", "tell", "see"}:
        return True
    if key in {("will",), ("i'll",), ("would",)} and nxt in {"say", "admit", "tell", "guess", "think", "love", "like", "confess"}:
        return True
    if key in {("will",), ("i'll",)} and nxt == "be" and i + size + 1 < len(words) and \
            words[i + size + 1] in {"honest", "frank", "real", "straight", "truthful", "upfront"}:
        return True  # "I will be honest with you, I stopped it": a discourse frame, not a future event
    if key == ("no",) and nxt in {"matter", "way", "idea", "one", "joke", "clue", "thanks"}:
        return True
    if key == ("if",) and (nxt in {"that's", "thats", "you", "anything"} or
                           (i > 0 and words[i - 1] in {"sure", "know", "wonder", "wondering", "remember", "recall", "unsure"})):
        return True  # "not sure if I took it" is uncertainty, found by its own trigger
    if key == ("since",):
        return True
    if key == ("going", "to") and i > 0 and words[i - 1] in _ATTENDING:
        return True  # "quit going to physical therapy", "kept going to the gym": attending, not a future plan
    if key == ("ill",) and nxt not in _ILL_VERBS:
        return True  # "ill" as sick, not chat for "I'll"
    return False


_ATTENDING = frozenset("quit quitting stopped stop stops keep kept keeps been started start starts began enjoy enjoyed "
                       "like liked hate hated avoid avoided missed skipped skip".split())
# A new first-person clause between a target and a backward future trigger ("I have X, and I'm getting Y
# next week") means the future belongs to that clause, not to the target.
_NEW_SELF_CLAUSE = frozenset("i i'm im we we're were i've ive".split())
_ILL_VERBS = frozenset("call ask tell try be start take get see need have go do let check make talk text mention bring "
                       "look keep stop switch send pick".split())


def mark_clause_final(words: list[str], tokens: list[tuple[str, int, int]], low: str) -> list[str]:
    """A clause-final "though"/"tho" ("her BP is high though, 170 over 100") is an adverb that contrasts with the
    previous sentence; it does not open a new clause, so it must not end another person's scope."""
    out = words
    for k, (w, _, end) in enumerate(tokens):
        if w in ("though", "tho") and k > 0:
            rest = low[end:].lstrip(" ")
            if not rest or rest[0] in ",.!?;:)\n" or not rest[0].isalnum():
                if out is words:
                    out = list(words)
                out[k] = w + "~"
    return out


def _is_terminator(words: list[str], idx: int) -> bool:
    w = words[idx]
    if w not in TERMINATORS:
        return False
    if w == "since":  # "since thursday" is a time, "since it hurts" is a clause
        nxt = words[idx + 1] if idx + 1 < len(words) else ""
        return nxt not in _TIME_WORDS and not nxt.isdigit()
    if w == "then" and idx > 0 and words[idx - 1] in {"since", "and", "back"}:
        return False
    return True


def _in_scope(words: list[str], trig: Trigger, start: int, end: int) -> bool:
    if trig.direction in (FWD, BOTH) and trig.end <= start:
        if start - trig.end <= trig.window and not any(_is_terminator(words, k) for k in range(trig.end, start)):
            return True
    if trig.direction in (BWD, BOTH) and trig.start >= end:
        if trig.start - end <= trig.window and not any(_is_terminator(words, k) for k in range(end, trig.start)):
            if trig.category == HYPOTHETICAL and trig.direction == BWD and \
                    any(words[k] in _NEW_SELF_CLAUSE for k in range(end + 1, trig.start)):
                return False
            return True
    return False


def assertion_for(words: list[str], start: int, end: int, triggers: list[Trigger] | None = None) -> tuple[str, Trigger | None]:
    """The category of the nearest trigger whose scope covers tokens [start, end)."""
    triggers = triggers if triggers is not None else find_assertion_triggers(words)
    best: tuple[int, Trigger] | None = None
    for trig in triggers:
        if trig.start < end and trig.end > start:
            continue  # a trigger inside the target ("no salt" diet) is part of the target
        if not _in_scope(words, trig, start, end):
            continue
        distance = start - trig.end if trig.end <= start else trig.start - end
        # Hypothetical and historical frames outrank an inner negation ("if I don't take it").
        rank = distance - (50 if trig.category in (HYPOTHETICAL, HISTORICAL) else 0)
        if best is None or rank < best[0]:
            best = (rank, trig)
    if best is None:
        return AFFIRMED, None
    return best[1].category, best[1]


# ---- experiencer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    index: int
    kind: str  # "self", "other", "owner", "clinician"
    relation: str


def find_people(words: list[str], names: set[int] | None = None, clinician_context: bool = False,
                skip: set[int] | None = None, relation_hint: str = "") -> list[Person]:
    """Experiencer triggers in token order. `names` are token indexes of capitalised person names.

    Each token, its relation word normalised (`_relation_form`), goes to the first rule of _PERSON_RULES that takes
    it: a clinician, a relative or a named person, "they" after a relative, a third-person pronoun, a first-person word.
    """
    scan = _Scan(words, names or set(), skip or set(), relation_hint, clinician_context)  # "How's your son?" -> "he" is the son
    for i, w in enumerate(words):
        if i in scan.skip:
            continue
        form = _relation_form(words, i, w)
        if form is None:
            continue
        w, base = form
        for rule in _PERSON_RULES:
            if rule(scan, i, w, base):
                break
    return scan.out


@dataclass
class _Scan:
    """find_people's walk over a sentence: the people so far, the relation "they" and "he"/"she" refer to, and whether
    the last person named was a clinician (whose "she added" is the clinician acting)."""

    words: list[str]
    names: set[int]
    skip: set[int]  # tokens inside a terminology hit
    last_relation: str
    last_was_clinician: bool
    out: list[Person] = field(default_factory=list)


def _relation_form(words: list[str], i: int, w: str) -> tuple[str, str] | None:
    """The token and its relation base, with chat forms of relation words undone; None for a word that is no person."""
    n = len(words)
    base = w[:-2] if w.endswith("'s") else w
    if "-" in base and base not in RELATIONS and base.rsplit("-", 1)[-1] in RELATIONS:
        base = base.rsplit("-", 1)[-1]  # "ex-husband", "step-dad", "great-aunt", "half-sister"
        w = base + ("'s" if w.endswith("'s") else "")
    elif base in ("half", "other") and i > 0 and words[i - 1] in ("better", "other", "significant"):
        base = "spouse"  # "my better half", "my significant other"
        w = base + ("'s" if w.endswith("'s") else "")
    if base in ("gf", "bf") and i + 1 < n and words[i + 1] in _GF_FOODS:
        return None  # "gf" before a food word is gluten-free, not a girlfriend
    if base not in RELATIONS and base.endswith("s") and base[:-1] in RELATIONS:
        if i + 1 < n and words[i + 1] not in _VERBISH:
            base, w = base[:-1], base[:-1] + "'s"  # "my husbands ozempic": a possessive typed without the apostrophe
        else:
            base = base[:-1]  # "the twins both had...": a plural relation
    return w, base


def _clinician_person(scan: _Scan, i: int, w: str, base: str) -> bool:
    """A clinician word: the patient's clinician acting, unless it is another's ("his doctor") or speaks of its own health."""
    if base not in CLINICIANS:
        return False
    words = scan.words
    if i > 0 and words[i - 1] in ("his", "her", "their"):
        return True  # "his doctor": the other person's clinician, the pronoun already counted
    nxt2 = words[i + 1 : i + 3]
    if (nxt2[:1] in (["takes"], ["took"], ["uses"]) and nxt2[1:] != ["me"] and nxt2[1:] != ["my"]) or \
            nxt2 in (["is", "on"], ["was", "on"]):
        # "my doctor's nurse takes Lipitor too": a clinician speaking of their own health is another person
        scan.out.append(Person(i, "other", base))
        scan.last_relation = base
        scan.last_was_clinician = False
        return True
    scan.last_was_clinician = True
    scan.out.append(Person(i, "clinician", base))
    return True


def _relative_person(scan: _Scan, i: int, w: str, base: str) -> bool:
    """A relation word or a person's name: another person, or an owner when possessive right before the target."""
    if base not in RELATIONS and i not in scan.names:
        return False
    words = scan.words
    relation = base if base in RELATIONS else "named person"
    # "my sister's" / "hector's" right before the target: an owner, weak against an earlier SELF
    if w.endswith("'s") and i + 1 < len(words) and words[i + 1] not in {"been", "got", "on", "taking", "had", "is", "not"}:
        scan.out.append(Person(i, "owner", relation))
    else:
        scan.out.append(Person(i, "other", relation))
    scan.last_relation = relation
    scan.last_was_clinician = False
    return True


def _they_person(scan: _Scan, i: int, w: str, base: str) -> bool:
    """"they"/"them" after a relative (not after a clinician) is that relative."""
    if w in ("they", "them", "their", "theirs", "they're", "theyre") and scan.last_relation and not scan.last_was_clinician:
        scan.out.append(Person(i, "other", scan.last_relation))
        return True
    return False


def _pronoun_person(scan: _Scan, i: int, w: str, base: str) -> bool:
    """A third-person pronoun: a clinician acting on the patient, an owner ("some of her Xanax"), or another person."""
    if w not in OTHER_PRONOUNS:
        return False
    words, n, other = scan.words, len(scan.words), scan.last_relation or "other person"
    if w in ("him", "himself", "herself") or (w == "his" and i + 1 < n and words[i + 1] in CLINICIANS):
        # an object or another person's clinician: never the patient's own clinician talking
        scan.out.append(Person(i, "other", other))
        return True
    window = words[i + 1 : i + 4]
    prescribing = any(v in _PRESCRIBER_VERBS for v in window)
    to_me = any(v in _ME_OBJECTS for v in words[i + 1 : i + 7])
    strong = any(v in _STRONG_PRESCRIBER for v in window)
    nxt = words[i + 1] if i + 1 < n else ""
    # A clinician acts on the patient ("she added", "he told me"); "she has", "he's on" is someone's own health.
    if (prescribing and (to_me or strong)) or (scan.last_was_clinician and (nxt in _PRESCRIBER_VERBS or nxt in _SPEECH)):
        scan.out.append(Person(i, "clinician", "clinician"))
    elif w in {"her", "his"} and i > 0 and words[i - 1] in {"use", "used", "borrowed", "with", "to", "for"} and not scan.last_relation:
        pass  # "made me use her cuff": an object, not an experiencer
    elif w in {"her", "his"} and i + 1 < n and words[i + 1] not in RELATIONS and words[i + 1] not in CLINICIANS:
        scan.out.append(Person(i, "owner", other))  # "some of her Xanax"
    else:
        scan.out.append(Person(i, "other", other))
    return True


def _self_person(scan: _Scan, i: int, w: str, base: str) -> bool:
    """A first-person word is the patient, unless it only places or owns something of another person."""
    words, n = scan.words, len(scan.words)
    nxt_base = words[i + 1] if i + 1 < n else ""
    nxt_base = nxt_base[:-2] if nxt_base.endswith("'s") else nxt_base
    if _not_the_experiencer(scan, i, w, nxt_base):
        return True
    if w in SELF_WORDS or (w in ("my", "our") and not (nxt_base in RELATIONS or nxt_base.rstrip("s") in RELATIONS
                                                     or (i + 2 < n and words[i + 2] in RELATIONS))):
        scan.out.append(Person(i, "self", ""))
    elif w == "ill" and i + 1 < n and words[i + 1] in _ILL_VERBS:
        scan.out.append(Person(i, "self", ""))
    return True


def _not_the_experiencer(scan: _Scan, i: int, w: str, nxt_base: str) -> bool:
    """First-person words that are not the experiencer: objects of a preposition, "my" placing or owning for another."""
    words, out = scan.words, scan.out
    if w in ("mine", "ours") and i > 0 and words[i - 1] == "of":
        return True  # "a friend of mine takes...": the friend, not the patient
    if w in ("me", "us") and i > 0 and words[i - 1] in _PREPOSITIONS:
        return True  # "the lady next to me had a stroke": an object of a preposition is not the experiencer
    if w in ("my", "our") and i > 0 and words[i - 1] in ("in", "from", "at", "of", "on") and \
            any(p.kind in ("other", "owner") for p in out[-2:]):
        return True  # "a lady in my walking group has...": "my" modifies where the other person is
    if w in ("my", "our") and i + 1 in scan.skip and out and out[-1].kind in ("other", "owner") and \
            any(words[k] in _TOOK_VERBS for k in range(out[-1].index + 1, i)):
        return True  # "my brother has been taking my oxycodone": "my" owns the drug, the brother takes it
    if w in ("my", "our") and nxt_base in ("age", "generation", "years") and any(p.kind in ("other", "owner") for p in out):
        return True  # "a lot of people my age get shingles": "my" places the others, it is not the experiencer
    if w in ("my", "our") and nxt_base in _INSTRUMENTS and any(p.kind in ("other", "owner") for p in out):
        return True  # "checked my dad's pressure with my cuff": the patient's device, not the experiencer
    return w == "were" and not _WERE_AS_WE_ARE(words, i)  # "her numbers were 180/110": the past tense, not "we're"


# find_people's decision order for one token: the first rule that takes it decides.
_PERSON_RULES = (_clinician_person, _relative_person, _they_person, _pronoun_person, _self_person)


_GF_FOODS = frozenset("bread pasta crackers flour options option version cookies pizza crust bagel bagels wrap wraps "
                      "cereal oats beer diet menu stuff food snacks muffin muffins toast buns bun".split())
_INSTRUMENTS = frozenset("cuff meter machine monitor thermometer oximeter scale watch phone app glucometer kit strips "
                         "car truck kitchen house place".split())


def _WERE_AS_WE_ARE(words: list[str], i: int) -> bool:
    """Chat types "we're" as "were" at the start of a clause ("were doing ok", "and were going to try")."""
    if i > 0 and words[i - 1] not in ("and", "but", "so", "now", "then", "yeah", "ok", "okay", "well"):
        return False
    nxt = words[i + 1] if i + 1 < len(words) else ""
    return nxt.endswith("ing") or nxt in {"ok", "okay", "good", "fine", "all", "both", "still", "not", "gonna", "going", "trying", "on"}


_PREPOSITIONS = frozenset("to with near beside behind from at around like than for".split())
_VERBISH = frozenset("are were have had do did and or too also both all".split())
_TOOK_VERBS = frozenset("took take taking takes tried try trying used use using borrowed borrow had have popped got snagged "
                        "stole swiped".split())


def subject_for(words: list[str], start: int, end: int, people: list[Person]) -> tuple[str, str, str]:
    """(subject, relation, owner) for tokens [start, end): the nearest experiencer trigger wins.

    Another person's forward scope runs to a SELF trigger or a termination term; a backward scope
    ("insulin for my mom") is short. Clinicians never become the subject.
    """
    best_before: Person | None = None
    for p in people:
        if p.index >= start:
            break
        if any(_is_terminator(words, k) and words[k] not in {"since", "then", "so"} for k in range(p.index + 1, start)):
            if p.kind != "self":
                continue
        best_before = p
    owner = ""
    subject, relation = "patient", ""
    if best_before is not None and best_before.kind in ("other", "owner"):
        if best_before.kind == "owner":
            # "I took one of Hector's pills", "she gave me some of her Xanax": the patient took someone's drug
            for p in people:
                if p.kind == "self" and p.index < best_before.index:
                    if any(q.kind == "other" and p.index < q.index < best_before.index for q in people):
                        continue  # "we had a scare, Sam had to use his inhaler": Sam acts, not the patient
                    window = words[max(0, p.index - 2) : best_before.index]
                    gave_me = any(words[k] in ("gave", "give", "giving", "handed", "lent", "loaned") and words[k + 1] == "me"
                                  for k in range(max(0, p.index - 2), min(p.index + 1, len(words) - 1)))
                    if gave_me or any(w in _TOOK_VERBS for w in window):
                        return "patient", "", best_before.relation
        subject, relation = "other", best_before.relation
    # a short backward scope: "... for my dad", "... for him"
    for p in people:
        if p.index >= end and p.index - end <= 3 and p.kind == "other" and end < len(words) and words[end] in {"for", "of"}:
            return "other", p.relation, owner
    return subject, relation, owner


def assess(words: list[str], start: int, end: int, *, names: set[int] | None = None,
           clinician_context: bool = False, triggers: list[Trigger] | None = None,
           people: list[Person] | None = None) -> ContextResult:
    """Assertion and subject of the target tokens [start, end) of one sentence.

    With EXTRACTION_ASSERTION = "context" the extractor hands over triggers that carry the sentence's medspaCy ConText
    judge (rules/assertion.py): the verdict is ConText's, so the sentence rules need not know which engine runs.
    """
    judge = getattr(triggers, "judge", None)
    if judge is not None:
        return judge(start, end)
    assertion, trig = assertion_for(words, start, end, triggers)
    people = people if people is not None else find_people(words, names, clinician_context, skip=set(range(start, end)))
    subject, relation, owner = subject_for(words, start, end, people)
    result = ContextResult(assertion=assertion, subject=subject, relation=relation, owner=owner)
    if trig is not None:
        result.triggers.append(f"{trig.category}:{trig.phrase}")
        if trig.category == NEGATED:
            result.negation_at = trig.start
    return result

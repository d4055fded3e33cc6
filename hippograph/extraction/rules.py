"""Rules of the spaCy extractor: small talk, who pronouns stand for, clause tests, words, slots and notes.

Notes are what the user says about themselves, as short third-person statements with a slot:
single-valued facts ("fact:live_in") are replaced by any newer statement; multi-valued ones carry
their object ("preference:like:hiking"), so only a statement about the same object replaces them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from hippograph.extraction.base import USER
from hippograph.models import Episode, EpisodeKind, NoteKind, Role

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

T = TypeVar("T")
Parts = tuple[tuple[str, str], ...]  # (predicate word, slot-key word): (("LIVES", "live"), ("IN", "in"))


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------------- small talk
_GREETING = (r"(hi+|hello+|hey+|heya|hiya|howdy|yo|greetings|good (morning|afternoon|evening|night|day)|"
             r"morning|evening)( there| all| everyone| guys| friend| again)?")  # fmt: skip
_THANKS = (r"(thanks|thank you|thx|ty|cheers|many thanks|much appreciated|(i )?appreciate it)"
           r"( (so|very) much| a lot| a ton| again| for (that|this|everything|the help|your help))?")
_ACK = (r"(ok(ay)?|k|kk|sure( thing)?|yes|yeah|yep|yup|no|nope|nah|alright|all right|got it|gotcha|cool|"
        r"great|nice|awesome|perfect|wonderful|fantastic|sweet|neat|good|fine|right|agreed|of course|indeed|"
        r"exactly|no problem|no worries|np|you're welcome|you are welcome|welcome|lol|haha+|hah|hmm+|wow|oh|"
        r"ah|same|(that )?(sounds|looks) (good|great|fine|perfect|nice)|(that )?makes sense|i see|will do|"
        r"fair enough|(that's|that is) (great|good|cool|nice|awesome|amazing|fine|ok|okay|right|true|"
        r"interesting)|good (idea|point|call|to know)|absolutely|totally|definitely)")  # fmt: skip
_HOW_ARE_YOU = (r"(how are you( doing| today)?|how are things|how('s| is) it going|how have you been|"
                r"how's (your|the) (day|week)( going)?|what'?s up|sup|wassup|(and|how about|what about) you|"
                r"how do you do|hope you('re| are) (well|good|doing well))")  # fmt: skip
_FINE = (r"((i'm|i am|im) (fine|good|great|ok|okay|well|alright|doing (well|good|great|fine|ok|okay)|"
         r"not bad|pretty good)|not bad|all good|doing (well|good|great|fine)|pretty good|can't complain)")
_PARTING = (r"(bye+|goodbye|good bye|bye bye|see (you|ya)( later| soon| tomorrow)?|later|take care|gn|ttyl|"
            r"talk (to you )?soon|have a (good|nice|great) (day|one|night|evening|weekend)|good night|"
            r"catch you later|(good|nice|great) (to|2) (see|meet|hear from|talk to) you( too| again)?|"
            r"nice meeting you|long time no see|welcome back|(glad|good) to hear( that| it)?)")  # fmt: skip
_SMALL_TALK = re.compile(
    rf"^({_GREETING}|{_THANKS}|{_ACK}|{_HOW_ARE_YOU}|{_FINE}|{_PARTING})( too| as well)?$"
)
_FRAGMENT_SPLIT = re.compile(r"[.!?,;:\n]+|\s+[-–]\s+")
_TRAILING_NAME = re.compile(r"\s+[A-Z][\w'-]*$")
_VOCATIVE = re.compile(r"^\s*[A-Z][\w'-]*( [A-Z][\w'-]*)?\s*$")
_LEADING_FILLER = re.compile(r"^(oh|ah|well|so|and|but|um+|uh+)\s+")


def _is_small_fragment(fragment: str) -> bool:
    text = fragment.strip()
    for _ in range(2):  # a vocative name or two: "Thanks Alice", "Hey Mel"
        text = _TRAILING_NAME.sub("", text)
    text = re.sub(r"\s+", " ", text.lower().replace("’", "'")).strip()
    return bool(_SMALL_TALK.match(_LEADING_FILLER.sub("", text)))


def _only_symbols(text: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PSZC" for ch in text)


def is_small_talk(text: str) -> bool:
    """True when every fragment is a greeting, thanks, acknowledgement, emoji or a bare name."""
    if _only_symbols(text):
        return True
    fragments = [f for f in _FRAGMENT_SPLIT.split(text) if not _only_symbols(f)]
    small = [_is_small_fragment(f) for f in fragments]
    names = [not s and bool(_VOCATIVE.match(f)) for f, s in zip(fragments, small, strict=True)]
    return any(small) and all(s or n for s, n in zip(small, names, strict=True))


# ---------------------------------------------------------------------------------------------- spelling
_CONTRACTIONS = {"im": "I'm", "ive": "I've", "dont": "don't", "cant": "can't", "wont": "won't",
                 "didnt": "didn't", "doesnt": "doesn't", "isnt": "isn't", "wasnt": "wasn't", "arent": "aren't",
                 "couldnt": "couldn't", "shouldnt": "shouldn't", "wouldnt": "wouldn't", "havent": "haven't",
                 "u": "you", "ur": "your", "pls": "please", "plz": "please", "abeg": "please"}  # fmt: skip
_BARE_WORD = re.compile(r"(?<![\w'])(" + "|".join(_CONTRACTIONS) + r")(?![\w'])", re.IGNORECASE)


def normalise(text: str) -> str:
    """Curly apostrophes made straight, and the contractions and shorthands people type without their
    apostrophe spelled out ("im", "dont", "pls"), so the parser reads them as it reads careful text."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"(?<![\w'])i(?=\s|'|$)", "I", text)
    return _BARE_WORD.sub(lambda m: _CONTRACTIONS[m.group(1).lower()], text)


# ---------------------------------------------------------------------------------------------- person
_SPEAKER_PREFIX = re.compile(r"^\s*([A-Z][\w'.-]{0,30}(?: [A-Z][\w'.-]{0,30})?):\s+(?=\S)")
FIRST_PERSON = word_set("i me my mine myself we us our ours ourselves")
SECOND_PERSON = word_set("you your yours yourself yourselves u ur")


# Words that open a line as a label, not as the name of who speaks: "Decided: ...", "Update: ...".
_LABELS = word_set("decided decision update note fyi ps btw question edit summary todo reminder news context "
                   "background problem issue goal idea plan answer tldr important correction also heads")


def split_speaker(text: str) -> tuple[str | None, str]:
    """'Caroline: I went ...' -> ('Caroline', 'I went ...'); text without a prefix is returned as is."""
    match = _SPEAKER_PREFIX.match(text)
    if match is None or match.group(1).split()[0].lower() in _LABELS:
        return None, text
    return match.group(1), text[match.end() :]


def is_first_person(tok: Token) -> bool:
    return tok.pos_ == "PRON" and (tok.lower_ in FIRST_PERSON or (tok.lower_ == "'s" and tok.lemma_ == "us"))


def is_second_person(tok: Token) -> bool:
    return tok.pos_ == "PRON" and tok.lower_ in SECOND_PERSON


@dataclass(frozen=True)
class Speakers:
    """Who the pronouns of one episode stand for, and whether it may yield notes."""

    first: str | None
    second: str | None
    user_names: frozenset[str]
    notes: bool


def speakers_for(episode: Episode, speaker: str | None, user_name: str | None) -> Speakers:
    """role=user: I/me/my/we are the user; role=assistant: you/your are; another named speaker is
    themselves. Only the user's own messages yield notes."""
    full = (user_name or "").strip().lower()
    names = frozenset({full, full.split()[0]} if full else ())  # "Caroline Smith" is also "Caroline"
    if episode.kind != EpisodeKind.message:
        return Speakers(None, None, names, notes=False)
    who = speaker or (episode.name if episode.name not in {r.value for r in Role} else None)
    is_user = who is not None and who.lower() in names
    if episode.role == Role.user:
        return Speakers(USER if who is None or not names or is_user else who, None, names, notes=True)
    second = USER if episode.role == Role.assistant else None
    return Speakers(USER if is_user else who, second, names, notes=False)


# ---------------------------------------------------------------------------------------------- words
_LEMMA_FIXES = {"wanna": "want", "gotta": "have", "gon": "go"}
_IRREGULAR_3SG = {"be": "is", "have": "has", "do": "does", "go": "goes"}
VOWELS = frozenset("aeiou")
_PREDICATE_BAD = re.compile(r"[^A-Z0-9]+")


def lemma(tok: Token) -> str:
    low = tok.lemma_.lower()
    return _LEMMA_FIXES.get(low, low)


def third_person(verb_lemma: str) -> str:
    """'live' -> 'lives', 'watch' -> 'watches', 'study' -> 'studies', 'be' -> 'is'."""
    word = verb_lemma.lower()
    if word in _IRREGULAR_3SG:
        return _IRREGULAR_3SG[word]
    if word.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if len(word) > 1 and word.endswith("y") and word[-2] not in VOWELS:
        return word[:-1] + "ies"
    return word + "s"


def gerund(verb_lemma: str) -> str:
    """'hike' -> 'hiking', 'swim' -> 'swimming', 'play' -> 'playing', 'lie' -> 'lying'."""
    word = verb_lemma.lower()
    if word.endswith("ie"):
        return word[:-2] + "ying"
    if word.endswith("e") and not word.endswith(("ee", "ye", "oe")) and len(word) > 2:
        return word[:-1] + "ing"
    short_cvc = 3 <= len(word) <= 4 and word[-1] not in VOWELS | set("wxy") and word[-2] in VOWELS
    return word + word[-1] + "ing" if short_cvc and word[-3] not in VOWELS else word + "ing"


def sanitise_predicate(parts: Iterable[str]) -> str | None:
    """Join parts into UPPER_SNAKE_CASE matching [A-Z][A-Z0-9_]{0,49}; None if nothing is left."""
    text = _PREDICATE_BAD.sub("_", "_".join(parts).upper()).strip("_")
    return text.lstrip("0123456789_")[:50].rstrip("_") or None


def slug(text: str) -> str:
    """A normalised object for slots: 'the Northwest Region!' -> 'northwest region'."""
    text = re.sub(r"[^\w\s'-]+", " ", text.lower())
    text = re.sub(r"^(the|a|an|my|our|your|their|his|her)\s+", "", text.strip())
    return re.sub(r"\s+", " ", text).strip()


# ---------------------------------------------------------------------------------------------- clauses
_WH = word_set("what who whom whose where when why how which")
_HYPOTHETICAL_AUX = word_set("might may could would should 'd must ought")
_NON_ASSERTIVE = word_set("help want need ask make encourage suggest recommend hope wish try let imagine "
                        "wonder doubt pretend expect")


# "I've decided to get the cert this summer, can you make me a schedule?": a statement with a request
# tagged on; what comes before the request is still said.
_REQUEST = r"[,;]\s*(?:so\s+|and\s+)?(?:can|could|would|will)\s+(?:you|u)\b"
_TAGGED_REQUEST = re.compile(rf"^(?P<said>.+?){_REQUEST}", re.IGNORECASE)
REQUEST_TAIL = re.compile(rf"{_REQUEST}.*$", re.IGNORECASE)  # what to cut from a note: ", can you make me a plan"


def is_question(sent: Span) -> bool:
    text = sent.text.rstrip()
    if text.endswith("?"):
        said = _TAGGED_REQUEST.match(text)
        return said is None or said["said"].split()[0].lower() in _WH or sent[0].pos_ == "AUX"
    if text.endswith(".") or len(sent) < 2:
        return False
    first = sent[0]
    if first.pos_ == "AUX" and first.dep_ in ("aux", "ROOT"):  # "do you live in Seattle"
        return any(c.dep_ in ("nsubj", "nsubjpass") and c.i > first.i for c in first.head.children)
    return first.lower_ in _WH and sent[1].pos_ == "AUX"


def is_hypothetical(verb: Token) -> bool:
    """Modal or conditional: 'I might move', 'if I move', 'I'd like to'. 'will' and 'can' state things."""
    children = list(verb.children)
    modal = any(c.dep_ == "aux" and c.lower_ in _HYPOTHETICAL_AUX for c in children)
    conditional = any(c.dep_ == "advcl" and any(m.dep_ == "mark" and m.lower_ in ("if", "unless") for m in c.children)
                      for c in children)  # "if I get the visa I'll need help": the main clause too
    someday = any(c.lower_ in ("maybe", "perhaps", "someday", "hopefully") or
                  (c.lower_ == "day" and any(g.lower_ in ("one", "some") for g in c.children)) for c in children)
    return modal or conditional or someday or any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether")
                                                  for c in children)


def per_doc(doc: Doc, name: str, build: Callable[[Doc], T]) -> T:
    """What `build` finds in a doc, kept with the doc (in its `user_data`): a rule that asks it of every
    token of a sentence then takes one pass over the doc, not one pass per token."""
    key = f"hippograph.{name}"
    if key not in doc.user_data:
        doc.user_data[key] = build(doc)
    found: T = doc.user_data[key]
    return found


def _known(tok: Token, name: str) -> dict[int, bool]:
    """What a walk up the tree found for the tokens it passed: a chain of coordinated verbs is walked
    once, not once per verb in it."""
    return per_doc(tok.doc, name, lambda _: {})


def is_irrealis(verb: Token) -> bool:
    """Hypothetical clauses, and clauses under one or under a wish: 'I hope you find a flat'."""
    known, passed = _known(verb, "irrealis"), []
    tok = verb
    while (found := known.get(tok.i)) is None:
        passed.append(tok.i)
        if is_hypothetical(tok):
            found = True
            break
        own_subject = any(c.dep_ in ("nsubj", "nsubjpass", "aux") for c in tok.children)
        if tok.dep_ not in ("ccomp", "xcomp", "conj") or (tok.dep_ == "conj" and own_subject):
            found = False
            break
        if tok.dep_ == "ccomp" and own_subject and tok.i < tok.head.i:
            found = False  # "I live in Oslo, can you recommend a dentist?": said first, not what is asked
            break
        lets = lemma(tok.head) == "let" and any(c.dep_ == "nsubj" and c.lemma_ == "us" for c in tok.children)
        if tok.dep_ != "conj" and lemma(tok.head) in _NON_ASSERTIVE and not lets:
            found = True
            break
        tok = tok.head
    known.update(dict.fromkeys(passed, found))
    return found


def is_negated(verb: Token) -> bool:
    """'don't', 'never', 'no longer'; a coordinated verb without its own subject shares its head's."""
    known, passed = _known(verb, "negated"), []
    tok = verb
    while (found := known.get(tok.i)) is None:
        passed.append(tok.i)
        children = list(tok.children)
        if any(c.dep_ == "neg" or c.lower_ == "never" or (c.dep_ == "advmod" and any(g.dep_ == "neg" for g in c.children))
               for c in children):
            found = True
            break
        shares = tok.dep_ == "conj" and not any(c.dep_ in ("nsubj", "nsubjpass", "aux") for c in children)
        if not (shares and tok.head.pos_ in ("VERB", "AUX")):
            found = False
            break
        tok = tok.head
    known.update(dict.fromkeys(passed, found))
    return found


def is_past(verb: Token) -> bool:
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass")]
    if any(a.tag_ in ("VBP", "VBZ", "MD") for a in auxes):
        return False
    return verb.tag_ == "VBD" or any(a.tag_ == "VBD" for a in auxes)


def retracts(sent: Span) -> bool:
    """'no longer', 'anymore': the sentence ends a state that held before."""
    return any(marker in sent.text.lower() for marker in ("anymore", "any more", "no longer", "any longer"))


# ---------------------------------------------------------------------------------------------- slots
SENTIMENT = word_set("like love enjoy adore hate dislike detest loathe")
DECIDING = word_set("decide choose pick opt select settle commit")
KIN_MULTI = word_set("sister brother friend child son daughter kid cousin aunt uncle niece nephew colleague "
                   "coworker grandchild pet dog cat neighbor neighbour classmate roommate teammate mentor")
PETS = word_set("pet dog cat puppy kitten horse rabbit parrot")
KIN = KIN_MULTI | word_set("wife husband partner spouse boyfriend girlfriend fiance fiancee mom mother dad "
                         "father boss manager grandmother grandfather grandma grandpa")
# Predicates with one current value: a new statement replaces the old one whatever its object.
SINGLE_VALUED = word_set("manage live_in work_at work_for be_born_in be_from prefer report_to")
TENSELESS = word_set("be_born_in move_to relocate_to start_at join take_over")  # they state the current value whatever the tense
# Paraphrases of one slot: the role verbs lead/head/run a team/take over, joining or starting at an employer.
KEY_ALIASES = {"move_to": "live_in", "relocate_to": "live_in", "be_manager_of": "manage", "lead": "manage",
               "head_up": "manage", "lead_up": "manage",
               "head": "manage", "take_over": "manage", "be_in_charge_of": "manage", "start_at": "work_at",
               "join": "work_at", "be_at": "work_at", "work_as_at": "work_at", "report_to": "manager"}


# A predicate's verb and preposition with the object's type name a slot whatever the verb's wording:
# "I'm in Leeds" / "based in Lyon" / "settled in Porto" are where the user lives, "I'm at Globex" /
# "working in Initech" / "took a job with Acme" is the employer.
PLACE_KEY = re.compile(r"(?:be|be_base|base|be_locate|live|live_[a-z]+|move|relocate|settle|stay)_(?:in|to)")
_EMPLOYER_KEY = re.compile(r"be_(?:at|with)|be_employ_(?:at|by)|work(?:_[a-z]+)?_(?:at|for|in|with)|start_(?:at|with)|"
                           r"(?:take|get|start|land)_(?:job|position|role|post)_(?:at|with)|(?:take|land|get)_at|"
                           r"(?:move|switch|go)(?:_over|_across)?_to")  # "moved over to Globex"


def _typed_key(key: str, obj_type: str, obj: str = "") -> str:
    if obj_type == "Location" and PLACE_KEY.fullmatch(key):
        return "live_in"
    if key == "be_in" and obj_type not in ("Organization", "Person", "Date", "Event") and obj[:1].isupper() \
            and not obj.isupper():
        return "live_in"  # "we're in Bend now": a named place NER did not know
    if obj_type == "Organization" and _EMPLOYER_KEY.fullmatch(key):
        return "work_at"
    return key


# The user's unit at work, whatever the verb: "on the growth team", "moved across to pricing team".
UNIT_NOUNS = word_set("team squad department dept group ward unit division desk crew")
# A person's role is an agent noun: "a staff nurse", "the Guardian's correspondent", "CTO".
_AGENT = re.compile(r"(?:[a-z]{2,}(?:er|or|ist|ista|ian|ant|ent|ee|eer|ive|ic|yst|ect|eon)|[A-Z]{2,4})$")
_ROLE_WORDS = word_set("nurse chef cook coach pilot vet clerk intern postdoc medic nanny midwife sparky tradie "
                       "mum mom dad parent associate graduate candidate dev eng swe sde rep exec tech prof")


def is_role_noun(word: str) -> bool:
    """An agent noun ('developer', 'pharmacist', 'analyst', 'CTO') or a common role without the
    suffix ('nurse', 'chef'); never a relative ('brother')."""
    low = word.lower()
    return (bool(_AGENT.fullmatch(word)) or low in _ROLE_WORDS) and low not in KIN


def fact_slot(key: str, obj: str, past: bool, obj_type: str = "") -> str:
    """'fact:live_in' for single-valued keys in the present; 'fact:<key>:<object>' otherwise."""
    last = obj.split()[-1] if obj.split() else ""
    if last.lower() in ("boss", "manager", "supervisor") and key in ("have", "get", "have_get"):
        return "fact:manager"  # "I've got a new boss", "I have a new manager"
    moving = key.split("_")[0] in ("move", "switch", "transfer", "join")
    if last.lower() in UNIT_NOUNS and (moving or not past) and key.split("_")[-1] in ("on", "in", "to", "join"):
        if key.count("_") < 2 or moving:
            return "fact:team"
        if is_role_noun(key.split("_")[1]):
            return "fact:title"  # "a data analyst on the growth team"
    if key == "be" and not past and is_role_noun(last) and obj_type not in ("Organization", "Location"):
        return "fact:title"
    canonical = KEY_ALIASES.get(key) or _typed_key(key, obj_type, obj)
    if canonical == "manager":
        return "fact:manager"
    title = re.fullmatch(r"be_([a-z]+)_(at|in|for|with)", canonical)
    own_role = title is not None and (title.group(1) not in KIN or title.group(1) in ("manager", "boss"))
    if own_role and not past:  # "I'm an engineer at X", "front office manager in a resort": the job title
        return "fact:title"
    if key.split("_")[0] in ("start", "work", "join") and key.endswith("_as"):
        return "fact:title"  # "started as rooms division manager", "joined as a lead designer"
    typed = canonical != key and key.split("_")[0] in ("start", "join", "take", "land", "get", "move", "switch")
    if canonical in SINGLE_VALUED and (not past or key in TENSELESS or typed):
        return f"fact:{canonical}"
    return f"fact:{canonical}:{slug(obj)}"


# ---------------------------------------------------------------------------------------------- note text
_THIRD_PERSON_WORDS = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves",
                       "we": "they", "us": "them", "our": "their", "ours": "theirs",
                       "ourselves": "themselves"}  # fmt: skip
_AFTER_THEY = {"am": "are", "'m": "'re", "was": "were"}
_FINITE_3SG = {"am": "is", "'m": "is", "are": "is", "'re": "is", "have": "has", "'ve": "has", "do": "does",
               "were": "was", "'ll": "will", "'d": "would", "wo": "will", "ca": "can", "wanna": "wants to",
               "gotta": "has to", "gon": "is going"}  # fmt: skip
_SPOKEN = {"gon": "going", "na": "to", "wan": "want"}
_KEPT_ADVERBS = word_set("never always recently already often usually sometimes rarely ever longer once soon "
                       "no")
_RIGHT_DROPPED = word_set("conj cc parataxis advcl intj mark dep")
MAX_NOTE_CHARS = 200
MAX_MERGED_CHARS = 2 * MAX_NOTE_CHARS  # wishes of one message merged into one note ("CSV please; no xlsx")


def merged(text: str, more: str) -> str:
    """'Prefers CSV' and "can't stand xlsx" -> "Prefers CSV; can't stand xlsx"; a note that is full
    already (a message repeating its wishes a thousand times) takes no more."""
    return text if len(text) >= MAX_MERGED_CHARS else f"{text}; {more}"


def head_tokens(verb: Token) -> list[Token]:
    """The auxiliaries, negation and verb of a clause, without its subject: 'do n't like'."""
    left = [c for c in verb.lefts if c.dep_ in ("aux", "auxpass", "neg") and c.tag_ != "TO"]
    adverbs = [c for c in verb.lefts if c.dep_ == "advmod" and c.lower_ in _KEPT_ADVERBS]
    return sorted([*left, *(t for a in adverbs for t in a.subtree), verb], key=lambda t: t.i)


def argument_tokens(verb: Token) -> list[Token]:
    """What follows the verb in its clause, without coordinated clauses: 'in Seattle' of 'live'."""
    kept = [c for c in verb.rights if c.dep_ not in _RIGHT_DROPPED]
    while kept and kept[-1].dep_ == "punct":
        kept.pop()
    return [t for child in kept for t in child.subtree]


def phrase_tokens(obj: Token, verb: Token) -> list[Token]:
    """The argument of `verb` that holds `obj`, without the other coordinated items: 'to play tennis'."""
    top = obj
    while top.head != verb and top.head != top and top.dep_ != "conj":
        top = top.head
    return [t for t in top.subtree if not _coordinated(t, top)]


def _coordinated(tok: Token, top: Token) -> bool:
    while tok != top:
        if tok.dep_ in ("conj", "cc", "preconj"):
            return True
        tok = tok.head
    return False


def render(tokens: Sequence[Token], lead: str | None = None, conjugate: bool = True) -> str:
    """Tokens as third-person text: 'do n't like my dog' -> "Doesn't like their dog"."""
    ordered = sorted(set(tokens), key=lambda t: t.i)
    finite = next((t for t in ordered if t.pos_ in ("AUX", "VERB") or t.dep_ in ("ROOT", "conj")), None)
    pieces = [lead, " "] if lead else []
    if conjugate and not lead and finite is ordered[0] and finite.tag_ == "VBG":
        pieces = ["is "]  # "... and making a difference" -> "is making a difference"
    previous = ""
    for pos, tok in enumerate(ordered):
        word = _SPOKEN.get(tok.lower_, tok.text) if tok.pos_ in ("PART", "VERB") else tok.text
        if tok is finite and conjugate and not lead:
            plain = third_person(lemma(tok)) if tok.tag_ in ("VBP", "VB", "NN") else word
            word = _FINITE_3SG.get(tok.lower_, plain)
        elif tok.pos_ == "PRON":
            word = _THIRD_PERSON_WORDS.get(tok.lower_, word)
        elif previous == "they":
            word = _AFTER_THEY.get(tok.lower_, word)
        previous = word.lower()
        contiguous = pos + 1 < len(ordered) and ordered[pos + 1].i == tok.i + 1
        pieces += [word, tok.whitespace_ if contiguous else " "]
    text = "".join(pieces).strip().rstrip(".,;:!-– ").strip()
    if len(text) > MAX_NOTE_CHARS:
        text = text[:MAX_NOTE_CHARS].rsplit(" ", 1)[0]
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------------------------- notes
@dataclass(frozen=True)
class Ref:
    """What a token stands for: an entity name (or USER) and its type."""

    name: str
    type: str
    linkable: bool = True  # False for what is no graph node (relative dates, ...)


@dataclass(frozen=True)
class Frame:
    """One subject -[predicate]-> object found in a clause."""

    subject: Ref
    parts: Parts
    obj: Token
    ref: Ref | None
    verb: Token  # the clause head (the kin noun for kin frames)
    via: tuple[str, ...]  # lemmas of the verbs between the head and the object: ("use",)
    negated: bool
    kind: Literal["verb", "possessive", "kin"] = "verb"

    @property
    def predicate(self) -> str | None:
        return sanitise_predicate(word for word, _ in self.parts)

    @property
    def key(self) -> str:
        return "_".join(key for _, key in self.parts)


Draft = tuple[NoteKind, str, str]  # kind, text, slot

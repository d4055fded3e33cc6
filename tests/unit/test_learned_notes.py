"""The learned notes judgement in the write path, with the weights the package ships: what becomes a note,
which slot it fills, what it replaces (a single-valued slot whatever the words, a multi-valued or keyed one
only for the same thing), what a retraction retires, and that a note less sure than the stated threshold is
a candidate the context block leaves out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hippograph.bench.common import bench_service
from hippograph.config import Settings
from hippograph.errors import ConfigurationError
from hippograph.models import MessageIn, Note
from hippograph.notes_model.corpus import catalogue
from hippograph.service import Hippograph

SLOTS = {s["slot"] for s in catalogue()["slots"]}


def _settings(**extraction: object) -> Settings:
    base = Settings()
    return base.model_copy(update={"extraction": base.extraction.model_copy(
        update={"separate_process": False, **extraction})})


@pytest.fixture(scope="module")
def service() -> Iterator[Hippograph]:
    with bench_service(None, _settings()) as s:
        yield s


def _say(service: Hippograph, user: str, *sessions: list[tuple[str, str, str]]) -> list[Note]:
    for n, messages in enumerate(sessions):
        service.remember(user, f"s{n}", None, [MessageIn(id=i, role=r, content=c) for i, r, c in messages])
    return service.graph.list_notes(user, include_history=True)


def _current(notes: list[Note], word: str) -> list[Note]:
    return [n for n in notes if n.current and word.lower() in n.text.lower()]


def _past(notes: list[Note], word: str) -> list[Note]:
    return [n for n in notes if not n.current and word.lower() in n.text.lower()]


def test_a_move_in_other_words_replaces_the_city(service: Hippograph) -> None:
    notes = _say(service, "mover",
                 [("u1", "user", "I live in Leeds with my partner"), ("a1", "assistant", "Noted!")],
                 [("u2", "user", "the move is finally done, we're in Bristol now")])
    assert _current(notes, "Bristol"), notes
    assert _past(notes, "Leeds") and not _current(notes, "Leeds"), notes
    bristol = _current(notes, "Bristol")[0]
    assert bristol.slot == "city" and 0.0 < bristol.confidence <= 1.0


@pytest.mark.xfail(strict=True, reason="the pair model calls a cat adopted after a dog the same pet (above same 0.3): "
                                       "BENCHMARKS.md 'Notes corpus'")
def test_a_second_pet_is_added_and_a_lost_one_retired(service: Hippograph) -> None:
    notes = _say(service, "petowner",
                 [("u1", "user", "we have a dog called Rex"), ("a1", "assistant", "Lovely!")],
                 [("u2", "user", "and we adopted a cat, Miso, last weekend")])
    assert _current(notes, "Rex") and _current(notes, "Miso"), notes  # a second pet is not a new pet
    notes = _say(service, "petowner", [("u3", "user", "sadly Rex passed away in March")])
    assert _past(notes, "Rex") and not _current(notes, "Rex"), notes
    assert _current(notes, "Miso"), notes  # only that value is retired


@pytest.mark.xfail(strict=True, reason="the pair model of 54 writers calls a payments decision said after the hosting "
                                       "one the same thing: BENCHMARKS.md 'Instructions for the task at hand'")
def test_a_decision_is_replaced_only_by_one_on_its_subject(service: Hippograph) -> None:
    notes = _say(service, "ops",
                 [("u1", "user", "we're hosting everything on AWS for now"), ("a1", "assistant", "OK.")],
                 [("u2", "user", "moved all our hosting over to Hetzner last week")])
    assert _current(notes, "Hetzner") and _past(notes, "AWS") and not _current(notes, "AWS"), notes
    notes = _say(service, "ops", [("u3", "user", "we picked Stripe for the payments in the shop")])
    assert _current(notes, "Stripe") and _current(notes, "Hetzner"), notes  # payments are not hosting


def test_questions_small_talk_and_other_peoples_facts_give_nothing(service: Hippograph) -> None:
    notes = _say(service, "quiet", [
        ("u1", "user", "should I learn Rust next, do you think?"),
        ("u2", "user", "thanks, that's all for today!"),
        ("u3", "user", "my colleague Ines just moved to Berlin"),
    ])
    assert [n for n in notes if n.confidence >= service.stated] == []  # nothing stated (a candidate may be kept)


def test_every_judged_note_has_a_catalogue_slot_and_a_confidence(service: Hippograph) -> None:
    intro = "I'm a staff nurse at St Thomas's, vegetarian, and please keep answers short"
    notes = _say(service, "intro", [("u1", "user", intro)])
    assert notes, "an introduction gives notes"
    for n in notes:
        assert n.slot.split(":", 1)[0] in SLOTS, n
        assert 0.0 < n.confidence <= 1.0


def test_a_candidate_is_in_the_profile_but_not_in_the_context_block() -> None:
    settings = _settings()
    settings = settings.model_copy(update={"profile": settings.profile.model_copy(update={"stated_confidence": 1.0})})
    with bench_service(None, settings) as service:
        notes = _say(service, "unsure", [("u1", "user", "I live in Leeds with my partner")])
        assert _current(notes, "Leeds"), notes
        profile = service.profile("unsure")
        assert profile["facts"] and all(f["candidate"] for f in profile["facts"])
        block = service.context("unsure", "where do I live?", session_id="s9")
        assert not block.sections.get("notes"), block.context  # not stated as a note


def test_rules_alone_when_asked_and_a_missing_weights_folder_is_refused(tmp_path: Path) -> None:
    with bench_service(None, _settings(notes="rules")) as service:
        notes = _say(service, "ruled", [("u1", "user", "I live in Leeds with my partner")])
        assert notes and all(n.slot.split(":", 1)[0] not in SLOTS for n in notes), notes  # the rules' own slots
    with pytest.raises(ConfigurationError, match="no notes judgement weights"), \
            bench_service(None, _settings(notes_weights=tmp_path)):
        pass


def test_two_slots_of_one_message_are_two_notes_in_the_users_words(service: Hippograph) -> None:
    """A note replaces another slot's note through a related slot only when said later, never one of its own
    message; and the word that joined the clauses is not part of the note."""
    notes = _say(service, "twoslots", [("u1", "user", "I live in Lisbon and I work at Globex.")])
    assert {n.text: n.current for n in notes} == {"I live in Lisbon": True, "I work at Globex": True}, notes


def test_the_clauses_of_plain_sentences_are_embedded_while_the_message_is_parsed(service: Hippograph) -> None:
    from datetime import UTC, datetime

    from hippograph.models import Episode, Role

    learned = service.ingestor.notes.learned
    assert learned is not None
    said = ["I moved to Porto in May. My manager is Rui Costa!", "im vegetarian", "Dana: we use Linear now."]
    episodes = [Episode(id=f"e{i}", user_id="ahead", role=Role.user, content=c, timestamp=datetime.now(UTC))
                for i, c in enumerate(said)]
    clauses = [c.text for e in episodes for c in service.ingestor.extractor.extract([e]).clauses[e.id]]
    assert len(clauses) == 4
    learned._cache.clear()
    learned.foresee(said)
    assert set(clauses) <= set(learned._cache)  # the judgement finds each clause's vector made
    assert len(learned._cache) == len(clauses)  # and nothing else was embedded


def test_a_note_is_read_and_indexed_with_its_clauses_vector(service: Hippograph) -> None:
    """A note is its clause's words, trimmed, with its dates made absolute: the judgement reads it again (and
    the index keeps it) with the clause's vector, as training reads a note, without embedding it again."""
    learned = service.ingestor.notes.learned
    assert learned is not None
    learned._cache.clear()
    notes = _say(service, "asclause", [("u1", "user", "I moved to Porto last week.")])
    note = _current(notes, "Porto")
    assert len(note) == 1 and note[0].text != "I moved to Porto last week.", notes  # its date made absolute
    assert "I moved to Porto last week." in learned._cache
    assert learned._cache[note[0].text] is learned._cache["I moved to Porto last week."]
    found = service.search("asclause", "Porto", limit=5)
    assert any(r.id == note[0].id for r in found), found  # indexed under that vector


@pytest.mark.xfail(strict=True, reason="'Please exclude drafts from this report and keep it to the signed contracts' is "
                                       "a lasting rule to the judgement (stated); no reading of the clause tells such one-offs "
                                       "from lasting preferences better (BENCHMARKS.md 'What the clause carries')")
def test_an_instruction_for_the_task_at_hand_stays_in_its_session(service: Hippograph) -> None:
    """'Exclude drafts from this report' is said for one report: the session keeps it (its messages are in
    that session's block), and no note says it, so another session's block does not. Said as a rule for every
    report, it is a note, in every session."""
    asked = ("Can you pull together the quarterly sales report for the board? Please exclude drafts from this report "
             "and keep it to the signed contracts.")
    _say(service, "reports", [
        ("u1", "user", asked),
        ("a1", "assistant", "Sure: the report covers the 14 signed contracts, drafts left out.")])
    notes = service.graph.list_notes("reports")
    assert not [n for n in notes if n.current and "draft" in n.text.lower() and n.confidence >= service.stated], notes
    same = service.context("reports", "which contracts are in the report?", session_id="s0")
    assert "exclude drafts from this report" in same.context  # the session's own tier keeps it
    other = service.context("reports", "what should I cook tonight?", session_id="dinner")
    assert not [i for i in other.sections.get("notes", []) if "draft" in i.text.lower()], other.context

    _say(service, "rules", [("u1", "user", "From now on, leave drafts out of every report you make for me.")])
    later = service.context("rules", "what should I cook tonight?", session_id="dinner")
    assert [i for i in later.sections.get("notes", []) if "draft" in i.text.lower()], later.context

"""SpacyExtractor on the real spaCy model: entities, relations, notes, small talk, pronouns."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from hippograph.extraction import rules
from hippograph.extraction.base import USER, Extraction, Extractor
from hippograph.extraction.spacy_extractor import SpacyExtractor
from hippograph.models import Episode, EpisodeKind, NoteKind, Role

PREDICATE = re.compile(r"^[A-Z][A-Z0-9_]{0,49}$")


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    ex = SpacyExtractor()
    ex.load()
    return ex


def episode(text: str, role: Role | None = Role.user, n: int = 0, **kw: object) -> Episode:
    now = datetime.now(UTC)
    return Episode(id=f"ep{n}", user_id="u1", role=role, content=text, timestamp=now, seq=n, **kw)


def run(
    ex: SpacyExtractor, *texts: str, role: Role | None = Role.user, user_name: str | None = None
) -> Extraction:
    return ex.extract([episode(t, role, n) for n, t in enumerate(texts)], user_name=user_name)


def triples(result: Extraction) -> set[tuple[str, str, str]]:
    return {(r.subject, r.predicate, r.object) for r in result.relations}


def slots(result: Extraction) -> dict[str, str]:
    return {n.slot: n.text for n in result.notes}


def types(result: Extraction) -> dict[str, str]:
    return {e.name: e.type for e in result.entities}


# ---------------------------------------------------------------------------------------------- protocol


def test_is_an_extractor_that_loads_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    import spacy

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the constructor must not load the model")

    monkeypatch.setattr(spacy, "load", no_load)
    ex = SpacyExtractor()
    assert isinstance(ex, Extractor)
    assert ex.name == "spacy"


def test_pipeline_keeps_only_what_it_needs(extractor: SpacyExtractor) -> None:
    names = set(extractor.load().pipe_names)
    assert {"parser", "ner", "lemmatizer"} <= names <= {"tok2vec", "tagger", "parser", "attribute_ruler",
                                                        "lemmatizer", "ner"}  # fmt: skip


def test_one_pipe_call_per_batch(extractor: SpacyExtractor, monkeypatch: pytest.MonkeyPatch) -> None:
    nlp = extractor.load()
    calls: list[int] = []
    original = nlp.pipe

    def counting_pipe(texts: object, **kwargs: object) -> object:
        calls.append(1)
        return original(texts, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nlp, "pipe", counting_pipe)
    result = run(extractor, "I live in Seattle.", "hi", "Alice works at Acme.", "I like hiking")
    assert calls == [1]
    assert result.small_talk == ["ep1"] and len(result.relations) == 3


def test_empty_batch(extractor: SpacyExtractor) -> None:
    assert extractor.extract([]) == Extraction(extractor="spacy")


# ---------------------------------------------------------------------------------------------- relations


def test_first_person_lives_in(extractor: SpacyExtractor) -> None:
    result = run(extractor, "I live in Seattle")
    assert (USER, "LIVES_IN", "Seattle") in triples(result)
    assert types(result)["Seattle"] == "Location"
    assert result.relations[0].fact == "I live in Seattle"
    assert result.mentions == {"ep0": ["Seattle"]}
    assert result.extractor == "spacy"


def test_third_person_works_at(extractor: SpacyExtractor) -> None:
    result = run(extractor, "Alice works at Acme")
    assert ("Alice", "WORKS_AT", "Acme") in triples(result)
    assert types(result) == {"Alice": "Person", "Acme": "Organization"}
    assert result.notes == []  # not about the user


def test_object_noun_chunk_without_determiner(extractor: SpacyExtractor) -> None:
    result = run(extractor, "Bob manages the Northwest region")
    assert ("Bob", "MANAGES", "Northwest region") in triples(result)
    assert types(result)["Northwest region"] in ("Thing", "Concept")


def test_kin_apposition(extractor: SpacyExtractor) -> None:
    for text in ("My sister Emma lives in Boston", "Emma, my sister, lives in Boston."):
        result = run(extractor, text)
        assert ("Emma", "LIVES_IN", "Boston") in triples(result), text
        assert (USER, "HAS_SISTER", "Emma") in triples(result), text
        assert types(result)["Emma"] == "Person"


def test_copula_with_preposition(extractor: SpacyExtractor) -> None:
    result = run(extractor, "Alice is the manager of the Northwest region")
    assert ("Alice", "MANAGER_OF", "Northwest region") in triples(result)


def test_coordination(extractor: SpacyExtractor) -> None:
    assert triples(run(extractor, "Alice and Bob work at Acme.")) >= {
        ("Alice", "WORKS_AT", "Acme"),
        ("Bob", "WORKS_AT", "Acme"),
    }
    assert triples(run(extractor, "I live in Seattle and work at Acme.")) >= {
        (USER, "LIVES_IN", "Seattle"),
        (USER, "WORKS_AT", "Acme"),
    }


@pytest.mark.parametrize(
    "text",
    ["I don't live in Paris", "I no longer live in Paris.", "I never worked at Google.",
     "Alice doesn't work at Acme"],
)  # fmt: skip
def test_negation_makes_no_relation(extractor: SpacyExtractor, text: str) -> None:
    assert run(extractor, text).relations == []


@pytest.mark.parametrize(
    "text",
    ["Do you live in Seattle?", "Where do you work?", "Does Alice work at Acme?", "do you like hiking",
     "I might move to Paris.", "If I move to Paris, I will tell you.", "I hope you find a flat in Seattle."],
)  # fmt: skip
def test_questions_and_hypotheticals_make_nothing(extractor: SpacyExtractor, text: str) -> None:
    result = run(extractor, text)
    assert result.relations == [] and result.notes == []


def test_no_relations_to_numbers_or_relative_dates(extractor: SpacyExtractor) -> None:
    result = run(extractor, "I ran 5 miles yesterday.", "Bob bought three.", "I moved here in 2019.")
    assert all(not re.fullmatch(r"[\d\s]+|three|5 miles|yesterday", r.object) for r in result.relations)
    assert "yesterday" not in types(result)


def test_predicates_are_sanitised(extractor: SpacyExtractor) -> None:
    result = run(extractor, "I'm thinking of working in counseling", "I was born in Ohio",
                 "I look forward to our family camping trip.", "I've decided to quit my job",
                 "So I wanna keep making a difference.")  # fmt: skip
    assert result.relations
    assert all(PREDICATE.match(r.predicate) for r in result.relations)
    assert rules.sanitise_predicate(["3d", "prints!", "x" * 80]) == "D_PRINTS_" + "X" * 41


# ---------------------------------------------------------------------------------------------- pronouns


def test_assistant_you_is_the_user(extractor: SpacyExtractor) -> None:
    result = run(extractor, "You live in Seattle and you work at Acme.", role=Role.assistant)
    assert triples(result) >= {(USER, "LIVES_IN", "Seattle"), (USER, "WORKS_AT", "Acme")}
    assert result.notes == []  # notes come from the user's own messages only


def test_user_you_is_not_the_user(extractor: SpacyExtractor) -> None:
    result = run(extractor, "You work at Acme, I live in Seattle.")
    assert (USER, "LIVES_IN", "Seattle") in triples(result)
    assert all(r.predicate != "WORKS_AT" for r in result.relations)


def test_user_name_is_the_user(extractor: SpacyExtractor) -> None:
    result = run(extractor, "Caroline works at Acme.", role=Role.assistant, user_name="Caroline Smith")
    assert (USER, "WORKS_AT", "Acme") in triples(result)
    assert "Caroline" not in types(result)


def test_documents_give_relations_but_no_notes(extractor: SpacyExtractor) -> None:
    doc = episode("I live in Seattle. Alice works at Acme.", role=None, kind=EpisodeKind.document)
    result = extractor.extract([doc])
    assert ("Alice", "WORKS_AT", "Acme") in triples(result)
    assert result.notes == [] and all(r.subject != USER for r in result.relations)


# ---------------------------------------------------------------------------------------------- notes


@pytest.mark.parametrize(
    ("text", "kind", "slot", "note"),
    [
        ("I manage the Northwest region", NoteKind.fact, "fact:manage", "Manages the Northwest region"),
        ("I live in Seattle", NoteKind.fact, "fact:live_in", "Lives in Seattle"),
        ("I work at Acme", NoteKind.fact, "fact:work_at", "Works at Acme"),
        ("I moved to Denver in 2019.", NoteKind.fact, "fact:live_in", "Moved to Denver in 2019"),
        ("My birthday is May 5", NoteKind.fact, "fact:birthday", "Birthday is May 5"),
        ("I'm allergic to peanuts", NoteKind.fact, "fact:be_allergic_to:peanuts", "Is allergic to peanuts"),
        ("I am a nurse", NoteKind.fact, "fact:title", "Is a nurse"),
        ("I was born in Ohio", NoteKind.fact, "fact:be_born_in", "Was born in Ohio"),
        ("I have no kids", NoteKind.fact, "fact:have:kids", "Has no kids"),
        ("I like hiking", NoteKind.preference, "preference:like:hiking", "Likes hiking"),
        ("I love to hike.", NoteKind.preference, "preference:like:hiking", "Loves to hike"),
        ("I prefer tea over coffee.", NoteKind.preference, "preference:prefer", "Prefers tea over coffee"),
        ("My favourite color is blue", NoteKind.preference, "preference:favourite:color",
         "Favourite color is blue"),
        ("My favorite food is sushi.", NoteKind.preference, "preference:favourite:food",
         "Favorite food is sushi"),
        ("I decided to use Postgres for the billing service", NoteKind.decision, "decision:use:postgres",
         "Decided to use Postgres for the billing service"),
        ("We'll go with Postgres.", NoteKind.decision, "decision:go_with:postgres",
         "Decided to go with Postgres"),
        ("Let's use Redis.", NoteKind.decision, "decision:use:redis", "Decided to use Redis"),
        ("I chose the blue one.", NoteKind.decision, None, "Chose the blue one"),
        ("I'm going to learn Spanish.", NoteKind.decision, "decision:learn:spanish",
         "Plans to learn Spanish"),
    ],
)  # fmt: skip
def test_notes(extractor: SpacyExtractor, text: str, kind: NoteKind, slot: str | None, note: str) -> None:
    result = run(extractor, text)
    assert len(result.notes) == 1, result.notes
    assert result.notes[0].kind == kind
    assert result.notes[0].text == note
    assert slot is None or result.notes[0].slot == slot
    assert result.notes[0].episode_id == "ep0"


def test_commitment_only_when_it_is_one(extractor: SpacyExtractor) -> None:
    notes = run(extractor, "I'm going to be late.", "I'm going to the store.").notes
    assert all(n.kind != NoteKind.decision for n in notes)


def test_single_valued_fact_is_replaced(extractor: SpacyExtractor) -> None:
    old = run(extractor, "I manage the Northwest region").notes
    new = run(extractor, "I got promoted, I now manage the whole country").notes
    assert [n.slot for n in old] == [n.slot for n in new] == ["fact:manage"]
    both = run(extractor, "I manage the Northwest region", "I got promoted, I now manage the whole country")
    assert [(n.text, n.episode_id) for n in both.notes] == [("Manages the whole country", "ep1")]


def test_past_single_valued_fact_does_not_replace_the_present(extractor: SpacyExtractor) -> None:
    assert slots(run(extractor, "I lived in Paris for years."))  # a note, but not the current value
    assert "fact:live_in" not in slots(run(extractor, "I lived in Paris for years."))


def test_negated_preference_takes_the_same_slot(extractor: SpacyExtractor) -> None:
    liked = run(extractor, "I like hiking").notes
    unliked = run(extractor, "I don't like hiking anymore").notes
    assert [n.slot for n in liked] == [n.slot for n in unliked] == ["preference:like:hiking"]
    assert unliked[0].text == "Doesn't like hiking anymore"
    both = run(extractor, "I like hiking", "I don't like hiking anymore")
    assert [n.text for n in both.notes] == ["Doesn't like hiking anymore"]
    assert (USER, "LIKES", "hiking") in triples(both)  # the relation of the first message stands


def test_retraction_of_single_valued_fact(extractor: SpacyExtractor) -> None:
    assert slots(run(extractor, "I no longer live in Paris.")) == {"fact:live_in": "No longer lives in Paris"}
    assert run(extractor, "I don't live in Paris").notes == []  # says nothing about where they live


def test_coordinated_objects_get_a_note_each(extractor: SpacyExtractor) -> None:
    assert slots(run(extractor, "I love hiking and swimming.")) == {
        "preference:like:hiking": "Loves hiking",
        "preference:like:swimming": "Loves swimming",
    }


def test_kin_note(extractor: SpacyExtractor) -> None:
    assert slots(run(extractor, "My sister is Emma.")) == {"fact:sister:emma": "Has a sister named Emma"}
    # what the sister does is her fact, not the user's: the graph knows her, the notes do not
    result = run(extractor, "My sister Emma lives in Boston")
    assert slots(result) == {} and (USER, "HAS_SISTER", "Emma") in triples(result)


def test_third_person_rendering(extractor: SpacyExtractor) -> None:
    notes = slots(run(extractor, "I've decided to quit my job.", "I meet people who are as kind as I am."))
    assert "Has decided to quit their job" in notes.values()
    assert "Meets people who are as kind as they are" in notes.values()


# ---------------------------------------------------------------------------------------------- small talk


@pytest.mark.parametrize(
    "text",
    ["hi", "Hello there!", "thanks!", "Thank you so much, Alice!", "ok", "Sounds good.", "how are you?",
     "I'm fine", "Good morning", "bye", "😀👍", "Hey Mel! Good to see you! How have you been?",
     "See you tomorrow. Bye!"],
)  # fmt: skip
def test_small_talk(extractor: SpacyExtractor, text: str) -> None:
    result = run(extractor, text)
    assert result.small_talk == ["ep0"]
    assert result.notes == [] and result.relations == [] and result.entities == []


def test_small_talk_inside_a_real_message_is_skipped(extractor: SpacyExtractor) -> None:
    result = run(extractor, "Hi! Thanks a lot. I live in Seattle.")
    assert result.small_talk == []
    assert (USER, "LIVES_IN", "Seattle") in triples(result)
    assert list(slots(result)) == ["fact:live_in"]


@pytest.mark.parametrize("text", ["I like hiking", "No, I live in Seattle", "ok, let's use Redis", "Paris!"])
def test_not_small_talk(text: str) -> None:
    assert not rules.is_small_talk(text)


# ---------------------------------------------------------------------------------------------- batches


def test_duplicates_are_collapsed(extractor: SpacyExtractor) -> None:
    texts = ("Alice works at Acme.", "Alice works at Acme!", "I live in Seattle.", "I live in Seattle")
    result = run(extractor, *texts)
    assert len(result.relations) == 2
    assert sorted(e.name for e in result.entities) == ["Acme", "Alice", "Seattle"]
    assert len(result.notes) == 1 and result.notes[0].episode_id == "ep3"
    assert result.mentions["ep0"] == result.mentions["ep1"] == ["Alice", "Acme"]


# ---------------------------------------------------------------------------------------------- LoCoMo


def test_locomo_support_group(extractor: SpacyExtractor) -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    ep = Episode(id="ep0", user_id="u1", role=Role.user, timestamp=said, seq=0,
                 content="I went to a LGBTQ support group yesterday and it was so powerful.")
    result = extractor.extract([ep])
    assert (USER, "GOES_TO", "LGBTQ support group") in triples(result)
    # "yesterday" is resolved against when it was said: the note keeps the day
    assert slots(result) == {"fact:go_to:lgbtq support group": "Went to a LGBTQ support group on 7 May 2023"}


def test_locomo_speaker_prefix_of_the_user(extractor: SpacyExtractor) -> None:
    result = run(extractor, "Caroline: I'm thinking of working in counseling", user_name="Caroline")
    assert any(r.subject == USER and r.object == "counseling" for r in result.relations), result.relations
    assert [n.text for n in result.notes] == ["Is thinking of working in counseling"]


def test_locomo_other_speaker_is_themselves(extractor: SpacyExtractor) -> None:
    text = "Melanie: I ran a charity race for mental health last Saturday"
    result = run(extractor, text, user_name="Caroline")
    assert ("Melanie", "RUNS", "charity race") in triples(result)
    assert types(result)["Melanie"] == "Person"
    assert result.notes == []  # facts about Melanie are no notes about the user


def test_locomo_named_assistant_speaker(extractor: SpacyExtractor) -> None:
    text = "I took my kids to a park yesterday. You found a great group!"
    ep = episode(text, Role.assistant, name="Melanie")
    result = extractor.extract([ep], user_name="Caroline")
    assert ("Melanie", "TAKES_TO", "park") in triples(result)
    assert (USER, "FINDS", "great group") in triples(result)


# ---------------------------------------------------------------------------------------------- words


@pytest.mark.parametrize(
    ("lemma", "third", "ing"),
    [("live", "lives", "living"), ("watch", "watches", "watching"), ("study", "studies", "studying"),
     ("swim", "swims", "swimming"), ("play", "plays", "playing"), ("be", "is", "being"),
     ("lie", "lies", "lying")],
)  # fmt: skip
def test_word_forms(lemma: str, third: str, ing: str) -> None:
    assert rules.third_person(lemma) == third
    assert rules.gerund(lemma) == ing


def test_an_object_parsed_as_a_noun_xcomp_still_counts(extractor: SpacyExtractor) -> None:
    result = run(extractor, "I love hiking.")  # the small model hangs "hiking" as a nominal xcomp
    assert (USER, "LOVES", "hiking") in triples(result)
    assert slots(result) == {"preference:like:hiking": "Loves hiking"}
    assert triples(run(extractor, "I am happy.")) == set()  # a copula's complement is no object

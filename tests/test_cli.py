"""The `hippograph` command as a user runs it: ingest a file, then query it."""

from __future__ import annotations

import json

from hippograph.cli import main


def test_ingest_then_query(tmp_path, capsys) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"user_id": "zoe", "session_id": "s1", "messages": [
        {"id": "z1", "role": "user", "content": "I work at Globex in Springfield."},
        {"id": "z2", "role": "user", "content": "My favourite food is ramen."}]}))
    data = tmp_path / "data"
    assert main(["ingest", str(conv), "--data-dir", str(data)]) == 0
    assert "stored 2 episodes" in capsys.readouterr().out
    assert main(["ingest", str(conv), "--data-dir", str(data)]) == 0
    assert "stored 0 episodes (2 already there)" in capsys.readouterr().out

    assert main(["query", "Where does she work?", "--user", "zoe", "--data-dir", str(data), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "Globex" in out["context"] and out["tokens"] <= out["token_budget"]

    assert main(["optimize", "--data-dir", str(data)]) == 0
    assert "vector index" in capsys.readouterr().out
    assert main(["query", "Where does she work?", "--user", "zoe", "--data-dir", str(data)]) == 0
    assert "Globex" in capsys.readouterr().out


def test_bad_file_is_a_clear_error(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert main(["ingest", str(bad), "--data-dir", str(tmp_path / "d")]) == 2
    assert "cannot read" in capsys.readouterr().err

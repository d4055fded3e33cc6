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


def test_ingest_takes_the_apis_id_grammar(tmp_path, capsys) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"user_id": "team/zoe", "messages": [{"role": "user", "content": "Hello."}]}))
    assert main(["ingest", str(conv), "--data-dir", str(tmp_path / "data")]) == 2
    assert "item 0: not a valid id" in capsys.readouterr().err


def test_forget_reaches_a_user_no_url_can_name(tmp_path, capsys) -> None:
    """A user stored before the id grammar, under an id with a '/': the API cannot address it, the
    command can, and nothing of it stays in the files."""
    from hippograph.config import Settings
    from hippograph.models import MessageIn, Role
    from hippograph.wiring import build

    data = tmp_path / "data"
    svc = build(Settings(data_dir=data))
    svc.open()
    try:
        owner = svc.tenancy.owner("default", "team/zoe", create=True)
        svc.remember(owner, "s1", None, [MessageIn(role=Role.user, content="My badge code is qx81-vorpal.")])
    finally:
        svc.close()
    holding = [p for p in data.rglob("*") if p.is_file() and b"qx81-vorpal" in p.read_bytes()]
    assert holding  # the scan below finds what is stored
    assert main(["forget", "--user", "team/zoe", "--data-dir", str(data)]) == 0
    assert "forgot user 'team/zoe'" in capsys.readouterr().out
    assert not [p for p in data.rglob("*") if p.is_file() and b"qx81-vorpal" in p.read_bytes()]
    assert main(["forget", "--user", "team/zoe", "--data-dir", str(data)]) == 2  # already gone
    assert "unknown user 'team/zoe'" in capsys.readouterr().err

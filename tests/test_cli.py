"""The `hippograph` command as a user runs it: ingest a file, then query it, in the data folder or through
a running server; and what it says, in one line and without a traceback, when it cannot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hippograph.cli import main
from tests.conftest import ServerProcess, free_port

KEY = "hg_cli-test-bootstrap-key-0123456789abcdef"
CONVERSATION = {"user_id": "zoe", "session_id": "s1", "messages": [
    {"id": "z1", "role": "user", "content": "I work at Globex in Springfield."},
    {"id": "z2", "role": "user", "content": "My favourite food is ramen."}]}


def hippograph(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real command, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "hippograph.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, **(env or {})})


def refused(done: subprocess.CompletedProcess) -> str:
    """The one line a command that could not do its work says on stderr."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("hippograph: ")
    return lines[0]


def test_ingest_then_query(tmp_path, capsys) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(CONVERSATION))
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


@pytest.mark.parametrize(("name", "content", "message"), [
    ("conversations.json", json.dumps([{"user_id": "u", "messages": [
        {"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"content": "c"}]}]),
     "conversations.json: [0].messages[2].role: Field required"),
    ("one.json", json.dumps({"user_id": "u", "documents": [{"id": "d1", "text": "x", "timestamp": "soon"}]}),
     "one.json: documents[0].timestamp: Input should be a valid datetime"),
    ("list.json", json.dumps([CONVERSATION, {"user_id": "u", "messages": "hello"}]),
     "list.json: [1].messages: expected a list"),
    ("broken.json", '{\n  "user_id": "u",\n  nope}',
     "broken.json: not JSON: line 3, column 3: Expecting property name enclosed in double quotes"),
    ("missing.json", None, "missing.json: no such file"),
])
def test_a_bad_ingest_file_is_named_with_where_in_it(tmp_path, name, content, message) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    line = refused(hippograph("ingest", name, "--data-dir", "data", cwd=tmp_path))
    assert line.startswith(f"hippograph: {message}"), line
    assert "configuration" not in line
    assert not (tmp_path / "data").exists()  # read before anything is opened


def test_ingest_takes_the_apis_id_grammar(tmp_path, capsys) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"user_id": "team/zoe", "messages": [{"role": "user", "content": "Hello."}]}))
    assert main(["ingest", str(conv), "--data-dir", str(tmp_path / "data")]) == 2
    assert f"{conv}: user_id: not a valid id" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["query", "Where?", "--user", "zoe"], ["forget", "--user", "zoe"], ["optimize"]])
def test_reading_commands_refuse_a_data_folder_that_does_not_exist(tmp_path, command) -> None:
    line = refused(hippograph(*command, "--data-dir", "nothere", cwd=tmp_path))
    assert line == ("hippograph: the data folder nothere does not exist: nothing was ever stored there (give the "
                    "folder of the server or of `hippograph ingest` with --data-dir)")
    assert not (tmp_path / "nothere").exists()


def test_a_dead_url_is_said_so(tmp_path) -> None:
    (tmp_path / "conv.json").write_text(json.dumps(CONVERSATION))
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for command in (["query", "Where?", "--user", "zoe"], ["ingest", "conv.json"]):
        line = refused(hippograph(*command, "--url", url, cwd=tmp_path))
        assert line.startswith(f"hippograph: cannot reach the server at {url}: "), line


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[ServerProcess]:
    """A real `hippograph serve` that wants an API key (KEY), with its own data folder."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HIPPOGRAPH_AUTH__BOOTSTRAP_KEY", KEY)
        srv = ServerProcess(tmp_path_factory.mktemp("served") / "data")
        srv.start()
    yield srv
    srv.stop()


def test_query_through_a_running_server(server, tmp_path) -> None:
    (tmp_path / "conv.json").write_text(json.dumps(CONVERSATION))
    done = hippograph("ingest", "conv.json", "--url", server.url, "--api-key", KEY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stored 2 episodes" in done.stdout and "users: zoe" in done.stdout

    done = hippograph("query", "Where does she work?", "--user", "zoe", "--url", server.url, cwd=tmp_path,
                      env={"HIPPOGRAPH_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    assert "Globex" in done.stdout and "-- plan: " in done.stderr
    done = hippograph("query", "Where does she work?", "--user", "zoe", "--url", server.url, "--api-key", KEY,
                      "--budget", "200", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "Globex" in out["context"] and out["token_budget"] == 200 and out["tokens"] <= 200


def test_an_error_of_the_server_shows_its_status_and_message(server, tmp_path) -> None:
    (tmp_path / "conv.json").write_text(json.dumps(CONVERSATION))
    no_key = {"HIPPOGRAPH_API_KEY": ""}
    line = refused(hippograph("query", "Where?", "--user", "zoe", "--url", server.url, cwd=tmp_path, env=no_key))
    assert line.startswith(f"hippograph: the server at {server.url} answered POST /v1/context with 401 "
                           "Unauthorized: "), line
    assert "API key" in line  # the server's own message
    line = refused(hippograph("ingest", "conv.json", "--url", server.url, "--api-key", "hg_wrong", cwd=tmp_path))
    assert line.startswith(f"hippograph: the server at {server.url} answered POST /v1/memories with 401 "), line
    line = refused(hippograph("query", "Where?", "--user", "zoe", "--url", server.url, "--api-key", KEY,
                              "--budget", "5", cwd=tmp_path))
    assert " with 422 Unprocessable Entity: " in line and "token_budget" in line, line
    line = refused(hippograph("query", "Where?", "--user", "zoe", "--url", server.url, "--tenant", "acme",
                              cwd=tmp_path))
    assert line == "hippograph: --tenant does not go with --url: the server serves the tenant of the API key"


@pytest.mark.parametrize(("command", "instead"), [
    (["query", "Where?", "--user", "zoe"], "ask it with --url http://HOST:PORT instead"),
    (["ingest", "conv.json"], "send to it with --url http://HOST:PORT instead"),
    (["forget", "--user", "zoe"], "stop it first, or forget the user through it (DELETE /v1/users/{id})"),
    (["optimize"], "stop it first"),
])
def test_a_data_folder_a_server_holds(server, tmp_path, command, instead) -> None:
    (tmp_path / "conv.json").write_text(json.dumps(CONVERSATION))
    line = refused(hippograph(*command, "--data-dir", str(server.data_dir), cwd=tmp_path))
    assert line == (f"hippograph: the data folder {server.data_dir} is in use by another process, probably a "
                    f"server running on it: {instead}")
    assert server.proc is not None and server.proc.poll() is None  # the server is untouched


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


@pytest.mark.parametrize("command", [["keys", "list"], ["keys", "revoke", "key_x"]])
def test_keys_refuse_a_data_folder_that_does_not_exist(tmp_path, command) -> None:
    line = refused(hippograph(*command, "--data-dir", "nothere", cwd=tmp_path))
    assert line.startswith("hippograph: the data folder nothere does not exist")
    assert not (tmp_path / "nothere").exists()
    (tmp_path / "empty").mkdir()  # a folder that is there but holds no store is refused too, and left alone
    assert "holds no Hippograph store" in refused(hippograph(*command, "--data-dir", "empty", cwd=tmp_path))
    assert list((tmp_path / "empty").iterdir()) == []


def test_version_and_help(tmp_path) -> None:
    from importlib.metadata import version

    done = hippograph("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == f"hippograph {version('hippograph')}"
    helped = " ".join(hippograph("query", "--help", cwd=tmp_path).stdout.split())
    assert "--data-dir DATA_DIR the folder of the embedded stores" in helped
    assert "--budget BUDGET the block's token budget" in helped


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(CONVERSATION))
    assert main(["ingest", str(conv), "--data-dir", str(tmp_path / "data")]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "hippograph.cli", "query", "Where does Zoe work?", "--user", "zoe",
                             "--json", "--data-dir", str(tmp_path / "data")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| head -0`: nobody reads what it prints
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_busy_port_is_one_line_and_makes_nothing(tmp_path) -> None:
    import socket

    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        line = refused(hippograph("serve", "--port", str(port), "--data-dir", "data", cwd=tmp_path))
    assert line.startswith(f"hippograph: cannot listen on 127.0.0.1:{port}") and "--port" in line
    assert not (tmp_path / "data").exists()


def test_the_start_up_line_names_the_stores_it_opens(tmp_path) -> None:
    from hippograph.cli import _stores
    from hippograph.config import GraphSettings, Settings, VectorSettings

    remote = Settings(data_dir=tmp_path, graph=GraphSettings(backend="neo4j", uri="bolt://db:7687"),
                      vectors=VectorSettings(backend="qdrant", url="http://vectors:6333"))
    assert _stores(remote) == "Neo4j at bolt://db:7687 and Qdrant at http://vectors:6333"
    assert _stores(Settings(data_dir=tmp_path)) == f"the stores in the data folder {tmp_path.resolve()}"


def test_the_open_mode_hint_names_the_data_folder(tmp_path, caplog) -> None:
    from fastapi.testclient import TestClient

    from hippograph.config import Settings
    from hippograph.server.app import create_app
    from tests.apps import LOCAL

    with caplog.at_level("WARNING", logger="hippograph.server"), \
            TestClient(create_app(Settings(data_dir=tmp_path / "d")), base_url=LOCAL):
        pass
    assert f"--scopes read,write --data-dir {tmp_path / 'd'}`" in caplog.text

"""The memory explorer at /ui in a real headless Chromium (Debian's package, driven by Playwright), against
a running server on the embedded stores and on Neo4j: a person signs in with a key, reads the profile,
corrects a note and sees its history, walks the graph from the user to their manager, asks a question and
sees why each item is in the block; what the page shows is checked against the REST API. Another tenant's
key sees none of it, a read-only key gets no edit controls, and a memory holding markup shows as text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from neo4j import GraphDatabase

from tests.conftest import ROOT, ServerProcess

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="NOT TESTED: no `chromium` on PATH, so the /ui pages were not tried in a browser "
                             "(scripts/test installs it with apt-get; run `apt-get install chromium`)")
NEO4J = os.environ.get("HIPPOGRAPH_TEST_NEO4J_URI", "")
QDRANT = os.environ.get("HIPPOGRAPH_TEST_QDRANT_URL", "")
SHOTS = os.environ.get("HIPPOGRAPH_UI_SCREENSHOTS")  # a folder: save a picture of each page there
MARKUP = "<script>window.pwned = 1</script> I love <b>hiking</b> on weekends."
CONVERSATION = [
    {"id": "m1", "role": "user", "content": "Hi!"},
    {"id": "m2", "role": "user", "content": "I manage the Northwest region at Acme Corp."},
    {"id": "m3", "role": "assistant", "content": "Noted: you manage the Northwest region."},
    {"id": "m4", "role": "user", "content": "I live in Seattle and I prefer short answers."},
    {"id": "m5", "role": "user", "content": "My manager is Dana Smith."},
    {"id": "m6", "role": "user", "content": MARKUP},
]


class Served:
    def __init__(self, server: ServerProcess, keys: dict[str, str]) -> None:
        self.server, self.keys = server, keys
        self.url = server.url
        self.log = server.drained()

    def api(self, method: str, path: str, key: str = "writer", **kw: object) -> httpx.Response:
        return httpx.request(method, self.url + path, headers={"Authorization": f"Bearer {self.keys[key]}"},
                             timeout=120, **kw)  # type: ignore[arg-type]


def _make_key(data: Path, env: dict[str, str], tenant: str, scopes: str) -> str:
    done = subprocess.run([sys.executable, "-m", "hippograph.cli", "keys", "create", "--tenant", tenant, "--scopes",
                           scopes, "--json", "--data-dir", str(data)], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])["key"]


@pytest.fixture(scope="module", params=["embedded", "neo4j+qdrant"])
def served(request, tmp_path_factory) -> Iterator[Served]:
    """A server with keys made by the CLI before it started (acme: writer, reader; globex: writer) and the
    README walkthrough's user, alice, with a manager and a message that holds markup."""
    env: dict[str, str] = {}
    if request.param == "neo4j+qdrant":
        if not NEO4J:
            pytest.fail("HIPPOGRAPH_TEST_NEO4J_URI is not set: run the tests with scripts/test, which starts Neo4j")
        if not QDRANT:
            pytest.skip("NOT TESTED: no Qdrant server (HIPPOGRAPH_TEST_QDRANT_URL; scripts/test starts one from "
                        "../shared/bin/qdrant), so /ui was not tried on Neo4j + Qdrant")
        with GraphDatabase.driver(NEO4J, auth=None) as driver, driver.session(database="neo4j") as session:
            session.run("MATCH (n) DETACH DELETE n").consume()
        env = {"HIPPOGRAPH_GRAPH__BACKEND": "neo4j", "HIPPOGRAPH_GRAPH__URI": NEO4J,
               "HIPPOGRAPH_VECTORS__BACKEND": "qdrant", "HIPPOGRAPH_VECTORS__URL": QDRANT,
               "HIPPOGRAPH_VECTORS__API_KEY": os.environ.get("HIPPOGRAPH_TEST_QDRANT_API_KEY", ""),
               "HIPPOGRAPH_VECTORS__COLLECTION": f"ui_{uuid.uuid4().hex[:8]}",
               "HIPPOGRAPH_VECTORS__CHECK_COMPATIBILITY": "false"}
    data = tmp_path_factory.mktemp("ui")
    keys = {"writer": _make_key(data, env, "acme", "read,write"), "reader": _make_key(data, env, "acme", "read"),
            "globex": _make_key(data, env, "globex", "read,write")}
    server = ServerProcess(data, env=env)
    server.start()
    served = Served(server, keys)
    try:
        ready = httpx.get(f"{server.url}/readyz", timeout=60).json()
        assert (ready["graph"], ready["vectors"]) == (("Neo4jGraphStore", "QdrantVectorStore") if env else
                                                      ("SqliteGraphStore", "EdgeVectorStore")), ready
        wrote = served.api("POST", "/v1/memories", json={"user_id": "alice", "session_id": "monday",
                                                           "messages": CONVERSATION})
        assert wrote.status_code == 200, wrote.text
        other = served.api("POST", "/v1/memories", key="globex", json={
            "user_id": "gina", "session_id": "s", "messages": [{"role": "user", "content": "I live in Lisbon."}]})
        assert other.status_code == 200, other.text
        yield served
    finally:
        server.stop()
    log = b"".join(served.log).decode(errors="replace")
    assert not any(key in log for key in keys.values()), "an API key is in the server's log"
    # it was started with --log-level warning: no line per request to the Qdrant server, no library's INFO
    assert "INFO" not in log, log


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def page(browser, served: Served) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    pg.problems = []  # what the page's scripts threw, and dialogs they opened
    pg.server_log = served.log
    pg.on("pageerror", lambda e: pg.problems.append(f"error: {e}"))
    # "Delete …?" is asked with confirm(); any other dialog (an alert a memory's text might open) is a problem
    pg.on("dialog", lambda d: (d.type != "confirm" and pg.problems.append(f"dialog: {d.message}"), d.accept()))
    # (the first /v1/me without a key is a 401 by design: that is how the page knows to ask for one)
    pg.on("console", lambda m: m.type == "error" and "status of 401" not in m.text
          and pg.problems.append(f"console: {m.text}"))
    yield pg
    context.close()


def sign_in(page, served: Served, key: str = "writer", view: str = "profile") -> None:
    page.goto(f"{served.url}/ui/#/{view}")
    page.fill("#key", served.keys[key])
    page.click("#signin button[type=submit]")
    wait(page, "#mode")
    assert served.keys[key] not in page.url
    page.fill("#user", "alice")
    page.dispatch_event("#user", "change")


def wait(page, selector: str = "", until: str = "") -> None:
    """Wait for a selector, or until a condition (a JavaScript function) holds; when it does not come, say
    what the page shows instead."""
    try:
        if selector:
            page.wait_for_selector(selector, timeout=120_000)
        else:
            page.wait_for_function(until, timeout=120_000)
    except Exception as exc:  # Playwright's TimeoutError
        raise AssertionError(f"{selector or until} did not come; the page shows: {page.inner_text('body')[:1500]!r}; "
                             f"problems: {page.problems}; the server's log ends: "
                             f"{b''.join(page.server_log[-40:]).decode(errors='replace')[-4000:]}") from exc


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def notes_of(served: Served, key: str = "writer") -> dict[str, dict]:
    profile = served.api("GET", "/v1/users/alice/profile", key=key).json()
    return {n["id"]: n for kind, field in (("facts", "fact"), ("preferences", "pref"), ("decisions", "decision"))
            for n in profile[kind] for _ in [n.update(text=n[field])]}


def test_the_profile_is_what_the_api_says_and_a_correction_shows_its_history(page, served: Served) -> None:
    sign_in(page, served)
    wait(page, ".note")
    notes = notes_of(served)
    shown = {c.get_attribute("data-id"): c.query_selector(".text").inner_text() for c in page.query_selector_all(".note")}
    assert shown == {i: n["text"] for i, n in notes.items()}
    # the notes the server is unsure of are shown apart, to confirm or dismiss
    unsure = {c.get_attribute("data-id") for c in page.query_selector_all("#unsure .note")}
    assert unsure == {i for i, n in notes.items() if n["candidate"]}
    assert page.query_selector("#mode").inner_text() == "tenant acme · read, write"
    shot(page, "profile")

    city = next(n for n in notes.values() if "Seattle" in n["text"])
    card = f'.note[data-id="{city["id"]}"]'
    page.click(f"{card} .source-link")  # its source message, read from the API
    wait(page, f"{card} .source-text")
    assert "I live in Seattle" in page.inner_text(f"{card} .source-text")

    page.click(f"{card} button.edit")
    page.fill(f"{card} textarea.correction", "I live in Portland")
    page.click(f"{card} .edit-form button[type=submit]")
    page.wait_for_selector(f'{card}', state="detached")
    after = notes_of(served)
    new = next(n for n in after.values() if n["text"] == "I live in Portland")
    assert city["id"] not in after
    page.wait_for_selector(f'.note[data-id="{new["id"]}"]')
    page.click(f'.note[data-id="{new["id"]}"] .history-link')
    page.wait_for_selector(f'.note[data-id="{new["id"]}"] .replaced')
    history = page.inner_text(f'.note[data-id="{new["id"]}"] .history')
    assert "I live in Seattle" in history
    audit = served.api("GET", f"/v1/users/alice/audit?item_id={new['id']}").json()["events"]
    assert audit and all(e["action"] in history and e["actor"] in history for e in audit)
    assert any("memory explorer" in e["actor"] for e in audit)
    assert not page.problems


def test_an_unsure_note_is_confirmed_and_a_note_deleted(page, served: Served) -> None:
    sign_in(page, served)
    wait(page, "#unsure .note")
    unsure = page.get_attribute("#unsure .note", "data-id")
    text = notes_of(served)[unsure]["text"]
    page.click(f'#unsure .note[data-id="{unsure}"] button.confirm')
    page.wait_for_selector(f'.note[data-id="{unsure}"]', state="detached")
    confirmed = next(n for n in notes_of(served).values() if n["text"] == text)
    assert not confirmed["candidate"] and confirmed["confidence"] == 1.0
    wait(page, f'.note[data-id="{confirmed["id"]}"]')
    assert page.query_selector(f'#unsure .note[data-id="{confirmed["id"]}"]') is None

    short = next(n for n in notes_of(served).values() if n["text"] == "I prefer short answers")
    page.click(f'.note[data-id="{short["id"]}"] button.delete')
    page.wait_for_selector(f'.note[data-id="{short["id"]}"]', state="detached")
    assert short["id"] not in notes_of(served)
    events = served.api("GET", f"/v1/users/alice/audit?item_id={short['id']}").json()["events"]
    assert events[-1]["action"] == "delete" and "memory explorer" in events[-1]["actor"]
    assert not page.problems


def test_the_graph_walks_from_the_user_to_their_manager(page, served: Served) -> None:
    sign_in(page, served, view="graph")
    wait(page, until="() => window.hippographGraph && window.hippographGraph.nodes().length > 1")
    user = next(e for e in served.api("GET", "/v1/graph/entities?user_id=alice&limit=500").json() if e["is_user"])
    around = served.api("GET", f"/v1/graph/entities/{user['id']}/neighbors?user_id=alice&history=true").json()
    drawn = page.evaluate("window.hippographGraph.nodes().map(n => n.id())")
    assert sorted(drawn) == sorted(e["id"] for e in around["entities"])
    # the city corrected on the profile page is history: its relation is drawn only when asked for
    old = [r["id"] for r in around["relations"] if r["invalid_at"] is not None]
    assert old, around["relations"]
    hidden = "ids => ids.every(i => window.hippographGraph.getElementById(i).hasClass('hidden'))"
    assert page.evaluate(hidden, old)
    page.check("#show-old")
    assert not page.evaluate("ids => ids.some(i => window.hippographGraph.getElementById(i).hasClass('hidden'))", old)
    manager = next(r for r in around["relations"] if "MANAGER" in r["predicate"])
    boss = next(e for e in around["entities"] if e["id"] == manager["target_id"])
    assert boss["name"] == "Dana Smith"
    # the relation, read from the picture: its fact, its dates, the message it came from
    page.evaluate(f"window.hippographGraph.getElementById({json.dumps(manager['id'])}).emit('tap')")
    wait(page, ".relation-fact")
    assert page.inner_text(".relation-fact") == manager["fact"]
    page.click("#graph-side .source-link")
    wait(page, "#graph-side .source-text")
    assert "Dana Smith" in page.inner_text("#graph-side .source-text")
    # expanding the manager draws their neighbours too
    beyond = served.api("GET", f"/v1/graph/entities/{boss['id']}/neighbors?user_id=alice").json()
    page.evaluate(f"window.hippographGraph.getElementById({json.dumps(boss['id'])}).emit('tap')")
    wait(page, until=f"() => window.hippographGraph.getElementById({json.dumps(boss['id'])}).data('expanded')")
    drawn = set(page.evaluate("window.hippographGraph.nodes().map(n => n.id())"))
    assert {e["id"] for e in beyond["entities"]} <= drawn
    shot(page, "graph")
    assert not page.problems


def test_ask_shows_the_plan_and_why_each_item_is_there(page, served: Served) -> None:
    sign_in(page, served, view="ask")
    question = "What do I love doing on weekends?"
    page.fill("#question", question)
    page.click("#main form button[type=submit]")
    wait(page, "#plan")
    ctx = served.api("POST", "/v1/context", json={"user_id": "alice", "query": question, "token_budget": 1000}).json()
    assert ctx["plan"]["name"] in page.inner_text("#plan")
    assert page.inner_text("#tokens") == f"{ctx['tokens']} of 1000 tokens used"
    rows = page.query_selector_all("tr.item")
    items = [it for section in ctx["sections"].values() for it in section]
    assert [r.query_selector(".item-text").inner_text() for r in rows] == [it["text"] for it in items]
    assert [r.query_selector(".via").inner_text() for r in rows] == [", ".join(it["via"]) for it in items]
    assert page.inner_text("#block") == ctx["context"]
    # the message with markup is shown as its text: no element was made from it, no script ran
    assert any(MARKUP in r.inner_text() for r in rows)
    assert page.query_selector("#answer b") is None and page.evaluate("window.pwned") is None
    shot(page, "ask")
    assert not page.problems


def test_sessions_and_the_audit_timeline(page, served: Served) -> None:
    sign_in(page, served, view="sessions")
    wait(page, "#sessions button.link")
    page.click("#sessions button.link")
    wait(page, ".window-item")
    assert any("Acme Corp" in i.inner_text() for i in page.query_selector_all(".window-item"))
    shot(page, "sessions")
    page.goto(f"{served.url}/ui/#/audit")
    wait(page, ".audit-row")
    events = served.api("GET", "/v1/users/alice/audit?limit=10000").json()["events"]
    assert len(page.query_selector_all(".audit-row")) == len(events)
    page.select_option("#audit-kind", "note")
    wait(page, until=f"() => document.querySelectorAll('.audit-row').length === "
                           f"{sum(e['item_kind'] == 'note' for e in events)}")
    page.fill("#audit-filter", "Seattle")
    texts = [r.inner_text() for r in page.query_selector_all(".audit-row")]
    assert texts and all("Seattle" in t for t in texts)
    shot(page, "audit")
    assert not page.problems


def test_another_tenants_key_sees_none_of_it(page, served: Served) -> None:
    sign_in(page, served, key="globex")
    wait(page, ".error")
    assert "unknown user" in page.inner_text(".error")
    assert page.evaluate("[...document.querySelectorAll('#users option')].map(o => o.value)") == ["gina"]
    for view in ("graph", "ask", "sessions", "audit"):
        page.goto(f"{served.url}/ui/#/{view}")
        page.wait_for_load_state("networkidle")
        body = page.inner_text("body")
        assert "Seattle" not in body and "Acme" not in body and "Dana" not in body, view


def test_a_read_only_key_gets_no_edit_controls_and_the_server_refuses_edits(page, served: Served) -> None:
    sign_in(page, served, key="reader")
    wait(page, ".note")
    assert page.query_selector_all(".note button.edit, .note button.delete, .note button.confirm") == []
    note = next(iter(notes_of(served, "reader")))
    status = page.evaluate("""async ([key, id]) => (await fetch(`/v1/users/alice/profile/${id}`, {method: "PATCH",
        headers: {Authorization: `Bearer ${key}`, "Content-Type": "application/json"},
        body: JSON.stringify({text: "I live on the moon"})})).status""", [served.keys["reader"], note])
    assert status == 403
    assert note in notes_of(served)


def test_the_pages_allow_no_inline_script_and_no_other_origin(page, served: Served) -> None:
    for path in ("/ui/", "/ui/app.js", "/ui/app.css", "/ui/no-such-file"):
        policy = httpx.get(served.url + path, timeout=60).headers.get("content-security-policy", "")
        assert "script-src 'self';" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy, path
    html = httpx.get(served.url + "/ui/", timeout=60).text
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "an inline script in the page"
    assert not re.search(r"(?:src|href)=\"(?:https?:)?//", html), "the page loads something from another origin"
    assert served.keys["writer"] not in html
    sign_in(page, served)
    wait(page, ".note")
    with pytest.raises(Exception):  # noqa: B017 - the browser refuses it: Playwright's own error type
        page.add_script_tag(content="window.injected = 1")
    assert page.evaluate("window.injected") is None
    # the key lives in this tab only: not in a cookie, not in localStorage
    assert page.context.cookies() == [] and page.evaluate("localStorage.length") == 0

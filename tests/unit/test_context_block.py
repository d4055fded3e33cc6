"""The context block of a conversation with tool calls, as `POST /v1/context` returns it: each tool
result is shown once, the block never exceeds its budget, and nothing is cut or left out while the
budget still has room for it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from hippograph.planner.context import SECTION_TITLES, ContextItem, date_header
from hippograph.tokens import get_counter

WEATHER = "Lisbon, 14-20 May: 22C and sunny every day, light wind from the north-west, no rain expected."
TRAIN = "Madrid Chamartin 09:35 -> Lisbon Santa Apolonia 18:40, one change in Badajoz, 48 EUR, 12 seats left."
PLACES = "Near Santa Apolonia: Ao 26 Vegan Food Project (4.7, closes 23:00), Jardim das Cerejas (4.5, buffet)."
BOOKING = "Booked: coach 5, seat 42, reference CP-7781, e-ticket sent to the address on file."
RESULTS = (WEATHER, TRAIN, PLACES, BOOKING)
CUT_MARK = " […]"  # how the block marks an item cut to fit
QUERY = "What should I pack for Lisbon?"


def at(minutes_ago: float) -> str:
    """A time this long before now (now when the messages are made: a result's validity is told against the
    time the block is asked for, so they are made when the test runs, not when the module is read)."""
    return (datetime.now(UTC) - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")


def tool(mid: str, name: str, arguments: dict, content: str, minutes_ago: float) -> dict:
    return {"id": mid, "role": "tool", "name": name, "content": content, "metadata": {"arguments": arguments},
            "timestamp": at(minutes_ago)}


def say(mid: str, role: str, content: str, minutes_ago: float) -> dict:
    return {"id": mid, "role": role, "content": content, "timestamp": at(minutes_ago)}


def earlier() -> list[dict]:
    return [
        say("e1", "user", "I'm vegetarian, and I always prefer trains over flights when I travel.", 60 * 24 * 20),
        say("e2", "assistant", "Noted: vegetarian, and trains rather than flights.", 60 * 24 * 20),
        say("e3", "user", "My sister Ana lives in Porto, I visit her every summer.", 60 * 24 * 15),
        say("e4", "user", "I pack light: one carry-on bag, never checked luggage.", 60 * 24 * 10),
    ]


def trip() -> list[dict]:
    """The weather is checked twice with the same answer, and the user's last question rests on it; the
    train search falls between the pinned start and the recent window."""
    return [
        say("t1", "user", "Hi! I'm planning a trip to Lisbon from 14 to 20 May. What's the weather going to be like?", 40),
        tool("t2", "weather", {"city": "Lisbon"}, WEATHER, 39),
        say("t3", "assistant", "It looks warm and dry all week, around 22 degrees.", 38),
        say("t4", "user", "Great. Can you find me a train from Madrid on the 14th?", 35),
        tool("t5", "trains", {"from": "Madrid", "to": "Lisbon", "date": "2024-05-14"}, TRAIN, 34),
        say("t6", "assistant", "There is a morning train from Chamartin that arrives in the early evening.", 33),
        say("t7", "user", "Any vegetarian places to eat near the station?", 30),
        tool("t8", "places", {"near": "Santa Apolonia", "diet": "vegetarian"}, PLACES, 29),
        say("t9", "assistant", "Two good ones are close by, one of them fully vegan.", 28),
        say("t10", "user", "Lovely. Book the train please.", 20),
        tool("t11", "book_train", {"train": "09:35 Madrid-Lisbon"}, BOOKING, 19),
        say("t12", "assistant", "Done, your seat is booked and the ticket is in your inbox.", 18),
        say("t13", "user", "Could you check the forecast once more?", 10),
        tool("t14", "weather", {"City": " lisbon "}, WEATHER, 9),
        say("t15", "assistant", "The forecast has not changed since the first check.", 8),
        say("t16", "user", "Thanks. So given that forecast, what should I pack?", 2),
    ]


@pytest.fixture(scope="module")
def lea(client: TestClient) -> TestClient:
    for session, messages in (("home", earlier()), ("trip", trip())):
        resp = client.post("/v1/memories", json={"user_id": "lea", "session_id": session, "messages": messages})
        assert resp.status_code == 200, resp.text
    return client


def block(client: TestClient, budget: int, user: str = "lea", session: str = "trip") -> dict:
    resp = client.post("/v1/context", json={"user_id": user, "session_id": session, "query": QUERY,
                                            "token_budget": budget})
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.mark.parametrize("budget", [200, 300, 500, 1000])
def test_each_tool_result_is_shown_once(lea: TestClient, budget: int) -> None:
    ctx = block(lea, budget)
    text = ctx["context"]
    assert ctx["tokens"] == get_counter().count(text) <= budget
    assert text.count(WEATHER) == 1  # the result the last question refers to: kept, and only once
    assert all(text.count(result) <= 1 for result in RESULTS)


def test_a_result_is_shown_where_the_conversation_shows_it_and_referred_to_elsewhere(lea: TestClient) -> None:
    ctx = block(lea, 1000)
    text, sections = ctx["context"], ctx["sections"]
    assert all(text.count(result) == 1 for result in RESULTS)
    log = {i["text"].split("(")[0]: i["text"] for i in sections["tools"]}
    # the train search is not in the window: its line holds the result
    assert log["trains"].endswith(TRAIN) and "valid until" in log["trains"]
    # the latest weather result is in the recent messages, with its validity; its line refers to it
    assert log["weather"].startswith('weather({"city":"lisbon"}) called 2 times, last at ')
    assert log["weather"].endswith("→ its result is in the conversation below")
    latest = next(i["text"] for i in sections["recent"] if i["provenance"] == ["t14"])
    assert latest.startswith("weather (as of ") and "valid until" in latest and latest.endswith(WEATHER)
    # the first check got the same answer: the pinned start says so in a few words
    first = next(i["text"] for i in sections["pinned"] if i["provenance"] == ["t2"])
    assert first.startswith("weather (as of ")
    assert first.endswith("the same result as a later call, shown with it")


def test_different_calls_that_answered_alike_are_all_shown(client: TestClient) -> None:
    same = "Market closed: the exchange reopens Monday 09:30 EST."
    msgs = [say("s1", "user", "How are ACME and Globex doing today?", 5),
            tool("s2", "quote", {"symbol": "ACME"}, same, 4),
            tool("s3", "quote", {"symbol": "GLBX"}, same, 4),
            say("s4", "assistant", "Both markets are closed until Monday.", 3)]
    resp = client.post("/v1/memories", json={"user_id": "sam", "session_id": "s", "messages": msgs})
    assert resp.status_code == 200, resp.text
    ctx = block(client, 1000, user="sam", session="s")
    assert ctx["context"].count(same) == 2  # two calls, two results: matched by message, not by text


def _line(text: str, block_text: str) -> str:
    return next(line for line in block_text.splitlines() if line.endswith(text))


@pytest.mark.parametrize("budget", [200, 300, 500, 1000])
def test_nothing_is_cut_or_left_out_while_the_budget_has_room_for_it(lea: TestClient, budget: int) -> None:
    counter = get_counter()
    full = block(lea, 20_000)
    ctx = block(lea, budget)
    unused = budget - ctx["tokens"]
    assert unused >= 0
    for section, items in full["sections"].items():
        if section == "query":
            continue
        shown = {i["id"]: i["text"] for i in ctx["sections"][section]}
        for item in items:
            whole = _line(item["text"], full["context"])
            if item["id"] not in shown:  # left out: it would have needed its line, and a title or date
                need = counter.count("\n" + whole)
                need += 0 if shown else counter.count(SECTION_TITLES[section]) + 2
                if section == "memories":
                    header = date_header(ContextItem.model_validate(item))
                    need += 0 if f"\n{header}\n" in ctx["context"] else counter.count("\n" + header)
                assert unused < need, (section, item["text"], unused, need)
            elif shown[item["id"]].endswith(CUT_MARK):  # cut: to fill what was left
                cut = _line(shown[item["id"]], ctx["context"])
                more = counter.count(whole) - counter.count(cut) + counter.count(CUT_MARK)
                assert unused < more, (section, item["text"], unused, more)


def test_a_session_of_thousands_of_alike_calls_links_only_what_is_shown() -> None:
    """A session where one tool answered the same thousands of times: the calls shown (pinned and recent)
    refer to the later ones shown and to the log line, and nothing is worked out for the others (before,
    each call listed every later alike call: a context for such a session did not answer in minutes)."""
    from hippograph.models import Episode, Role
    from hippograph.planner.world import tool_log

    now = datetime.now(UTC)
    calls = [Episode(id=f"c{i}", user_id="u", session_id="s", role=Role.tool, name="weather", content=WEATHER,
                     metadata={"arguments": {"city": "Lisbon"}}, timestamp=now - timedelta(seconds=5000 - i), seq=i)
             for i in range(5000)]
    shown = {"c0", "c1", "c4990", "c4999"}
    items, shown_by = tool_log(calls, now, shown=shown)
    assert len(items) == 1 and items[0].id == "tool:c4999"
    assert set(shown_by) == {"tool:c4999", "c0", "c1", "c4990"}
    assert shown_by["c0"][0] == ["c4999", "c4990", "c1", "tool:c4999"]  # latest first, then the line
    assert shown_by["c4990"][0] == ["c4999", "tool:c4999"]


def test_a_result_past_its_validity_says_it_expired(client: TestClient) -> None:
    """A result older than its tool's TTL (an hour by default) is shown with when it expired, in so many words."""
    msgs = [say("x1", "user", "What is the EUR to USD rate?", 130), tool("x2", "fx", {"pair": "EURUSD"}, "1.0842", 125),
            say("x3", "user", "Thanks, and the rate now?", 1)]
    resp = client.post("/v1/memories", json={"user_id": "fx-user", "session_id": "fx", "messages": msgs})
    assert resp.status_code == 200, resp.text
    ctx = block(client, 1000, user="fx-user", session="fx")
    shown = [i["text"] for s in ("pinned", "recent", "tools") for i in ctx["sections"][s] if "1.0842" in i["text"]]
    assert shown and all(re.search(r"\(as of \d{4}-\d\d-\d\d \d\d:\d\d UTC; expired \d{4}-\d\d-\d\d \d\d:\d\d UTC\)", t)
                         for t in shown), shown

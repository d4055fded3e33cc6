"""The README's "Walkthrough with curl", run as written against a real `hippograph serve`.

The curl commands are read out of README.md, in order, and sent with httpx (no curl needed); each must
answer 2xx, and where the README shows a response in the comment lines under a command, the response
must hold what it shows. The README and the server cannot drift apart unnoticed.

The README's shortened JSON: `…` as a value is any value, `…` among a list's items means more items may
follow, `…` among an object's members means other members, and `…` inside a string any text. An object
shows some of the members it has; a list shows items it holds, in any order, and all of them unless `…`
says there are more. A placeholder `<country note id>` is the `id` of the latest object shown by an
earlier response with "country" in one of its texts.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.conftest import ROOT

SECTION = "## Walkthrough with curl"
PLACEHOLDER = re.compile(r"<(\w+)(?: \w+)* id>")
ANY, MORE = "\0any", "\0more"  # what the README's bare `…` becomes, as a value and as list items


@dataclass
class Step:
    command: str  # as written, continuation lines included
    shown: str | None  # the response the comment lines under it show, if they show one


def walkthrough(readme: str) -> list[Step]:
    section = readme.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    steps: list[Step] = []
    for block in re.findall(r"^```bash\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("curl "):
                assert lines[i].startswith("#") or not lines[i].strip(), f"not a curl command: {lines[i]!r}"
                i += 1
                continue
            command = lines[i]
            i += 1
            while not _complete(command):
                command += "\n" + lines[i]
                i += 1
            comments = []
            while i < len(lines) and lines[i].startswith("#"):
                comments.append(lines[i][1:].strip())
                i += 1
            shown = "".join(comments)
            steps.append(Step(command, shown if shown[:1] in ("{", "[") else None))
    return steps


def _complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command, comments=True)
    except ValueError:  # a quote still open: the command goes on on the next line
        return False
    return True


def request(command: str, base_url: str, responses: list[Any]) -> tuple[str, str, dict[str, str], str | None]:
    """(method, url, headers, body) of a curl command, its host replaced by the server's and its
    placeholders by ids from the earlier responses."""
    command = PLACEHOLDER.sub(lambda m: f"@{m.group(1)}@", command.replace("\\\n", " "))
    tokens = [re.sub(r"@(\w+)@", lambda m: resolve(m.group(1), responses), t)
              for t in shlex.split(command, comments=True)]
    assert tokens[0] == "curl"
    method, headers, body, url = None, {}, None, None
    args = iter(tokens[1:])
    for arg in args:
        if arg == "-s":
            continue
        if arg == "-X":
            method = next(args)
        elif arg == "-H":
            name, value = next(args).split(":", 1)
            headers[name.strip()] = value.strip()
        elif arg in ("-d", "--data"):
            body = next(args)
        else:
            assert not arg.startswith("-") and url is None, f"unexpected curl argument {arg!r}"
            url = arg
    assert url is not None, command
    parts = urlsplit(url if "://" in url else f"http://{url}")
    url = base_url + parts.path + (f"?{parts.query}" if parts.query else "")
    return method or ("POST" if body is not None else "GET"), url, headers, body


def resolve(word: str, responses: list[Any]) -> str:
    """`<country note id>`: the id of the latest object an earlier response holds with "country" in a text."""
    found = [o["id"] for r in reversed(responses) for o in _objects(r)
             if any(isinstance(v, str) and word.lower() in v.lower() for k, v in o.items() if k != "id")]
    assert found, f"no earlier response shows an object about {word!r} with an id"
    return found[0]


def _objects(value: Any) -> list[dict]:
    if isinstance(value, list):
        return [o for v in value for o in _objects(v)]
    if isinstance(value, dict):
        return ([value] if isinstance(value.get("id"), str) else []) + [o for v in value.values() for o in _objects(v)]
    return []


def shown_json(text: str) -> Any:
    """The README's shortened JSON as JSON, each bare `…` marked as ANY (a value) or MORE (list items), or
    dropped (object members)."""
    out = ""
    stack: list[str] = []
    in_string = escaped = drop_comma = False
    for c in text:
        if in_string:
            out += c
            in_string = escaped or c != '"'
            escaped = not escaped and c == "\\"
            continue
        if drop_comma and not c.isspace():
            drop_comma = False
            if c == ",":
                continue
        if c == "…":
            out = out.rstrip()
            if out.endswith(":"):
                out += json.dumps(ANY)
            elif stack[-1] == "[":
                out += json.dumps(MORE)
            elif out.endswith(","):  # members left out of an object, and their comma
                out = out[:-1]
            else:
                drop_comma = True
            continue
        in_string = c == '"'
        if c in "[{":
            stack.append(c)
        elif c in "]}":
            stack.pop()
        out += c
    return json.loads(out)


def mismatch(shown: Any, got: Any, path: str = "") -> str | None:
    """Where `got` does not hold what `shown` shows, or None."""
    where = path or "the response"
    if shown == ANY:
        return None
    if isinstance(shown, dict):
        if not isinstance(got, dict):
            return f"{where}: expected an object, got {got!r}"
        for key, value in shown.items():
            if key not in got:
                return f"{where}: no {key!r} in {got!r}"
            if (problem := mismatch(value, got[key], f"{path}.{key}")) is not None:
                return problem
        return None
    if isinstance(shown, list):
        if not isinstance(got, list):
            return f"{where}: expected a list, got {got!r}"
        items = [x for x in shown if x != MORE]
        if MORE not in shown and len(items) != len(got):
            return f"{where}: {len(got)} items, the README shows {len(items)}: {got!r}"
        if not _assign(items, got, path):
            return f"{where}: the items {items!r} are not all in {got!r}"
        return None
    if isinstance(shown, str) and "…" in shown:
        pattern = ".*".join(re.escape(part) for part in shown.split("…"))
        if isinstance(got, str) and re.fullmatch(pattern, got, re.DOTALL):
            return None
        return f"{where}: {got!r} does not read {shown!r}"
    return None if shown == got else f"{where}: {got!r}, the README shows {shown!r}"


def _assign(items: list[Any], got: list[Any], path: str) -> bool:
    """Each shown item matches a different item of the list."""
    if not items:
        return True
    first, rest = items[0], items[1:]
    return any(mismatch(first, g, f"{path}[{i}]") is None and _assign(rest, got[:i] + got[i + 1:], path)
               for i, g in enumerate(got))


def test_the_shortened_json_reads_as_the_readme_means_it() -> None:
    shown = shown_json('{"a":"x…","b":…,"c":[1,…],"d":[…],"e":{…},"f":{"g":1,…},"h":[]}')
    assert shown == {"a": "x…", "b": ANY, "c": [1, MORE], "d": [MORE], "e": {}, "f": {"g": 1}, "h": []}
    assert shown_json('{…,"a":1}') == {"a": 1}
    got = {"a": "xyz", "b": None, "c": [2, 1], "d": [], "e": {"z": 0}, "f": {"g": 1, "k": 2}, "h": [], "i": 0}
    assert mismatch(shown, got) is None
    assert mismatch(shown, {**got, "h": [1]}) == ".h: 1 items, the README shows 0: [1]"
    assert mismatch(shown, {**got, "c": [2]}) is not None
    assert mismatch(shown, {**got, "a": "yx"}) is not None
    assert mismatch({"n": [{"t": "a"}, {"t": "b"}]}, {"n": [{"t": "b"}, {"t": "a"}]}) is None


def test_the_walkthrough_runs_as_written(server_factory) -> None:
    readme = (ROOT / "README.md").read_text()
    steps = walkthrough(readme)
    section = readme.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    assert len(steps) == len(re.findall(r"^curl ", section, re.MULTILINE)) >= 15
    assert any(s.shown for s in steps)
    server = server_factory()
    responses: list[Any] = []
    with httpx.Client(timeout=120) as client:
        for step in steps:
            method, url, headers, body = request(step.command, server.url, responses)
            resp = client.request(method, url, headers=headers, content=body)
            assert resp.is_success, f"{step.command}\n-> {resp.status_code} {resp.text}"
            responses.append(resp.json())
            if step.shown:
                problem = mismatch(shown_json(step.shown), responses[-1])
                assert problem is None, f"{step.command}\n-> {problem}"

"""Deterministic answers for the loopback OpenAI server: what a good model would say to Hippograph's
extraction, summary and resolution prompts, worked out from the prompt text by a few fixed rules."""

from __future__ import annotations

import re

_LINE = re.compile(r"^(m\d+) \((USER|[^,)]*)[^)]*\): (.*)$")
_PATTERNS = [  # (regex on a USER message, predicate, note kind, slot, note text, entity type): the slots are
    # the catalogue's, as the prompt asks; "I prefer" gets a slot of the model's own, as a weaker model's might
    (re.compile(r"\bI work (?:at|for) ([A-Z][\w&]*(?: [A-Z][\w&]*)*)"), "WORKS_AT", "fact", "employer",
     "Works at {0}", "Organization"),
    (re.compile(r"\bI (?:live|moved) (?:in|to) ([A-Z]\w*(?: [A-Z]\w*)*)"), "LIVES_IN", "fact", "city",
     "Lives in {0}", "Location"),
    (re.compile(r"\bI prefer ([\w ]+?)(?:[.,!]|$)"), None, "preference", "preference:prefer", "Prefers {0}", None),
    (re.compile(r"\bmy manager is ([A-Z]\w*(?: [A-Z]\w*)*)", re.IGNORECASE), "REPORTS_TO", "fact",
     "manager", "Reports to {0}", "Person"),
    (re.compile(r"\b[Ww]e (?:picked|chose|went with) ([A-Z]\w*) for (\w+)"), None, "decision", "decision",
     "Chose {0} for {1}", None),
    (re.compile(r"\b[Ww]e have a (?:dog|cat) called ([A-Z]\w*)"), None, "fact", "pets", "Has a pet called {0}", None),
    (re.compile(r"\b([A-Z]\w*) (?:died|passed away)"), None, "fact", "pets", "{0}", None),
]


def conversation(request: dict) -> list[tuple[str, str, str]]:
    """(message key, speaker, text) of the prompt's message lines."""
    prompt = next((m["content"] for m in request.get("messages", []) if m.get("role") == "user"), "")
    out = []
    for line in prompt.splitlines():
        if m := _LINE.match(line.strip()):
            out.append((m.group(1), m.group(2), m.group(3)))
    return out


def extraction(request: dict) -> dict:
    entities, relations, notes, messages = [], [], [], []
    for key, speaker, text in conversation(request):
        names = []
        if speaker == "USER":
            for regex, predicate, kind, slot, note, etype in _PATTERNS:
                if found := regex.search(text):
                    value = found.group(1).strip()
                    groups = [g.strip() for g in found.groups()]
                    retracts = "died" in text or "passed away" in text
                    notes.append({"kind": kind, "text": note.format(*groups), "slot": slot, "message": key,
                                  "act": "retracts" if retracts else "changes" if "moved" in text else "states",
                                  "subject": groups[-1] if slot in ("decision", "pets") else "",
                                  "confidence": 0.9})
                    if predicate:
                        entities.append({"name": value, "type": etype})
                        relations.append({"subject": "USER", "predicate": predicate, "object": value,
                                          "fact": text, "message": key})
                        names.append(value)
        names += [w for w in re.findall(r"\b(Project [A-Z]\w+|Bob|Robert Smith)\b", text)]
        entities += [{"name": n, "type": "Thing"} for n in names if not any(e["name"] == n for e in entities)]
        small = bool(re.fullmatch(r"(hi|hello|thanks|thank you|ok|okay)[.!]*", text.strip(), re.IGNORECASE))
        messages.append({"message": key, "entities": names, "small_talk": small})
    return {"entities": entities, "relations": relations, "notes": notes, "messages": messages}


def summary(request: dict) -> dict:
    lines = [{"text": f"talked about {text.split(':')[0][:60]}", "source": key}
             for key, _, text in conversation(request)[:6]]
    return {"lines": lines}


def resolution(request: dict) -> dict:
    prompt = next((m["content"] for m in request.get("messages", []) if m.get("role") == "user"), "")
    same = [{"new": "Bob", "known": "Robert Smith"}] if "- Bob" in prompt and "- Robert Smith" in prompt else []
    return {"same": same}


def answer(request: dict) -> dict:
    """The good answer to whichever of Hippograph's prompts this is."""
    system = next((m["content"] for m in request.get("messages", []) if m.get("role") == "system"), "")
    if "running summary" in system:
        return summary(request)
    if "newly mentioned names" in system:
        return resolution(request)
    return extraction(request)

"""Turning what a model wrote into the object asked for, or a clear reason why not.

Models answer with reasoning preambles (`<think>…</think>`), markdown fences, a sentence before the
JSON, the schema itself instead of an instance, or JSON cut off at the token limit. Each is either
repaired (preambles and fences stripped, the first JSON object found) or reported as a `BadAnswer`
that names what was wrong, so the caller can retry or fall back.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"^\s*<think>.*", re.DOTALL | re.IGNORECASE)  # never closed: all reasoning, no answer
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_SCHEMA_KEYS = frozenset({"$schema", "properties", "required", "$defs", "additionalProperties"})


class BadAnswer(ValueError):
    """The model's answer cannot be used; the message says why (for logs and the retry decision)."""


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text)
    if _OPEN_THINK.match(text):
        raise BadAnswer("the answer is an unfinished <think> block with no JSON after it")
    return text.strip()


def find_json(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, a fenced block, or the first balanced object."""
    text = strip_reasoning(text)
    candidates = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    start = text.find("{")
    if start >= 0:
        candidates.append(_balanced(text, start))
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    if start >= 0 and not _balanced(text, start).endswith("}"):
        raise BadAnswer(f"the JSON is cut off after {len(text)} characters (the answer hit its length limit?)")
    raise BadAnswer(f"no JSON object in the answer: {text[:120]!r}")


def _balanced(text: str, start: int) -> str:
    """From `start` (an opening brace) to its matching close, or to the end if it never closes."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def looks_like_schema(value: Any) -> bool:
    return isinstance(value, dict) and (
        len(_SCHEMA_KEYS & value.keys()) >= 2 or (value.get("type") == "object" and "properties" in value))


def parse_answer(text: str | None, model: type[M], finish_reason: str | None = None) -> M:
    """The answer as an instance of `model`, or BadAnswer saying what was wrong with it."""
    if not text or not text.strip():
        raise BadAnswer("the answer is empty")
    try:
        value = find_json(text)
    except BadAnswer:
        if finish_reason == "length":
            raise BadAnswer("the answer was cut off at the token limit (finish_reason=length)") from None
        raise
    if looks_like_schema(value):
        raise BadAnswer("the model echoed the JSON schema instead of answering with an instance of it")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise BadAnswer(f"the JSON does not match the expected shape: {exc.errors()[:3]}") from exc

"""What the boundary accepts: the one id grammar, client timestamps and metadata objects.

Every model and route parameter that takes one of these uses the types below, so the rule lives here
and nowhere else (the README's "Ids, timestamps and errors" says the same in prose).

- **Ids** (user, session, message, document, agent, and the ids of our own items in paths): 1 to 256
  characters, none of them whitespace, a control or invisible formatting character, `/`, `\\`, `?`,
  `#` or `%`, and not `.` or `..`. Every such id is one URL path segment as it is, so every route
  `/v1/users/{id}/...` can address what was stored under it. Emails, UUIDs, `conv-26`, `session_1`,
  `D1:3` and `tenant|user` all fit.
- **Timestamps**: an ISO 8601 / RFC 3339 string of a year from 1900 to 2200, as written in its own
  zone (a missing zone is UTC), with a UTC offset of at most 18 hours either way (what every store
  and ISO 8601 itself take): safe to compute with, whatever TTL is added to it. Numbers and
  digit-only strings are refused, not guessed at (pydantic would read 253402300800 as milliseconds, 1978).
- **Metadata**: a JSON object whose numbers are finite and whose text is valid Unicode (NaN,
  Infinity and lone surrogates are not JSON one can send back, though Python's parser lets them in),
  nested at most `METADATA_MAX_DEPTH` deep and at most `METADATA_MAX_CHARS` characters as compact
  JSON: it is copied onto every message of a write, sent to the extraction process and returned by
  the API, and a value nested hundreds deep breaks each of those (Python's recursion limit).
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from hippograph.errors import InvalidInput

ID_MAX_LENGTH = 256
# characters an id may not contain: whitespace, C0/C1 controls and DEL, zero-width and direction
# marks, line/paragraph separators, word joiners, the byte-order mark, and the five characters that
# end or escape a URL path segment. (Lone surrogates are not text at all: JSON parsing refuses them in
# strings, and `check_id` does for ids given in Python; they stay out of the pattern, which some JSON
# Schema validators could not compile with them.)
_ID_FORBIDDEN = r"\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff/\\?#%"
ID_PATTERN = rf"^[^{_ID_FORBIDDEN}]+$"
ID_RULE = (f"1 to {ID_MAX_LENGTH} characters without whitespace, control characters, '/', '\\', '?', '#' "
           "or '%', and not '.' or '..'")
ID_EXAMPLE = "alice@example.com"
_ID = re.compile(ID_PATTERN)
_SURROGATE = re.compile(r"[\ud800-\udfff]")

TIMESTAMP_MIN_YEAR, TIMESTAMP_MAX_YEAR = 1900, 2200  # the year as written, in the timestamp's own zone
MAX_UTC_OFFSET = timedelta(hours=18)
TIMESTAMP_RULE = ("an ISO 8601 date-time string such as 2024-05-01T09:30:00Z, between 1900-01-01 and 2200-12-31 "
                  "in its own zone (no zone means UTC; offsets from -18:00 to +18:00)")
_DIGITS = re.compile(r"^\s*[-+]?\d+(\.\d*)?\s*$")


def check_id(value: str) -> str:
    if (not 1 <= len(value) <= ID_MAX_LENGTH or not _ID.match(value) or value in (".", "..")
            or _SURROGATE.search(value)):
        raise ValueError(f"not a valid id: ids are {ID_RULE}")
    return value


class Id(str):
    """A client's id (user, session, message, document, agent) or one of ours, as the API accepts it.

    Used as a type only, the way pydantic's `EmailStr` is: a validated value is a plain `str`. (A class
    rather than an `Annotated` alias, so that FastAPI keeps the check on path and query parameters
    declared with a `Path()`/`Query()` default.)"""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(check_id, core_schema.str_schema())

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"type": "string", "minLength": 1, "maxLength": ID_MAX_LENGTH, "pattern": ID_PATTERN,
                "not": {"enum": [".", ".."]}, "description": f"An id: {ID_RULE}.", "examples": [ID_EXAMPLE]}


def _iso_only(value: Any) -> Any:
    if isinstance(value, bool | int | float) or (isinstance(value, str) and _DIGITS.match(value)):
        raise ValueError(f"numbers are not accepted as timestamps; send {TIMESTAMP_RULE}")
    return value


def _in_range(value: datetime) -> datetime:
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value
    offset = value.utcoffset()
    if offset is not None and abs(offset) > MAX_UTC_OFFSET:
        raise ValueError(f"timestamp {value.isoformat()} has a UTC offset beyond 18 hours; send {TIMESTAMP_RULE}")
    if not TIMESTAMP_MIN_YEAR <= value.year <= TIMESTAMP_MAX_YEAR:
        raise ValueError(f"timestamp {value.isoformat()} is out of range; send {TIMESTAMP_RULE}")
    return value


ClientTimestamp = Annotated[datetime, BeforeValidator(_iso_only), AfterValidator(_in_range), WithJsonSchema({
    "type": "string", "format": "date-time", "pattern": r"^(19\d\d|2[01]\d\d|2200)-",
    "description": f"{TIMESTAMP_RULE[0].upper()}{TIMESTAMP_RULE[1:]}.", "examples": ["2024-05-01T09:30:00Z"]})]
"""When a message was said or a document written, as a client sends it (see the module docstring)."""


METADATA_MAX_DEPTH = 16
METADATA_MAX_CHARS = 16_384
METADATA_RULE = (f"a JSON object nested at most {METADATA_MAX_DEPTH} levels deep and at most {METADATA_MAX_CHARS} "
                 "characters as compact JSON")


def _check_json(value: Any) -> None:
    """Refuse what JSON cannot carry back out (NaN and Infinity, lone UTF-16 surrogates) and what is
    nested too deep, without recursing: the depth is checked before a level is entered."""
    todo: list[tuple[Any, str, int]] = [(value, "", 1)]
    while todo:
        item, path, depth = todo.pop()
        where = f" at {path}" if path else ""
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{item} is not a JSON number{where}; send a finite number, or the value as a string")
        if isinstance(item, str) and _SURROGATE.search(item):
            raise ValueError(f"a lone surrogate (an escape like \\ud800 without its pair) is not text{where}")
        if isinstance(item, dict | list | tuple) and depth > METADATA_MAX_DEPTH:
            raise ValueError(f"metadata nested deeper than {METADATA_MAX_DEPTH} levels{where}; send {METADATA_RULE}")
        if isinstance(item, dict):
            for key, sub in item.items():
                todo.append((key, f"{path}.{key!r}" if path else repr(key), depth))
                todo.append((sub, f"{path}.{key}" if path else str(key), depth + 1))
        elif isinstance(item, list | tuple):
            todo.extend((sub, f"{path}[{i}]", depth + 1) for i, sub in enumerate(item))


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    _check_json(value)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if size > METADATA_MAX_CHARS:
        raise ValueError(f"metadata of {size} characters as JSON is over the limit; send {METADATA_RULE}")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_json_object)]
"""A JSON object of the client's: any keys and values, but only finite numbers and valid text, within
`METADATA_MAX_DEPTH` and `METADATA_MAX_CHARS`."""


WORD_RULE = ("a word is a run of characters without whitespace; long unbroken strings such as encoded data, "
             "hashes or minified code cannot be searched or extracted: leave them out, or put them in metadata")


def longest_word(text: str) -> str:
    """The longest run of characters without whitespace in `text` (the first of them, if several)."""
    return max(text.split(), key=len, default="")


def check_words(where: str, text: str, limit: int) -> None:
    """Refuse text with a word longer than `limit` characters (HIPPOGRAPH_MAX_WORD_CHARS): it would be
    one token for the parser, one term of the lexical index and, as an entity's name, a key of the
    graph store's index, where a few thousand bytes is already over what a key may be."""
    word = longest_word(text) if len(text) > limit else ""
    if len(word) > limit:
        raise InvalidInput(f"{where}: a word of {len(word)} characters (starting {word[:24]!r}) is over the limit of "
                           f"{limit} (HIPPOGRAPH_MAX_WORD_CHARS); {WORD_RULE}")


def plus_seconds(at: datetime, seconds: float) -> datetime:
    """`at` plus `seconds`, held at the first or last representable moment instead of overflowing."""
    try:
        return at + timedelta(seconds=seconds)
    except OverflowError:
        return (datetime.max if seconds > 0 else datetime.min).replace(tzinfo=at.tzinfo)

"""Reading conversation files: our own request format and LoCoMo's.

Both become a list of `Batch` (what one POST /v1/memories carries), so the CLI, the benchmarks and
the server ingest through the same pipeline.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from hippograph.errors import InvalidInput
from hippograph.inputs import check_id
from hippograph.models import DocumentIn, MessageIn, Role

Part = TypeVar("Part", MessageIn, DocumentIn)

_LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)


@dataclass
class Batch:
    user_id: str
    session_id: str | None
    messages: list[MessageIn] = field(default_factory=list)
    documents: list[DocumentIn] = field(default_factory=list)
    agent_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def parse_locomo_date(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08T13:56Z; None when it does not parse."""
    m = _LOCOMO_DATE.search(text or "")
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    try:
        month_no = datetime.strptime(month[:3], "%b").month
        return datetime(int(year), month_no, int(day), h, int(minute), tzinfo=UTC)
    except ValueError:
        return None


def is_locomo(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "conversation" in data[0]


def locomo_batches(samples: list[dict]) -> list[Batch]:
    """One user per conversation (its sample_id); one session per LoCoMo session. speaker_a speaks as
    the user, speaker_b as the assistant; turn ids (dia_id, e.g. 'D1:3') become message ids."""
    batches: list[Batch] = []
    for sample in samples:
        conv = sample["conversation"]
        user_id = str(sample.get("sample_id") or conv.get("speaker_a"))
        keys = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for key in keys:
            start = parse_locomo_date(conv.get(f"{key}_date_time", "")) or datetime(2000, 1, 1, tzinfo=UTC)
            msgs = []
            for i, turn in enumerate(conv[key] or []):
                text = str(turn.get("text", "")).strip()
                if turn.get("blip_caption"):
                    text = f"{text} [shared a photo: {turn['blip_caption']}]".strip()
                if not text:
                    continue
                role = Role.user if turn.get("speaker") == conv.get("speaker_a") else Role.assistant
                msgs.append(MessageIn(id=str(turn.get("dia_id") or f"{key}:{i}"), role=role, content=text,
                                      name=turn.get("speaker"), timestamp=start + timedelta(seconds=30 * i)))
            if msgs:
                batches.append(Batch(user_id=user_id, session_id=f"{user_id}:{key}", messages=msgs))
    return batches


def request_batches(data: Any) -> list[Batch]:
    """Our own format: one POST /v1/memories body, or a list of them. A problem is an InvalidInput that
    names where it is: `[0].messages[2].role: Field required`."""
    items = data if isinstance(data, list) else [data]
    out = []
    for i, item in enumerate(items):
        at = (i,) if isinstance(data, list) else ()
        if not isinstance(item, dict) or "user_id" not in item:
            raise InvalidInput(_at(at, "expected an object with user_id and messages/documents"))
        ids = []
        for key in ("user_id", "session_id", "agent_id"):
            try:  # the API's id grammar, so that whatever is ingested can be read and deleted through it
                ids.append(check_id(str(item[key])) if item.get(key) is not None else None)
            except ValueError as exc:
                raise InvalidInput(_at((*at, key), str(exc))) from exc
        out.append(Batch(
            user_id=str(ids[0]), session_id=ids[1], agent_id=ids[2],
            messages=_parts(MessageIn, item, (*at, "messages")),
            documents=_parts(DocumentIn, item, (*at, "documents")),
            metadata=item.get("metadata") or {},
        ))
    return out


def _parts(model: type[Part], item: dict, at: tuple[int | str, ...]) -> list[Part]:
    given = item.get(at[-1]) or []
    if not isinstance(given, list):
        raise InvalidInput(_at(at, "expected a list"))
    parts = []
    for n, value in enumerate(given):
        try:
            parts.append(model.model_validate(value))
        except ValidationError as exc:
            raise InvalidInput(_problems((*at, n), exc)) from exc
    return parts


def _problems(path: tuple[int | str, ...], exc: ValidationError) -> str:
    return "; ".join(_at((*path, *error["loc"]), error["msg"]) for error in exc.errors())


def _at(path: tuple[int | str, ...], problem: str) -> str:
    """((0, "messages", 2, "role"), "Field required") -> "[0].messages[2].role: Field required"."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return f"{where}: {problem}" if where else problem


def load_batches(path: Path) -> list[Batch]:
    """The batches of a file in our format or LoCoMo's; an InvalidInput naming the file, and where in it
    the problem is, if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}: not JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    try:
        return locomo_batches(data) if is_locomo(data) else request_batches(data)
    except InvalidInput as exc:
        raise InvalidInput(f"{path}: {exc}") from exc

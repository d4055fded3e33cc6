from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hippograph.datasets import load_batches, parse_locomo_date
from hippograph.errors import InvalidInput
from hippograph.models import Role


def test_parse_locomo_date() -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_locomo_date("someday") is None


def test_locomo_file(tmp_path) -> None:
    sample = [{"sample_id": "conv-x", "qa": [], "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"},
                      {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look at this",
                       "blip_caption": "a photo of a dog"}],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Caroline", "dia_id": "D2:1", "text": "I went to a support group."}],
    }}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(sample))
    batches = load_batches(path)
    assert [b.session_id for b in batches] == ["conv-x:session_1", "conv-x:session_2"]
    first = batches[0].messages
    assert [m.id for m in first] == ["D1:1", "D1:2"]
    assert first[0].role == Role.user and first[1].role == Role.assistant
    assert "a photo of a dog" in first[1].content
    assert first[0].timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_request_format_and_errors(tmp_path) -> None:
    path = tmp_path / "req.json"
    path.write_text(json.dumps({"user_id": "u", "messages": [{"role": "user", "content": "hi"}]}))
    assert load_batches(path)[0].user_id == "u"
    path.write_text(json.dumps([{"messages": []}]))
    with pytest.raises(InvalidInput):
        load_batches(path)
    path.write_text("{broken")
    with pytest.raises(InvalidInput):
        load_batches(path)

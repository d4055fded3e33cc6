"""Dense vectors from any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, TEI …).

The dimension is configuration (`HIPPOGRAPH_EMBEDDINGS__DIM`): the vector store is created with it,
an existing collection of another size is refused when the store opens, and the endpoint's own answer
is checked against it on the first call at start, so a mismatch is a clear error and never a silent
mix of vector spaces. Texts go in batches; every call is counted in the usage meter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openai

from hippograph.config import EmbeddingSettings
from hippograph.errors import BackendUnavailable, ConfigurationError
from hippograph.llm.client import describe_failure, openai_client
from hippograph.llm.usage import UsageMeter, current_user


class OpenAIEmbedder:
    def __init__(self, settings: EmbeddingSettings, usage: UsageMeter) -> None:
        if not settings.base_url or not settings.model or not settings.dim:
            raise ConfigurationError("embeddings.backend=openai needs HIPPOGRAPH_EMBEDDINGS__BASE_URL, __MODEL and __DIM")
        self.settings = settings
        self.model = settings.model
        self.name = f"openai:{settings.model}"
        self._dim = settings.dim
        self.usage = usage
        self._client = openai_client(settings)

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        size = self.settings.batch_size
        for start in range(0, len(texts), size):
            out += self._batch([t or " " for t in texts[start:start + size]])  # an empty input is refused
        return out

    def _batch(self, texts: list[str]) -> list[list[float]]:
        try:
            resp = self._client.embeddings.create(
                model=self.model, input=texts, encoding_format="float",
                dimensions=self._dim if self.settings.send_dimensions else openai.omit)
        except openai.OpenAIError as exc:
            self.usage.record(current_user.get(), "embed", self.model, failed=True)
            raise BackendUnavailable(describe_failure(exc, self.settings.base_url or "", self.settings.timeout_seconds,
                                                      self.settings.max_retries)) from exc
        tokens = resp.usage.prompt_tokens if resp.usage else 0
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(texts):
            self.usage.record(current_user.get(), "embed", self.model, tokens, failed=True)
            raise BackendUnavailable(f"the embeddings endpoint {self.settings.base_url} returned {len(data)} vectors "
                                     f"for {len(texts)} texts")
        self.usage.record(current_user.get(), "embed", self.model, tokens)
        for d in data:
            if len(d.embedding) != self._dim:
                raise ConfigurationError(
                    f"{self.model} at {self.settings.base_url} returns {len(d.embedding)}-dimensional vectors, but "
                    f"HIPPOGRAPH_EMBEDDINGS__DIM is {self._dim}: set it to {len(d.embedding)} (with a new "
                    "collection or data dir, since stored vectors cannot change size)")
        matrix = np.asarray([d.embedding for d in data], dtype=np.float32)
        norms = np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
        return (matrix / norms).tolist()

"""One client for any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM …).

- Transport failures (timeouts, connection errors, 429 and 5xx) are retried by the `openai` client
  itself, with exponential backoff that honours `Retry-After`; what still fails becomes
  `BackendUnavailable` with a message that says what happened.
- Structured output: a JSON schema in `response_format` (`json_schema`), or `json_object` with the
  schema in the prompt for servers without schema support (chosen by configuration, and switched to
  automatically when a server rejects `json_schema` with a 400).
- An unusable answer (not JSON, cut off, the schema echoed back, the wrong shape) is asked again up to
  `answer_retries` times, then becomes `ExtractionError` naming the problem.
- At most `max_concurrency` calls are in flight per process.
- Every call, good or failed, is counted in the usage meter for the current user and operation.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, TypeVar

import openai
from pydantic import BaseModel

from hippograph.config import EmbeddingSettings, LLMSettings
from hippograph.errors import BackendUnavailable, ConfigurationError, ExtractionError
from hippograph.llm.parsing import BadAnswer, parse_answer
from hippograph.llm.usage import UsageMeter, current_user

log = logging.getLogger("hippograph.llm")

M = TypeVar("M", bound=BaseModel)

def openai_client(settings: LLMSettings | EmbeddingSettings) -> openai.OpenAI:
    """The `openai` client for an endpoint's settings (its own retries with backoff, its timeout)."""
    key = settings.api_key.get_secret_value() if settings.api_key else "none"  # local servers take any key
    return openai.OpenAI(base_url=settings.base_url, api_key=key, timeout=settings.timeout_seconds,
                         max_retries=settings.max_retries)


def describe_failure(exc: openai.OpenAIError, base_url: str, timeout: float, retries: int) -> str:
    """What went wrong with a call, in words a user can act on."""
    where = f"the model endpoint {base_url}"
    if isinstance(exc, openai.APITimeoutError):
        return f"{where} did not answer within {timeout:g} s (after {retries} retries)"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot reach {where} (after {retries} retries): {exc.__cause__ or exc}"
    if isinstance(exc, openai.RateLimitError):
        return f"{where} kept refusing with 429 Too Many Requests (after {retries} retries)"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"{where} rejected the API key ({exc.status_code}): check HIPPOGRAPH_LLM__API_KEY"
    if isinstance(exc, openai.NotFoundError):
        return f"{where} does not know the model or path ({exc.status_code}): check HIPPOGRAPH_LLM__MODEL"
    if isinstance(exc, openai.APIStatusError):
        return f"{where} failed with HTTP {exc.status_code} (after {retries} retries)"
    return f"{where} failed: {exc}"


class LLMClient:
    def __init__(self, settings: LLMSettings, meter: UsageMeter) -> None:
        if not settings.base_url or not settings.model:
            raise ConfigurationError("the LLM needs HIPPOGRAPH_LLM__BASE_URL and HIPPOGRAPH_LLM__MODEL")
        self.settings = settings
        self.model = settings.model
        self.meter = meter
        self._client = openai_client(settings)
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._mode = settings.structured_output
        self._down_until = 0.0  # after a failure, calls fail fast until then instead of waiting again

    def _check_breaker(self) -> None:
        wait = self._down_until - time.monotonic()
        if wait > 0:
            raise BackendUnavailable(f"the model endpoint {self.settings.base_url} failed moments ago; "
                                     f"not called again for {wait:.0f} s (HIPPOGRAPH_LLM__COOLDOWN_SECONDS)")

    @property
    def name(self) -> str:
        return f"llm:{self.model}"

    def structured(self, operation: str, system: str, prompt: str, answer: type[M]) -> M:
        """Ask for an instance of `answer`; BackendUnavailable if the endpoint fails, ExtractionError if
        its answers stay unusable."""
        problem = ""
        for attempt in range(1 + self.settings.answer_retries):
            text, finish, tokens = self._chat(operation, system, prompt, answer, problem if attempt else "")
            try:
                parsed = parse_answer(text, answer, finish)
            except BadAnswer as exc:
                self.meter.record(current_user.get(), operation, self.model, *tokens, failed=True)
                problem = str(exc)
                log.warning("unusable answer from %s for %s (attempt %d): %s", self.model, operation, attempt + 1,
                            problem)
                continue
            self.meter.record(current_user.get(), operation, self.model, *tokens)
            return parsed
        raise ExtractionError(f"{self.model} gave no usable answer for {operation}: {problem}")

    def _chat(self, operation: str, system: str, prompt: str, answer: type[BaseModel], problem: str
              ) -> tuple[str | None, str | None, tuple[int, int]]:
        """One completion: (content, finish_reason, (prompt tokens, completion tokens)). Failed calls are
        counted here; answered ones by the caller, once it knows whether the answer was usable."""
        schema = answer.model_json_schema()
        if problem:  # say what was wrong with the last answer
            prompt += f"\n\nYour previous answer could not be used ({problem}). Answer with the JSON object only."
        for _ in range(2):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
            if self._mode == "json_object":
                messages[0]["content"] += ("\n\nAnswer with one JSON object (no prose, no markdown) that follows "
                                           f"this JSON schema:\n{json.dumps(schema)}")
                response_format: dict[str, Any] = {"type": "json_object"}
            else:
                response_format = {"type": "json_schema",
                                   "json_schema": {"name": answer.__name__, "schema": schema, "strict": False}}
            try:
                self._check_breaker()
                with self._slots:
                    resp = self._client.chat.completions.create(  # type: ignore[call-overload]
                        model=self.model, messages=messages, response_format=response_format,
                        temperature=self.settings.temperature, max_tokens=self.settings.max_tokens)
            except openai.BadRequestError as exc:
                said = str(exc).lower()
                if self._mode == "json_schema" and ("response_format" in said or "schema" in said):
                    log.warning("%s rejected json_schema output (%s); using json_object", self.model, exc)
                    self._mode = "json_object"
                    continue
                self.meter.record(current_user.get(), operation, self.model, failed=True)
                raise ExtractionError(f"the model endpoint refused the request (400): {exc}") from exc
            except openai.OpenAIError as exc:
                self.meter.record(current_user.get(), operation, self.model, failed=True)
                self._down_until = time.monotonic() + self.settings.cooldown_seconds
                raise BackendUnavailable(describe_failure(exc, str(self.settings.base_url),
                                                          self.settings.timeout_seconds,
                                                          self.settings.max_retries)) from exc
            usage = resp.usage
            tokens = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
            choice = resp.choices[0] if resp.choices else None
            if choice is None:
                return None, None, tokens
            return choice.message.content, choice.finish_reason, tokens
        raise ExtractionError("the model endpoint rejects both json_schema and json_object output")

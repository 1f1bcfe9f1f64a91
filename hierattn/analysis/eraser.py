"""ERASER's comprehensiveness and sufficiency (DeYoung et al. 2020, "ERASER: A Benchmark to
Evaluate Rationalized NLP Models", section 4), for any ranking of a document's words or sentences.

For the class y predicted on the whole document x and the top k% of units r_k of a ranking:

    comprehensiveness(k) = p(y | x) - p(y | x \\ r_k)   (removing the rationale should hurt)
    sufficiency(k)       = p(y | x) - p(y | r_k)        (the rationale alone should do: small is good)

over the bins k in 1, 5, 10, 20, 50 (%), and AOPC ("area over the perturbation curve") as the mean
of each over the bins. Readings:

- Units are the words the model reads (reading order) or its sentences. Removing a word takes its
  token out (its sentence closes up; a sentence left empty disappears), as the erasure curves do;
  removing a sentence takes the whole sentence out; keeping r_k keeps only those units, in order.
- The top k% of n units is ceil(k n / 100), at least one unit: ERASER's ``int(k n)`` is zero for
  every bin below 1/n, which would make short documents (tweets) measure nothing in those bins.
- A ranking's ties are broken by position (earlier first), so a constant ranking is reading order.
- The baseline is the same measure for random rankings (the mean over ``draws`` random orders): a
  ranking is informative only by how far its comprehensiveness exceeds random's (and its
  sufficiency falls below).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from hierattn.checkpoint.classifier import Classifier
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document, Sentence

BINS = (1, 5, 10, 20, 50)  # % of units
WORD_UNITS, SENTENCE_UNITS = "word", "sentence"
CHUNK = 64  # documents per forward pass


@dataclass
class EraserScores:
    unit: str  # "word" or "sentence"
    bins: tuple[int, ...]  # % of units
    counts: list[int]  # units in r_k at each bin
    comprehensiveness: list[float]  # probability points (0..1), one per bin
    sufficiency: list[float]

    @property
    def aopc_comprehensiveness(self) -> float:
        return sum(self.comprehensiveness) / len(self.comprehensiveness)

    @property
    def aopc_sufficiency(self) -> float:
        return sum(self.sufficiency) / len(self.sufficiency)


def unit_count(document: Document, unit: str) -> int:
    if unit == WORD_UNITS:
        return sum(len(s.tokens) for s in document.sentences)
    if unit == SENTENCE_UNITS:
        return len(document.sentences)
    raise ValueError(f"unit must be 'word' or 'sentence', got {unit!r}")


def keeping(document: Document, unit: str, kept: set[int]) -> Document:
    """``document`` with only the units at these indices (reading order), the rest taken out."""
    sentences, i, gone = [], 0, []
    for s, sentence in enumerate(document.sentences):
        if unit == SENTENCE_UNITS:
            if s in kept:
                sentences.append(sentence)
            else:
                gone.append((sentence.start, sentence.end))
            continue
        tokens = tuple(t for j, t in enumerate(sentence.tokens) if i + j in kept)
        gone += ([(t.start, t.end) for j, t in enumerate(sentence.tokens) if i + j not in kept] if tokens
                 else [(sentence.start, sentence.end)])
        i += len(sentence.tokens)
        if tokens:
            sentences.append(Sentence(tokens, sentence.start, sentence.end))
    return Document(document.text, sentences, document.truncation, document.skipped).skipping(gone)


def bin_counts(n: int, bins=BINS) -> list[int]:
    return [min(n, max(1, math.ceil(k * n / 100))) for k in bins]


def top_units(ranking: list[float], count: int) -> set[int]:
    return set(sorted(range(len(ranking)), key=lambda i: (-ranking[i], i))[:count])


def output_distributions(classifier: Classifier, documents: list[Document]) -> torch.Tensor:
    """(len(documents), classes) softmax outputs, CHUNK documents per forward pass. An active
    ``attention_override`` applies to every pass."""
    out = []
    for first in range(0, len(documents), CHUNK):
        batch = encode_documents(documents[first: first + CHUNK], classifier.vocab).to(classifier.device)
        with torch.inference_mode():
            logits = classifier.model(batch, return_attentions=False).logits.float()
        out.append(torch.softmax(logits, -1).cpu())
    return torch.cat(out) if out else torch.zeros(0, len(classifier.labels))


def eraser_scores(classifier: Classifier, document: Document, rankings: list[list[float]], unit: str, label: int,
                  base: float, bins=BINS) -> list[EraserScores]:
    """ERASER scores of each ranking (one score per unit, higher = more important), in one batch
    of forward passes: 2 x len(bins) documents per ranking."""
    n = unit_count(document, unit)
    counts = bin_counts(n, bins)
    everything = set(range(n))
    documents = []
    for ranking in rankings:
        if len(ranking) != n:
            raise ValueError(f"a {unit} ranking needs {n} scores, got {len(ranking)}")
        for count in counts:
            top = top_units(ranking, count)
            documents += [keeping(document, unit, everything - top), keeping(document, unit, top)]
    p = output_distributions(classifier, documents)[:, label].tolist()
    out = []
    for r in range(len(rankings)):
        part = p[r * 2 * len(counts): (r + 1) * 2 * len(counts)]
        out.append(EraserScores(unit, tuple(bins), counts, [base - q for q in part[0::2]],
                                [base - q for q in part[1::2]]))
    return out


def random_rankings(n: int, draws: int, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.random() for _ in range(n)] for _ in range(draws)]


def mean_scores(scores: list[EraserScores]) -> EraserScores:
    """The bin-by-bin mean of several rankings' scores (the random baseline)."""
    first = scores[0]
    return EraserScores(first.unit, first.bins, first.counts,
                        [sum(s.comprehensiveness[i] for s in scores) / len(scores) for i in range(len(first.bins))],
                        [sum(s.sufficiency[i] for s in scores) / len(scores) for i in range(len(first.bins))])

"""Pretrained word embeddings: Word2Vec trained on the training split (HCAN paper section 4.3).

gensim does the training: its Word2Vec is the reference implementation, and a hand-written
skip-gram would be slower and less trustworthy. Only the training split is read, so nothing from
validation or test leaks into the embeddings.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

from hierattn.data.text import Document, Vocab

MIN_COUNT = 5  # the paper's minimum word frequency


def word2vec_matrix(documents: Iterable[Document], vocab: Vocab, dim: int, seed: int,
                    min_count: int = MIN_COUNT, epochs: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """Train Word2Vec (skip-gram) on the sentences of ``documents``.

    Returns ``(vectors, found)``: vectors (len(vocab), dim), and a bool (len(vocab),) that is True
    for the vocabulary words Word2Vec learned (seen ``min_count`` times); other rows are zeros and
    should keep the model's own initialisation. One worker thread, so a seed gives the same vectors.
    """
    from gensim.models import Word2Vec

    sentences = [[t.norm for t in s.tokens] for d in documents for s in d.sentences]
    w2v = Word2Vec(sentences, vector_size=dim, min_count=min_count, window=5, sg=1, workers=1,
                   seed=seed, epochs=epochs)
    vectors = torch.zeros(len(vocab), dim)
    found = torch.zeros(len(vocab), dtype=torch.bool)
    for i, word in enumerate(vocab.itos):
        if i > Vocab.unk_id and word in w2v.wv.key_to_index:
            vectors[i] = torch.from_numpy(w2v.wv[word].copy())
            found[i] = True
    return vectors, found


@torch.no_grad()
def initialise_embeddings(embedding: torch.nn.Embedding, vectors: torch.Tensor, found: torch.Tensor) -> int:
    """Copy the learned rows into ``embedding``, rescaled to its initial spread; returns how many.

    Word2Vec vectors have a norm of a few units, while the models start their embeddings at their
    own scale (N(0, 1) for nn.Embedding); matching the standard deviation keeps the positional
    embeddings and layer norms of the attention models in the range they were designed for.
    """
    if vectors.shape != embedding.weight.shape:
        raise ValueError(f"vectors {tuple(vectors.shape)} do not fit embedding {tuple(embedding.weight.shape)}")
    if not found.any():
        return 0
    learned = vectors[found]
    target_std = embedding.weight[2:].std()
    learned = (learned - learned.mean()) / learned.std().clamp(min=1e-8) * target_std
    embedding.weight[found] = learned.to(embedding.weight.dtype)
    return int(found.sum())

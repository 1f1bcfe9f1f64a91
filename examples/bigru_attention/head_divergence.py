"""How far apart the heads of a multi-head target attention look, beside chance.

    PYTHONPATH=. HIERATTN_PLUGINS=examples/bigru_attention/bigru_attention.py \
        python examples/bigru_attention/head_divergence.py checkpoints/tweets-bigru-attention

For each validation document (of the checkpoint's built-in data set; 500 drawn at random): the mean
Jensen-Shannon divergence (natural log, at most ln 2) between each pair of heads, beside the same
for as many random Dirichlet(1) distributions over the same words, and each head's JSD from an
even spread. Run from the repository root (``PYTHONPATH=.``: hierattn is not installed).
"""
from __future__ import annotations

import argparse
import itertools
import random

import torch

from hierattn.analysis.explain import explain
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split


def jsd(p: torch.Tensor, q: torch.Tensor) -> float:
    m = (p + q) / 2
    kl = lambda a, b: float((a * (a.clamp_min(1e-12) / b.clamp_min(1e-12)).log()).sum())
    return (kl(p, m) + kl(q, m)) / 2


def mean_pairwise(rows: torch.Tensor) -> float:
    pairs = list(itertools.combinations(range(rows.shape[0]), 2))
    return sum(jsd(rows[a], rows[b]) for a, b in pairs) / len(pairs)


def head_divergence(checkpoint: str, documents: int = 500, seed: int = 0) -> dict[str, float]:
    classifier = load_classifier(checkpoint, device="cpu")
    data = load_builtin(classifier.dataset)
    chosen = random.Random(seed).sample(stratified_split(data.labels)["validation"], documents)
    torch.manual_seed(seed)  # the Dirichlet draws
    between, random_heads, from_even = [], [], []
    for i in chosen:
        ex = explain(classifier, data.texts[i])
        weights = ex.attentions["word.target"].weights[0][:, : ex.word_count()]  # (heads, words)
        heads, words = weights.shape
        if heads < 2 or words < 2:
            continue
        between.append(mean_pairwise(weights))
        draws = torch.distributions.Dirichlet(torch.ones(words)).sample((heads,))
        random_heads.append(mean_pairwise(draws))
        from_even.append(sum(jsd(h, torch.full((words,), 1 / words)) for h in weights) / heads)
    mean = lambda xs: sum(xs) / len(xs)
    return {"documents": len(between), "between_heads": mean(between), "between_random_heads": mean(random_heads),
            "head_from_even": mean(from_even)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--documents", type=int, default=500)
    args = parser.parse_args()
    for path in args.checkpoints:
        r = head_divergence(path, args.documents)
        print(f"{path}: {r['documents']} documents; JSD between heads {r['between_heads']:.3f}, between random "
              f"heads {r['between_random_heads']:.3f}; a head from an even spread {r['head_from_even']:.3f}")

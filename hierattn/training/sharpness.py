"""How sharp and how local a model's self-attention is as it trains: the Train page's per-epoch
chart, measured on the validation batches after each epoch."""
from __future__ import annotations

import torch

from hierattn.analysis.metrics import even_spread, metric_columns
from hierattn.contract import AttentionMap


@torch.no_grad()
def mean_self_attention_metrics(model, batches, device, max_documents: int = 256, bandwidth: int = 3) -> dict:
    """Mean Gini and diagonality (at ``bandwidth``) over every self-attention matrix of up to
    ``max_documents`` documents: how sharp and how local a model's attention is at this point of
    training, and the diagonality an even spread would give over the same matrices
    (``..._even``; an even spread's Gini is 0). Matrices of one position are skipped (their
    metrics say nothing). Empty when the model has no self-attention."""
    was_training = model.training
    model.eval()
    ginis, diagonals, sizes, seen = [], [], [], 0
    for batch in batches:
        out = model(batch.to(device), return_attentions=True)
        maps = [a for a in out.attentions.values() if a.is_self_attention]
        if not maps:
            break
        take = min(len(batch), max_documents - seen)
        for a in maps:
            a = AttentionMap(a.weights[:take].float().cpu(), a.axes, a.level, a.mask[:take].cpu())
            cols = metric_columns(a, min_size=2)
            ginis += cols["gini"].tolist()
            diagonals += cols[f"diagonality_b{bandwidth}"].tolist()
            sizes += cols["size"].tolist()
        seen += len(batch)
        if seen >= max_documents:
            break
    model.train(was_training)
    if not ginis:
        return {}
    name = f"diagonality_b{bandwidth}"
    return {"attention_gini": sum(ginis) / len(ginis), f"attention_{name}": sum(diagonals) / len(diagonals),
            f"attention_{name}_even": float(even_spread(sizes)[name].mean())}

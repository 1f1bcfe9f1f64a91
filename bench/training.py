"""Training throughput of HAN and HCAN on bbc-news batches, FLOPs counted, and the matrix-multiply peak
they are judged against (model FLOPs utilisation)."""
from __future__ import annotations

import random
import time
from contextlib import nullcontext

import torch

from hierattn.data.batches import bucketed_batches, encode_documents
from hierattn.data.text import Vocab
from hierattn.models import REGISTRY, build_model, sized_for_text
from hierattn.training.presets import PRESETS


def training_throughput(model_type: str, documents, labels, vocab, num_classes: int, batches: int, device,
                        precision: str = "fp32", reference: bool = False,
                        buckets: bool | None = None, warm_every_shape: bool = False) -> tuple[float, float]:
    """(documents per second, model FLOPs per document) over the first ``batches`` training steps
    (forward, backward, Adam), after one warm-up step. With ``batches`` at least the number of
    batches, every path sees the same documents, whatever its batching.

    ``reference``: the straightforward implementation the bench measures against: batches of
    documents drawn at random (padded to their longest document and sentence, no length buckets),
    and HCAN's reference layers (``layers.straightforward``: every sentence row of the padded batch,
    one convolution per Q, K and V, explicit masked softmax, weights kept, ``bernoulli_`` dropout).
    ``buckets``: override the batching alone (default: random for the reference, buckets otherwise),
    so the bench can show what each change buys. ``precision="bf16"``: autocast as
    ``--precision bf16`` does. ``warm_every_shape``: one untimed pass over every batch first, so
    that a GPU's one-off work per new shape (which a training run of many epochs pays once) is
    left out.
    FLOPs are counted once, on the warm-up step, by ``torch.utils.flop_counter``."""
    from torch.utils.flop_counter import FlopCounterMode

    from hierattn.models.layers import straightforward
    from hierattn.training.loop import autocast

    preset = PRESETS[f"bbc-news-{model_type}"]
    torch.manual_seed(0)
    sized = sized_for_text(model_type, preset.model_config, preset.text.max_sentences, preset.text.max_words)
    own = REGISTRY[model_type].vocabulary
    if own:  # a model of its own tokenizer (a transformer), trained on these documents as training trains it
        vocab, implied = own(documents, sized, preset.train)
        sized = {**sized, **implied}
    elif vocab is None:
        vocab = Vocab.build(documents, min_freq=2)
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": num_classes, **sized}).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    if not (not reference if buckets is None else buckets):
        order = random.Random(0).sample(range(len(documents)), len(documents))
        chunks = [order[i: i + preset.train.batch_size] for i in range(0, len(order), preset.train.batch_size)]
        all_batches = [encode_documents([documents[i] for i in c], vocab, [labels[i] for i in c]) for c in chunks]
    else:
        all_batches = bucketed_batches(documents, labels, vocab, preset.train.batch_size, shuffle=True)
    all_batches = all_batches[:batches]

    def step(batch, counter=None):
        with counter or nullcontext():  # entering a FlopCounterMode resets it: once, around both passes
            with autocast(device, precision), straightforward() if reference else nullcontext():
                loss = model(batch, return_attentions=False).loss
            optimizer.zero_grad()
            loss.backward()
        optimizer.step()

    for batch in all_batches if warm_every_shape else all_batches[:1]:  # untimed
        step(batch.to(device))  # allocators and kernels; on a GPU, cuDNN's plan for each new shape
    timed, docs = 0.0, 0
    for batch in all_batches:
        batch = batch.to(device)
        start = time.perf_counter()
        step(batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        timed += time.perf_counter() - start
        docs += len(batch)
    # FLOPs over the same batches in a second, untimed pass (the counter slows every operation down)
    flops = 0
    for batch in all_batches:
        counter = FlopCounterMode(display=False)
        step(batch.to(device), counter)
        flops += counter.get_total_flops()
    flops_per_doc = flops / docs
    return docs / timed, flops_per_doc


def matmul_peak(dtype: torch.dtype, device, size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of a size x size matrix product: the machine's limit the training figures are read against."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    a @ b
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    if device.type == "cuda":
        torch.cuda.synchronize()
    return 2 * size ** 3 * repeats / (time.perf_counter() - start) / 1e9


def han_paths_gap(documents, labels, vocab, num_classes: int, batches: int) -> float:
    """Largest absolute difference, over the first ``batches`` bench batches, between HAN's fast
    path and today's implementation (``layers.straightforward``: ``nn.GRU`` on packed sequences,
    attention scored at every padded position): logits, both attention maps, and every parameter's
    gradient, dropout off so that both paths compute one function."""
    from hierattn.models.layers import straightforward

    preset = PRESETS["bbc-news-han"]
    torch.manual_seed(0)
    config = {"vocab_size": len(vocab), "num_classes": num_classes, **preset.model_config, "dropout": 0.0}
    model = build_model("han", config).train()
    gap = 0.0
    for batch in bucketed_batches(documents, labels, vocab, preset.train.batch_size, shuffle=True)[:batches]:
        outputs = []
        for reference in (True, False):
            model.zero_grad()
            with straightforward() if reference else nullcontext():
                out = model(batch)
            out.loss.backward()
            outputs.append([out.logits.detach()] + [a.weights.detach() for a in out.attentions.values()]
                           + [p.grad.clone() for p in model.parameters()])
        gap = max([gap] + [float((a - b).abs().max()) for a, b in zip(*outputs)])
    return gap

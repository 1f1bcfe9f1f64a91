"""Training on a data set held in memory (a built-in one, or your table): batches in length
buckets, validation after every epoch, through the one loop (``loop.run``); models fitted in one
pass (TF-IDF) are fitted instead."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from hierattn.checkpoint.classifier import best_device
from hierattn.checkpoint.format import HELDOUT_MB
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.contract import Batch
from hierattn.data.batches import bucketed_batches
from hierattn.data.builtin import BUILTIN
from hierattn.data.split import PreparedData, training_subset
from hierattn.data.text import Document, TextConfig, Vocab
from hierattn.models import REGISTRY, build_model, pretrained, sized_for_text
from hierattn.training.baselines import baselines
from hierattn.training.loop import Progress, TrainConfig, TrainEvent, optimiser, record, run, seed_everything


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: list[Batch], device) -> tuple[float, float, float]:
    """(accuracy, mean cross-entropy, seconds) over ``batches``."""
    model.eval()
    correct = total = 0
    loss_sum = 0.0
    start = time.perf_counter()
    for batch in batches:
        batch = batch.to(device)
        out = model(batch, return_attentions=False)
        correct += int((out.logits.argmax(-1) == batch.labels).sum())
        loss_sum += out.loss.item() * len(batch)
        total += len(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return correct / max(total, 1), loss_sum / max(total, 1), time.perf_counter() - start


@torch.no_grad()
def predicted_counts(model: torch.nn.Module, batches: list[Batch], device, classes: int) -> list[int]:
    """How many of the batches' documents the model assigns to each class: a run that answers one
    class whatever the text is told so (its accuracy alone read "within noise of TF-IDF")."""
    model.eval()
    counts = torch.zeros(classes, dtype=torch.long)
    for batch in batches:
        counts += torch.bincount(model(batch.to(device), return_attentions=False).logits.argmax(-1).cpu(),
                                 minlength=classes)
    return counts.tolist()


class InMemoryEpochs:
    """Each epoch's batches: documents of similar size together (``bucketed_batches``), the batch
    order shuffled with the epoch's seed; validation over the whole validation split."""

    def __init__(self, documents: list[Document], labels: list[int], vocab: Vocab, config: TrainConfig,
                 validation: list[Batch], device):
        self.documents, self.labels, self.vocab, self.config = documents, labels, vocab, config
        self.validation, self.device = validation, device
        self.steps = -(-len(documents) // config.batch_size)

    def batches(self, epoch: int, start: int) -> Iterator[Batch]:
        batches = bucketed_batches(self.documents, self.labels, self.vocab, self.config.batch_size, shuffle=True,
                                   seed=self.config.seed + epoch)
        yield from batches[start:]

    def validate(self, model: torch.nn.Module) -> tuple[float, float]:
        accuracy, loss, _ = evaluate(model, self.validation, self.device)
        return accuracy, loss


def train(model_type: str, model_config: dict, data: PreparedData, text_config: TextConfig,
          config: TrainConfig, out: str | Path | None = None,
          on_event: Callable[[TrainEvent], None] | None = None,
          stop: threading.Event | None = None, progress: bool = False, device=None,
          after_epoch: Callable[[torch.nn.Module, list[Batch], torch.device], dict] | None = None,
          at_start: Callable[[torch.nn.Module], None] | None = None, private_heldout: bool = False,
          watch: int = 0) -> dict:
    """Train with Adam, keep the best-validation weights, stop early, evaluate on test, save.

    Returns the metrics written to ``metrics.json``. ``stop`` ends training after the current
    batch; the best weights so far are still saved when at least one epoch finished.
    ``after_epoch(model, validation batches, device)`` may measure more after each epoch (the Train
    page: attention Gini and diagonality); its numbers join that epoch's history row.
    ``at_start(model)`` sees the model as training starts (the registry records its query vectors).
    ``watch``: record the run's explanation of this many validation documents at the start and after
    each epoch (``playback``), kept beside the checkpoint as ``playback.json``.
    ``progress``: a progress bar per epoch and a line per validation on the terminal.
    """
    seed_everything(config.seed)
    device = torch.device(device) if device else best_device()
    if config.train_documents:
        data = training_subset(data, config.train_documents)
    parts = {name: data.part(name) for name in ("train", "validation", "test")}
    train_docs, train_y = parts["train"]
    if REGISTRY[model_type].fitted:
        return _fit(model_type, model_config, data, parts, text_config, config, out, on_event, private_heldout)
    build_vocabulary = REGISTRY[model_type].vocabulary
    if config.start_from:  # fine-tuning: the checkpoint's tokenizer and weights, a head for these labels
        model, vocab = started_from(pretrained.resolve(config.start_from), model_type, data.dataset.label_names)
    else:
        if build_vocabulary:  # its own tokenizer, trained on the training split
            vocab, implied = build_vocabulary(train_docs, model_config, config)
            model_config = {**model_config, **implied}
        else:
            vocab = Vocab.build(train_docs, config.min_freq, config.max_vocab)
        model_config = sized_for_text(model_type, model_config, text_config.max_sentences, text_config.max_words)
        model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": len(data.dataset.label_names),
                                         **model_config})
    val_batches = bucketed_batches(*parts["validation"], vocab, 64, shuffle=False)
    pretrained_words = _pretrain_embeddings(model, config, train_docs, vocab)
    if at_start:
        at_start(model)
    model = model.to(device)
    recorder = _recorder(data, model_type, vocab, text_config, device, watch) if watch else None
    if recorder:
        recorder(model)  # the start: epoch 0
    epochs = InMemoryEpochs(train_docs, train_y, vocab, config, val_batches, device)
    optimizer, scheduler = optimiser(model, config, epochs.steps)
    state, started, bar = Progress(), time.perf_counter(), _Bar(config, epochs.steps) if progress else None

    def measure(m):
        row = after_epoch(m, val_batches, device) if after_epoch else {}
        return {**row, **recorder(m)} if recorder else row

    outcome = run(model, model, epochs, optimizer, scheduler, config, device, state, on_event=on_event, stop=stop,
                  measure=measure if (after_epoch or recorder) else None,
                  on_step=bar.step if bar else None, on_validation=bar.validated if bar else None)
    if bar:
        bar.close()
    if outcome.best_state is None:
        if on_event:
            on_event(TrainEvent("done", 0))
        return {}
    model.load_state_dict(outcome.best_state)
    return _conclude(model, model_type, vocab, data, parts, text_config, out, on_event, device,
                     record(state, outcome, model, config, device, started, pretrained_words=pretrained_words,
                            **_base_model(config.start_from)),
                     private_heldout, recorder.finish(state.history, state.best_epoch) if recorder else None)


def _recorder(data: PreparedData, model_type: str, vocab, text_config: TextConfig, device, count: int):
    """A ``playback.Recorder`` of ``count`` validation documents, explaining the model in training
    as a loaded checkpoint of it would be explained."""
    from hierattn.checkpoint.classifier import Classifier
    from hierattn.training.playback import Recorder, watched_documents

    names = data.dataset.label_names
    indices = data.split["validation"]
    texts = [data.dataset.texts[i] for i in indices]
    chosen = watched_documents(texts, [data.dataset.labels[i] for i in indices], count)
    return Recorder([texts[j] for j in chosen], [names[data.dataset.labels[indices[j]]] for j in chosen],
                    lambda model: Classifier("training", model, model_type, vocab, list(names), text_config, {},
                                             data.dataset.name, torch.device(device)))


def _base_model(start_from: str) -> dict:
    """``{"base_model": ...}`` for the card when a run starts from an installed pretrained encoder."""
    described = pretrained.describe(start_from) if start_from else None
    return {"base_model": described} if described else {}


def started_from(folder: str, model_type: str, labels: list[str]):
    """(model, vocabulary) to fine-tune: the checkpoint at ``folder`` opened as the app opens one
    (within its limits, nothing in it run), with a head for ``labels`` (``ModelSpec.relabel``)."""
    from hierattn.checkpoint.reading import load_classifier

    base = load_classifier(folder, device="cpu")
    relabel = REGISTRY[base.model_type].relabel
    if base.model_type != model_type or relabel is None:
        raise ValueError(f"{base.name} is a {base.model_type} checkpoint: it cannot start a {model_type} run"
                         if base.model_type != model_type else f"a {model_type} model cannot be trained further")
    return relabel(base.model, list(labels)).train(), base.vocab


def measured_rate(start_from: str, model_type: str, texts: list[str], labels: list[int], label_names: list[str],
                  text_config: TextConfig, batch_size: int, steps: int = 2) -> float:
    """Training documents a second of a run from ``start_from`` on this machine, now: ``steps``
    optimiser steps on batches of these texts (after one untimed step, which allocates), as a run
    takes them. What the Train page's time estimate rests on: a pre-trained model on two cores
    reads 0.7 documents a second where its help once said "a few"."""
    from hierattn.data.text import tokenize_many

    model, vocab = started_from(pretrained.resolve(start_from), model_type, label_names)
    count = min(len(texts), batch_size * (steps + 1))
    batches = bucketed_batches(tokenize_many(texts[:count], text_config), list(labels[:count]), vocab, batch_size,
                               shuffle=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-6)
    model.train()
    timed, started = 0, 0.0
    for k, batch in enumerate(batches):
        if k == 1:
            started = time.perf_counter()
        optimizer.zero_grad()
        model(batch).loss.backward()
        optimizer.step()
        timed += len(batch) if k else 0
    seconds = time.perf_counter() - started if started else 0.0
    return timed / seconds if timed and seconds > 0 else 0.0


class _Bar:
    """A terminal progress bar for each epoch, and a line after each validation (the command line)."""

    def __init__(self, config: TrainConfig, steps: int):
        self.config, self.steps, self.bar = config, steps, None

    def step(self, progress: Progress, loss: torch.Tensor, rate: float) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=self.steps, desc=f"epoch {progress.epoch}/{self.config.epochs}", unit="batch",
                            leave=False, dynamic_ncols=True)
        self.bar.set_postfix(loss=f"{float(loss):.3f}", docs_s=f"{rate:.0f}")
        self.bar.update()

    def validated(self, progress: Progress, best_state, row: dict) -> None:
        self.close()
        print(f"epoch {row['epoch']}: train loss {row['train_loss']:.4f}, validation accuracy "
              f"{row['val_accuracy']:.4f}, validation loss {row['val_loss']:.4f}", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _fit(model_type, model_config, data, parts, text_config, config, out, on_event, private_heldout) -> dict:
    """A model fitted once on the training split (its spec's ``fit``: the scikit-learn baselines), no epochs."""
    started = time.perf_counter()
    train_docs, train_y = parts["train"]
    model, vocab = REGISTRY[model_type].fit(train_docs, train_y, len(data.dataset.label_names), model_config,
                                            config.seed)
    train_seconds = time.perf_counter() - started
    device = torch.device("cpu")
    val_acc, val_loss, _ = evaluate(model, bucketed_batches(*parts["validation"], vocab, 64, shuffle=False), device)
    state = Progress(best_accuracy=val_acc, best_loss=val_loss, best_epoch=1, documents=len(train_docs),
                     train_seconds=train_seconds)
    return _conclude(model, model_type, vocab, data, parts, text_config, out, on_event, device,
                     record(state, None, model, config, device, started, pretrained_words=0), private_heldout)


def _conclude(model, model_type, vocab, data, parts, text_config, out, on_event, device, metrics: dict,
              private_heldout: bool = False, playback: dict | None = None) -> dict:
    """Test the chosen weights, write ``metrics.json`` with the checkpoint, report "done". A data set of
    your own keeps its held-out documents with it; ``private_heldout``: marked as its visitor's own
    (a Train-page run on a shared server), shown to no other visitor."""
    test_acc, _, test_seconds = evaluate(model, bucketed_batches(*parts["test"], vocab, 64, shuffle=False), device)
    predicted = predicted_counts(model, bucketed_batches(*parts["validation"], vocab, 64, shuffle=False), device,
                                 len(data.dataset.label_names))
    metrics = {"dataset": data.dataset.name, "model_type": model_type, **metrics, "test_accuracy": test_acc,
               "validation_predicted": dict(zip(data.dataset.label_names, predicted)),
               "inference_ms_per_document": 1000 * test_seconds / max(len(parts["test"][0]), 1),
               "split_sizes": {k: len(v[0]) for k, v in parts.items()},
               "baselines": baselines(parts["train"], {k: parts[k] for k in ("validation", "test")},
                                      data.dataset.label_names)}
    if out is not None:
        save_checkpoint(out, model, model_type, vocab, data.dataset.label_names, text_config, metrics,
                        dataset=data.dataset.name,
                        heldout=None if data.dataset.name in BUILTIN else heldout(data) | {"private": private_heldout},
                        playback=playback)
    if on_event:
        on_event(TrainEvent("done", metrics["best_epoch"], val_accuracy=metrics["validation_accuracy"]))
    return metrics


def heldout(data: PreparedData, budget_mb: float = HELDOUT_MB) -> dict:
    """The validation and test documents of a data set of your own, as (text, label) pairs, for
    the checkpoint to keep (``save_checkpoint(heldout=...)``): all of them when they fit in
    ``budget_mb``, else an even sample of each split (a split is in class order, so an even sample
    keeps every class)."""
    names = data.dataset.label_names
    rows = {part: [(data.dataset.texts[i], names[data.dataset.labels[i]]) for i in data.split[part]]
            for part in ("validation", "test")}
    budget = budget_mb * 2**20
    size = sum(len(t.encode("utf-8", "replace")) + len(y) + 8 for part in rows.values() for t, y in part)
    if size <= budget:
        return {k: [list(r) for r in v] for k, v in rows.items()}
    share = budget / size
    return {k: [list(v[round(j / share)]) for j in range(int(len(v) * share))] for k, v in rows.items()}


def _pretrain_embeddings(model, config: TrainConfig, train_docs, vocab: Vocab) -> int:
    """Initialise the word embeddings as ``config.embeddings`` says; returns how many rows were set."""
    if config.embeddings == "random":
        return 0
    if config.embeddings != "word2vec":
        raise ValueError(f"embeddings must be 'random' or 'word2vec', got {config.embeddings!r}")
    embedding = getattr(model, "embedding", None)
    if not isinstance(embedding, torch.nn.Embedding):
        raise ValueError(f"{type(model).__name__} has no word embedding to initialise")
    from hierattn.training.embeddings import initialise_embeddings, word2vec_matrix

    vectors, found = word2vec_matrix(train_docs, vocab, embedding.embedding_dim, config.seed)
    return initialise_embeddings(embedding, vectors, found)

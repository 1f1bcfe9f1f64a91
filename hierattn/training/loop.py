"""The one training loop, for in-memory data sets (``in_memory.train``) and streamed corpora on
one process or many (``corpus.train_corpus``): the optimiser and its schedule, one optimisation
step, the best-epoch rule with patience, validation once an epoch or every N documents, and the
metrics record written with the checkpoint. Where the data comes from is an ``Epochs`` source.
"""
from __future__ import annotations

import copy
import math
import platform
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Protocol

import torch

from hierattn.contract import Batch
from hierattn.data.split import SEED
from hierattn.data.text import Vocab
from hierattn.threads import TrainingThreads

# A pre-trained start's recipe (BERT's fine-tuning, Devlin et al. 2019: 2e-5 to 5e-5, 2-4 epochs,
# a linear warm-up): the Train page's and ``train --start-from``'s defaults.
PRETRAINED_LR, PRETRAINED_EPOCHS, PRETRAINED_SCHEDULE = 3e-5, 3, "warmup"
# A pre-trained start's batch, and the optimiser steps its default epochs reach at the least: 300
# uploaded documents at 3 epochs of 64 made 12 steps, and the run ended answering the largest class.
PRETRAINED_BATCH, PRETRAINED_STEPS, PRETRAINED_MOST_EPOCHS = 16, 100, 20


def pretrained_epochs(train_documents: int, batch_size: int = PRETRAINED_BATCH) -> int:
    """A pre-trained start's default epochs: ``PRETRAINED_EPOCHS``, or more on a small training split,
    enough for about ``PRETRAINED_STEPS`` optimiser steps (at most ``PRETRAINED_MOST_EPOCHS``)."""
    per_epoch = max(1, -(-int(train_documents) // max(1, int(batch_size))))
    return min(PRETRAINED_MOST_EPOCHS, max(PRETRAINED_EPOCHS, -(-PRETRAINED_STEPS // per_epoch)))


@dataclass
class TrainConfig:
    epochs: int = 10
    batch_size: int = 32
    lr: float = 1e-3  # Adam; the paper's 2e-5 is for batch size 1 on a GPU
    weight_decay: float = 0.0
    patience: int = 3  # epochs without a better validation accuracy before stopping
    clip: float = 5.0  # gradient-norm clipping
    # or "cosine": anneal to 0 over ``epochs`` (per step); or "warmup": BERT's fine-tuning schedule, up
    # linearly over the first tenth of the steps, then down linearly to 0 (Devlin et al. 2019)
    lr_schedule: str = "constant"
    word_dropout: float = 0.0  # share of real training words replaced by <unk> each step
    seed: int = SEED
    min_freq: int = 2  # vocabulary
    max_vocab: int | None = 20000
    embeddings: str = "random"  # or "word2vec": trained on the training split (HCAN section 4.3)
    precision: str = "fp32"  # or "bf16": autocast the forward pass (weights and optimizer stay fp32)
    # A checkpoint folder to train further (a Hugging Face classifier's: fine-tuning), its tokenizer and
    # weights kept, its classification head new where the labels differ; "" starts from scratch.
    start_from: str = field(default="", metadata={"max_length": 4096})
    # At most this many training documents (0: all), each class in proportion, evenly spaced; validation
    # and test whole (``data.split.training_subset``)
    train_documents: int = 0


@dataclass
class TrainEvent:
    """What the loop reports: ``kind`` is "batch", "epoch" or "done"."""

    kind: str
    epoch: int
    step: int = 0
    steps: int = 0
    loss: float | None = None
    val_accuracy: float | None = None
    docs_per_s: float | None = None
    extra: dict = field(default_factory=dict)  # "epoch": the history row


def hardware() -> str:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    threads = torch.get_num_threads()
    return f"CPU: {name}, {threads} thread{'s' if threads != 1 else ''}"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def optimiser(model: torch.nn.Module, config: TrainConfig, steps_per_epoch: int):
    """(Adam, its schedule or None) for ``model``'s parameters."""
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    return optimizer, schedule(optimizer, config, steps_per_epoch)


def schedule(optimizer, config: TrainConfig, steps_per_epoch: int):
    """``constant``: no schedule; ``cosine``: anneal to 0 over every step of ``config.epochs``;
    ``warmup``: a tenth of the steps up from 0, the rest down to 0, linearly (a pre-trained start's:
    a full step on a head still random would shake the pre-trained weights it sits on)."""
    total = max(1, config.epochs * steps_per_epoch)
    if config.lr_schedule == "constant":
        return None
    if config.lr_schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total)
    if config.lr_schedule == "warmup":
        rise = max(1, total // 10)
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: (step + 1) / rise if step < rise else max(0.0, (total - step) / (total - rise)))
    raise ValueError(f"lr_schedule must be 'constant', 'cosine' or 'warmup', got {config.lr_schedule!r}")


def word_dropout(batch: Batch, p: float) -> Batch:
    """A copy of ``batch`` with each real word replaced by ``<unk>`` with probability ``p``."""
    drop = (torch.rand(batch.word_ids.shape, device=batch.word_ids.device) < p) & batch.word_mask
    return replace(batch, word_ids=batch.word_ids.masked_fill(drop, Vocab.unk_id))


def autocast(device, precision: str):
    """bf16 autocast of the forward pass (matrix products and convolutions in bfloat16, reductions
    and the loss in float32) on the CPU or CUDA; a no-op for fp32."""
    if precision not in ("fp32", "bf16"):
        raise ValueError(f"precision must be 'fp32' or 'bf16', got {precision!r}")
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=precision == "bf16")


def optimisation_step(model, batch: Batch, optimizer, scheduler, config: TrainConfig, device,
                      parameters=None) -> torch.Tensor:
    """One step on ``batch``: word dropout, the (autocast) forward pass, backward, gradient
    clipping, Adam and the schedule. Returns the loss, still on the device. ``model`` may be a
    ``DistributedDataParallel`` wrapper, whose module's ``parameters`` are then clipped."""
    batch = batch.to(device)
    if config.word_dropout > 0:
        batch = word_dropout(batch, config.word_dropout)
    with autocast(device, config.precision):
        loss = model(batch, return_attentions=False).loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(parameters if parameters is not None else model.parameters(), config.clip)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss


class Epochs(Protocol):
    """Where a run's batches come from: ``steps`` per epoch, the batches of one epoch from a step
    on (a resumed run starts mid-epoch), and validation."""

    steps: int

    def batches(self, epoch: int, start: int) -> Iterator[Batch]: ...

    def validate(self, model: torch.nn.Module) -> tuple[float, float]: ...


@dataclass
class Progress:
    """Where a run is and what it has found: a resume state saves and restores it whole."""

    epoch: int = 1
    step: int = 0
    documents: int = 0  # training documents seen, over every process
    validations: int = 0
    best_accuracy: float = -1.0
    best_loss: float = math.inf
    best_epoch: int = 0
    best_after_documents: int = 0
    stale: int = 0  # validations since the best one
    history: list = field(default_factory=list)
    train_seconds: float = 0.0

    def observe(self, accuracy: float, loss: float) -> tuple[bool, bool]:
        """The best-epoch rule: (best so far, improved). The best has the highest validation
        accuracy, ties going to the lower loss (a validation split of a few hundred documents
        ties often); patience counts validations since the best, by the same rule. Counted from a
        higher accuracy alone, a run whose accuracy tied with falling loss stopped with its last
        epoch the best ("epoch 4 of 4 was best … ended after 4 of 5 epochs", no reason given)."""
        improved = accuracy > self.best_accuracy
        best = improved or (accuracy == self.best_accuracy and loss < self.best_loss)
        if best:
            self.best_accuracy, self.best_loss = accuracy, loss
            self.best_epoch, self.best_after_documents = self.epoch - (self.step == 0), self.documents
        self.stale = 0 if best else self.stale + 1
        return best, improved


@dataclass
class Outcome:
    best_state: dict | None  # the best validation weights
    stopped: bool  # ``stop`` ended it inside an epoch
    ended_mid_epoch: bool  # patience ran out at a validation inside an epoch

    def epochs_run(self, progress: Progress) -> int:
        return progress.epoch - (0 if self.ended_mid_epoch else 1)


def run(model: torch.nn.Module, trained: torch.nn.Module, epochs: Epochs, optimizer, scheduler, config: TrainConfig,
        device, progress: Progress, *, validate_every: int | None = None, processes: int = 1,
        best_state: dict | None = None, on_event: Callable[[TrainEvent], None] | None = None,
        stop: threading.Event | None = None, measure: Callable[[torch.nn.Module], dict] | None = None,
        on_step: Callable[[Progress, torch.Tensor, float], None] | None = None,
        on_validation: Callable[[Progress, dict | None, dict], None] | None = None) -> Outcome:
    """Train ``trained`` (``model``, or its DistributedDataParallel wrapper) from ``progress`` on.

    Validation runs every ``validate_every`` training documents, else at the end of each epoch;
    each appends a history row (``measure(model)`` adds to it), keeps the best weights and calls
    ``on_validation(progress, best_state, row)`` (logging, resume states). Patience counts
    validations. ``stop`` ends the run after the current step, inside an epoch (the caller keeps
    or saves what it has); set at the end of an epoch, it ends the run after that epoch's
    validation. ``on_step(progress, loss, documents/s)`` runs after every step on every process (a
    collective may go there). ``processes`` of a distributed run each take their share of a batch.
    """
    state = {"best": best_state, "loss_sum": 0.0, "loss_documents": 0}

    def validate() -> bool:
        accuracy, loss = epochs.validate(model)
        progress.validations += 1
        epoch = progress.epoch - (progress.step == 0)  # at an epoch's end the counter has moved on
        row = {"epoch": epoch, "documents": progress.documents,
               "train_loss": state["loss_sum"] / max(state["loss_documents"], 1), "val_accuracy": accuracy,
               "val_loss": loss, "train_seconds": progress.train_seconds}  # seconds: HCAN Figure 3
        state["loss_sum"] = state["loss_documents"] = 0
        if measure is not None:
            row.update(measure(model))
        progress.history.append(row)
        if progress.observe(accuracy, loss)[0]:
            state["best"] = copy.deepcopy(model.state_dict())
        if on_validation is not None:
            on_validation(progress, state["best"], row)
        if on_event:
            on_event(TrainEvent("epoch", epoch, loss=row["train_loss"], val_accuracy=accuracy, extra=dict(row)))
        return progress.stale >= config.patience

    with TrainingThreads() as threads:  # this run's share of the cores, kept between steps
        while progress.epoch <= config.epochs:
            trained.train()
            start, first = time.perf_counter(), progress.documents
            for batch in epochs.batches(progress.epoch, progress.step):
                threads.refresh()  # make room for a run or a page computation that started since
                began = time.perf_counter()
                value = optimisation_step(trained, batch, optimizer, scheduler, config, device,
                                          model.parameters()).item()  # one sync a step
                progress.train_seconds += time.perf_counter() - began
                before = progress.documents
                progress.documents += len(batch) * processes
                progress.step += 1
                state["loss_sum"] += value * len(batch)
                state["loss_documents"] += len(batch)
                rate = (progress.documents - first) / max(time.perf_counter() - start, 1e-9)
                if on_step is not None:
                    on_step(progress, torch.tensor(value), rate)
                if on_event:
                    on_event(TrainEvent("batch", progress.epoch, progress.step, epochs.steps, value, docs_per_s=rate))
                if validate_every and progress.documents // validate_every > before // validate_every and validate():
                    return Outcome(state["best"], False, True)
                if stop is not None and stop.is_set() and progress.step < epochs.steps:
                    return Outcome(state["best"], True, False)
            progress.epoch += 1  # before validating, so a resume state saved there starts the next epoch
            progress.step = 0
            if (not validate_every and validate()) or (stop is not None and stop.is_set()):
                return Outcome(state["best"], False, False)
        if validate_every and not progress.history:
            validate()  # a run shorter than one validation interval is still validated once
        return Outcome(state["best"], False, False)


def record(progress: Progress, outcome: Outcome | None, model: torch.nn.Module, config: TrainConfig | dict,
           device, started: float, **fields) -> dict:
    """The metrics written beside a checkpoint, the same for every way of training: the best
    validation figures and when they came, the history, speed, hardware, size and settings;
    ``fields`` adds the data set, the test accuracy and what a source knows."""
    return {
        "validation_accuracy": progress.best_accuracy, "validation_loss": progress.best_loss,
        "best_epoch": progress.best_epoch, "best_after_documents": progress.best_after_documents,
        "validations_since_best": progress.stale, "epochs_run": outcome.epochs_run(progress) if outcome else 1,
        "history": progress.history,
        "train_ms_per_document": 1000 * progress.train_seconds / max(progress.documents, 1),
        "train_seconds": progress.train_seconds,
        "total_training_seconds": time.perf_counter() - started,
        "hardware": hardware(), "device": torch.device(device).type,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "train_config": config if isinstance(config, dict) else asdict(config), **fields,
    }

"""Training on a large corpus cache, on one process or many (``torchrun``), and resuming.

``python -m hierattn train --corpus PATH ...`` lands here. Under ``torchrun --nproc_per_node=N``
each process is one rank of a ``DistributedDataParallel`` model (NCCL on GPUs, Gloo on the
CPU): a ``DistributedSampler`` gives each rank its own shard of every epoch's shuffled order,
DDP averages the gradients, and only rank 0 writes logs, resume states and the checkpoint.

``--batch-size`` is the global batch; each of N ranks takes batch / N documents a step. The
sampler's order does not depend on N, and rank r's k-th local batch holds positions
``r, r + N, ...`` of the k-th global slice, so step k of any N sees the same documents as step k
of one process with the whole batch, and the averaged gradient is the same (up to float
rounding; dropout masks differ, being drawn per rank). That is what the 2-process test checks.

Validation runs every ``validate_every`` training documents (HCAN §4.3 validates Yelp and Amazon
within epochs), else once per epoch; patience counts validations. The best validation weights
are kept, tested and saved. A resume state (weights, best weights, Adam's moments, scheduler,
random state, position in the epoch) is written atomically beside the checkpoint
(``.NAME.resume.safetensors``, one safetensors file with its JSON in the metadata) at every
validation and when interrupted, and removed once the checkpoint is written. A single process
resumes bit for bit; several ranks draw fresh per-rank random streams on resuming, since only rank
0's was saved. The data order does not depend on the number of processes, so a run may resume
with another number of processes and the same global batch (tested: one process stopped, two
resumed).
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.files import fsync
from hierattn.data.split import stratified_split
from hierattn.models import REGISTRY, build_model, sized_for_text
from hierattn.training.corpus_cache import CachedCorpus
from hierattn.training.loop import Progress, TrainConfig, TrainEvent, optimiser, record, run

VALIDATION_SHARE = 0.1  # of a training file, when the corpus has no validation file
EVAL_BATCH = 64


@dataclass
class World:
    """This process's place in the job: ``rank`` of ``size``, and its device."""

    rank: int = 0
    size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_world(device: str | None = None) -> World:
    """Join the process group ``torchrun`` describes in the environment (WORLD_SIZE, RANK,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT); a plain run is a world of one."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and device != "cpu"
    if device and device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but PyTorch sees no GPU")
    where = torch.device(f"cuda:{local}" if use_cuda and size > 1 else device or ("cuda" if use_cuda else "cpu"))
    if where.type == "cuda":
        torch.cuda.set_device(where)
    if size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if where.type == "cuda" else "gloo")
    return World(rank, size, where)


@dataclass
class CorpusSplit:
    train: np.ndarray  # document indices into the cache
    validation: np.ndarray
    test: np.ndarray


def split_corpus(cache: CachedCorpus, seed: int) -> CorpusSplit:
    """Train / validation / test. A corpus with train and test files keeps its test file and
    holds out a seeded 10% of the training file for validation; one file is split 80/10/10,
    stratified (HCAN §4.3)."""
    if "train" in cache.parts:
        train = np.asarray(cache.part("train"))
        order = np.random.default_rng(seed).permutation(len(train))
        held = max(1, round(VALIDATION_SHARE * len(train)))
        test = np.asarray(cache.part("test")) if "test" in cache.parts else np.zeros(0, np.int64)
        return CorpusSplit(np.sort(train[order[held:]]), np.sort(train[order[:held]]), test)
    everything = np.asarray(cache.part("all"))
    parts = stratified_split(np.asarray(cache.labels[everything]).tolist(), seed)
    return CorpusSplit(*(everything[np.asarray(parts[p], np.int64)] for p in ("train", "validation", "test")))


def _resume_path(out: Path) -> Path:
    return out.parent / f".{out.name}.resume.safetensors"


def _save_resume(path: Path, model, best_state, optimizer, scheduler, state: dict) -> None:
    """One file, written to a temporary name, fsynced and renamed: a crash leaves the old or the new."""
    tensors = {f"model.{k}": v.detach().float().cpu().contiguous() if v.is_floating_point() else v.cpu().contiguous()
               for k, v in model.state_dict().items()}
    if best_state is not None:
        tensors.update({f"best.{k}": v.cpu().contiguous() for k, v in best_state.items()})
    optim = optimizer.state_dict()
    for index, values in optim["state"].items():
        for key, value in values.items():
            tensors[f"optim.{index}.{key}"] = torch.as_tensor(value).cpu().contiguous()
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    state = {**state, "param_groups": optim["param_groups"],
             "scheduler": scheduler.state_dict() if scheduler is not None else None}
    path.parent.mkdir(parents=True, exist_ok=True)  # the checkpoint's folder may not exist before its first save
    temporary = path.with_name(path.name + f".tmp-{os.getpid()}")
    save_file(tensors, str(temporary), metadata={"state": json.dumps(state)})
    fsync(temporary)
    os.replace(temporary, path)


def _load_resume(path: Path, model, optimizer, scheduler, device) -> tuple[dict, dict | None]:
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        state = json.loads(f.metadata()["state"])
    tensors = load_file(str(path))
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    best = {k[5:]: v.to(device) for k, v in tensors.items() if k.startswith("best.")} or None
    optim_state: dict = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, index, name = key.split(".", 2)
            optim_state.setdefault(int(index), {})[name] = value.to(device) if name != "step" else value
    optimizer.load_state_dict({"state": optim_state, "param_groups": state.pop("param_groups")})
    if scheduler is not None and state.get("scheduler"):
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(tensors["rng.cpu"])
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    return state, best


@torch.no_grad()
def evaluate_shard(model, cache: CachedCorpus, documents: np.ndarray, lookup, world: World) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) over ``documents``, each rank reading its own share, summed
    across ranks so every rank gets the same numbers (and the same stopping decisions)."""
    model.eval()
    mine = documents[world.rank::world.size]
    totals = torch.zeros(3, dtype=torch.float64, device=world.device)
    for first in range(0, len(mine), EVAL_BATCH):
        batch = cache.batch(mine[first: first + EVAL_BATCH], lookup).to(world.device)
        out = model(batch, return_attentions=False)
        totals[0] += (out.logits.argmax(-1) == batch.labels).sum()
        totals[1] += out.loss.double() * len(batch)
        totals[2] += len(batch)
    if world.size > 1:
        dist.all_reduce(totals)
    model.train()
    return float(totals[0] / totals[2].clamp(min=1)), float(totals[1] / totals[2].clamp(min=1))


class CorpusEpochs:
    """Each rank's batches of an epoch: a ``DistributedSampler`` shards the epoch's shuffled order
    (the order does not depend on the number of processes), each rank taking ``batch / processes``
    documents a step; validation reads each rank's share and sums across ranks."""

    def __init__(self, cache: CachedCorpus, split: CorpusSplit, lookup, world: World, config: TrainConfig,
                 shard_log: list | None = None):
        self.cache, self.split, self.lookup, self.world = cache, split, lookup, world
        self.local = config.batch_size // world.size
        self.steps = math.ceil(math.ceil(len(split.train) / world.size) / self.local)
        self.sampler = torch.utils.data.DistributedSampler(range(len(split.train)), num_replicas=world.size,
                                                           rank=world.rank, shuffle=True, seed=config.seed)
        self.shard_log = shard_log

    def batches(self, epoch: int, start: int) -> Iterator:
        self.sampler.set_epoch(epoch)
        positions = np.fromiter(iter(self.sampler), np.int64)
        for step in range(start, self.steps):
            documents = self.split.train[positions[step * self.local: (step + 1) * self.local]]
            if self.shard_log is not None:
                self.shard_log.extend(documents.tolist())
            yield self.cache.batch(documents, self.lookup)

    def validate(self, model) -> tuple[float, float]:
        return evaluate_shard(model, self.cache, self.split.validation, self.lookup, self.world)


def train_corpus(cache: CachedCorpus, model_type: str, model_config: dict, config: TrainConfig, out: str | Path,
                 validate_every: int | None = None, resume: bool = False, world: World | None = None,
                 on_event: Callable[[TrainEvent], None] | None = None, stop=None, log=print,
                 shard_log: str | Path | None = None) -> dict:
    """Train on ``cache``; returns the metrics written with the checkpoint (``{}`` when stopped
    before the end: the resume state is then on disk). ``shard_log``: a folder where each rank
    writes the document indices it trained on, to audit the sharding."""
    world = world or World()
    out = Path(out)
    if REGISTRY[model_type].fitted:
        raise ValueError(f"{model_type} is fitted in one pass over documents in memory; train it with --file")
    if config.embeddings != "random":
        raise ValueError("Word2Vec initialisation reads the training documents in memory; use --file for it, "
                         "or random embeddings with --corpus")
    if config.batch_size % world.size:
        raise ValueError(f"the global batch ({config.batch_size}) must divide evenly among {world.size} processes")
    torch.manual_seed(config.seed)
    split = split_corpus(cache, config.seed)
    counts = cache.counts_of(split.train)
    vocab, lookup = cache.vocabulary_from_counts(counts, config.min_freq, config.max_vocab)
    text = cache.text_config
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": len(cache.label_names),
                                     **sized_for_text(model_type, model_config, text.max_sentences, text.max_words)}
                        ).to(world.device)
    torch.manual_seed(config.seed + 7919 * world.rank)  # dropout masks differ across ranks
    trained = model
    if world.size > 1:
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[world.device.index] if world.device.type == "cuda" else None)
    seen_log: list[int] = []
    epochs = CorpusEpochs(cache, split, lookup, world, config, seen_log if shard_log is not None else None)
    optimizer, scheduler = optimiser(model, config, epochs.steps)
    resume_path = _resume_path(out)
    progress, best_state = Progress(), None
    if resume and resume_path.is_file():
        saved, best_state = _load_resume(resume_path, model, optimizer, scheduler, world.device)
        if saved["batch_size"] != config.batch_size or saved["vocab_size"] != len(vocab):
            raise ValueError(f"{resume_path.name} was written by a run with another batch size or vocabulary; "
                             "resume with the same settings, or delete it to start afresh")
        progress = Progress(**{k: saved[k] for k in asdict(progress) if k in saved})
        if world.size > 1:  # rank 0's saved random state would give every rank the same dropout masks
            torch.manual_seed(config.seed + 7919 * world.rank + 104729 * progress.documents)
        log(f"resuming from epoch {progress.epoch}, step {progress.step} "
            f"({progress.documents:,} training documents seen)")
    elif resume:
        log(f"no resume state at {resume_path}; starting from the beginning")
    started = time.perf_counter()

    def save_state(state: Progress, best: dict | None) -> None:
        if world.main:
            _save_resume(resume_path, model, best, optimizer, scheduler,
                         {**asdict(state), "batch_size": config.batch_size, "vocab_size": len(vocab),
                          "model_type": model_type, "model_config": model_config, "train_config": asdict(config)})

    def validated(state: Progress, best: dict | None, row: dict) -> None:
        if world.main:
            log(f"validation {state.validations} after {state.documents:,} documents: "
                f"accuracy {row['val_accuracy']:.4f}, loss {row['val_loss']:.4f}")
        save_state(state, best)

    def every_50_steps(state: Progress, loss: torch.Tensor, rate: float) -> None:
        if state.step % 50 == 0 or state.step == epochs.steps:  # every rank: a collective
            shown = loss.to(world.device)
            if world.size > 1:
                dist.all_reduce(shown)
                shown /= world.size
            log(f"epoch {state.epoch} step {state.step}/{epochs.steps}: loss {shown.item():.4f}, "
                f"{rate:,.0f} documents/s")

    try:
        outcome = run(model, trained, epochs, optimizer, scheduler, config, world.device, progress,
                      validate_every=validate_every, processes=world.size, best_state=best_state, on_event=on_event,
                      stop=stop, on_step=every_50_steps, on_validation=validated)
    except KeyboardInterrupt:
        save_state(progress, best_state)
        raise
    finally:
        if shard_log is not None:
            Path(shard_log).mkdir(parents=True, exist_ok=True)
            (Path(shard_log) / f"rank-{world.rank}.json").write_text(json.dumps(seen_log))
    if outcome.stopped:
        save_state(progress, outcome.best_state)
        return {}
    if outcome.best_state is not None:
        model.load_state_dict(outcome.best_state)
    test_accuracy, _ = evaluate_shard(model, cache, split.test, lookup, world) if len(split.test) else (None, None)
    metrics = record(progress, outcome, model, {**asdict(config), "validate_every": validate_every}, world.device,
                     started, dataset=cache.meta["name"], corpus=cache.meta["corpus"], model_type=model_type,
                     test_accuracy=test_accuracy, processes=world.size,
                     split_sizes={"train": len(split.train), "validation": len(split.validation),
                                  "test": len(split.test)})
    if world.main:
        save_checkpoint(out, model, model_type, vocab, cache.label_names, cache.text_config, metrics,
                        dataset=cache.meta["name"])
        resume_path.unlink(missing_ok=True)
        log(f"saved {out}: test accuracy {test_accuracy:.4f}" if test_accuracy is not None else f"saved {out}")
    if world.size > 1:
        dist.barrier()  # no rank leaves before the checkpoint is on disk
    return metrics

"""Run the registry: train one seed of one row, test it, record it; resume where a run stopped.

Each run trains through ``training.in_memory.train`` on the fixed split, keeps its checkpoint
under ``runs/experiments/`` (ignored by git: the models behind the recorded numbers, for analyses
that need them), re-measures the test split from that checkpoint (what the app and the CLI
measure) and writes the seed's result. Several runs go to worker processes of one thread each,
so that two runs on a 2-core machine do not spin against each other.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import lru_cache
from pathlib import Path

from hierattn.checkpoint.format import PLAYBACK
from hierattn.experiments.results import (
    RESULTS,
    SeedResult,
    encode,
    read_result,
    result_path,
    write_result,
    write_test_labels,
)
from hierattn.experiments.spec import ROOT, Experiment
from hierattn.training.loop import hardware
from hierattn.training.playback import WATCHED

RUNS = ROOT / "runs" / "experiments"
# --budget quick: one epoch on an evenly spaced sample of the training split (the split is in data
# set order, which may be sorted by label); the same code path as a full run, for CI and for
# trying a spec.
QUICK_EPOCHS, QUICK_TRAIN_DOCUMENTS = 1, 300
# Groups whose runs also record what their attention looks like once trained (``probe``): the sweep of
# where the pooling query starts (``<data set>.<model>-start.toml``) and its training-length axis
# (``<data set>.epochs.toml``). A quick budget probes a few documents.
PROBED_SUFFIX = "-start"
PROBED_GROUPS = ("epochs",)
QUICK_PROBE_DOCUMENTS = 12


def playback_path(results: Path, experiment: str, seed: int) -> Path:
    """Where a probed run's playback is kept: beside its result, ``playback-seed-N.json``."""
    return result_path(results, experiment, seed).with_name(f"playback-seed-{seed}.json")


@lru_cache(maxsize=2)
def _prepared(dataset: str, text):
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import SEED, prepare

    return prepare(load_builtin(dataset), text, SEED)


def run_seed(experiment: Experiment, seed: int, results: Path = RESULTS, runs: Path = RUNS,
             budget: str = "full") -> SeedResult:
    """Train, test and record one seed of ``experiment``; returns what was recorded."""
    from hierattn.analysis.evaluation import evaluate_split
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.training.in_memory import train

    data = _prepared(experiment.dataset, experiment.text)
    recipe = dataclasses.replace(experiment.recipe, seed=seed)
    if budget == "quick":
        recipe = dataclasses.replace(recipe, epochs=QUICK_EPOCHS)
        train_part = data.split["train"]
        sample = train_part[:: max(1, len(train_part) // QUICK_TRAIN_DOCUMENTS)][:QUICK_TRAIN_DOCUMENTS]
        data = dataclasses.replace(data, split={**data.split, "train": sample})
    elif budget != "full":
        raise ValueError(f"budget must be 'full' or 'quick', got {budget!r}")
    out = runs / experiment.name / f"seed-{seed}"
    probed = experiment.group.endswith(PROBED_SUFFIX) or experiment.group in PROBED_GROUPS
    at_start: dict = {}

    def remember_start(model):
        from hierattn.experiments.probe import query_norms

        at_start.update(query_norms(model))

    metrics = train(experiment.model, experiment.config, data, experiment.text, recipe, out, device="cpu",
                    at_start=remember_start if probed else None, watch=WATCHED if probed else 0)
    if probed and (out / PLAYBACK).exists():  # attention forming as it trained, for the Tour
        target = playback_path(results, experiment.name, seed)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((out / PLAYBACK).read_bytes())
    classifier = load_classifier(out, device="cpu")
    tested = evaluate_split(classifier, data.dataset, "test")
    attention = None
    if probed:
        from hierattn.experiments.probe import probe

        texts = [data.dataset.texts[d] for d in tested.documents]
        if budget == "quick":
            from hierattn.analysis.battery_split import evenly_spaced

            texts = evenly_spaced(texts, QUICK_PROBE_DOCUMENTS)
        attention = probe(classifier, experiment.dataset, texts, at_start)
    names = data.dataset.label_names
    predicted = [names.index(classifier.labels[p]) for p in tested.predicted]
    write_test_labels(results, experiment.dataset, tested.documents,
                      [data.dataset.labels[d] for d in tested.documents])
    curve = [[round(row.get("train_seconds", 0.0), 2), row["val_accuracy"]] for row in metrics.get("history", [])]
    result = SeedResult(
        experiment=experiment.name, seed=seed, digest=experiment.digest(),
        validation_accuracy=metrics["validation_accuracy"], test_accuracy=tested.accuracy,
        predictions=encode(predicted), train_seconds=round(metrics["train_seconds"], 2),
        total_seconds=round(metrics["total_training_seconds"], 2),
        train_ms_per_document=round(metrics["train_ms_per_document"], 3), epochs_run=metrics["epochs_run"],
        best_epoch=metrics["best_epoch"], num_parameters=metrics["num_parameters"], hardware=hardware(),
        curve=curve, budget=budget, code=code_version(), attention=attention)
    write_result(results, result)
    return result


def code_version(root: Path = ROOT) -> str:
    """The commit of the code a run used, with "+changes" when tracked files differed from it; ""
    outside a git checkout (a result stays valid without it: its spec's digest is what counts)."""
    import subprocess

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                 capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit[:12] + ("+changes" if changed else "")


def pending(experiments: list[Experiment], seeds: int | None, results: Path, force: bool) -> list[tuple]:
    """(experiment, seed) still to run, first seeds of every row first, so that a registry
    stopped early has every row at least once."""
    tasks = []
    for position in range(max((len(e.seeds) for e in experiments), default=0)):
        for experiment in experiments:
            chosen = experiment.seeds[:seeds] if seeds else experiment.seeds
            if position >= len(chosen):
                continue
            seed = chosen[position]
            done = read_result(results, experiment.name, seed)
            if force or done is None or done.digest != experiment.digest():
                tasks.append((experiment, seed))
    return tasks


def _one_thread() -> None:
    import os

    import torch

    os.environ["HIERATTN_THREADS"] = "1"  # the training loop's thread budget keeps it (hierattn.threads)
    torch.set_num_threads(1)


def _run(experiment: Experiment, seed: int, results: Path, runs: Path, budget: str) -> tuple[str, int, float, float]:
    started = time.perf_counter()
    result = run_seed(experiment, seed, results, runs, budget)
    return experiment.name, seed, result.test_accuracy, time.perf_counter() - started


def reproduce(experiments: list[Experiment], seeds: int | None = None, force: bool = False, jobs: int = 1,
              results: Path = RESULTS, runs: Path = RUNS, budget: str = "full",
              report: Callable[[str], None] = print) -> int:
    """Run every pending (row, seed), ``jobs`` at a time, each in a one-thread process; returns
    how many ran. Each result is written when its run ends."""
    tasks = pending(experiments, seeds, results, force)
    report(f"{len(tasks)} runs to do ({jobs} at a time, one thread each)")
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_one_thread) as pool:
        futures = [pool.submit(_run, e, s, results, runs, budget) for e, s in tasks]
        for done, future in enumerate(as_completed(futures), 1):
            name, seed, accuracy, seconds = future.result()
            report(f"[{done}/{len(tasks)}] {name} seed {seed}: test accuracy {100 * accuracy:.2f}% "
                   f"({seconds / 60:.1f} min)")
    return len(tasks)

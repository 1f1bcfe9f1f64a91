"""What runs recorded: ``results/<data set>/<row>/seed-<n>.json``, one file per seed, written
atomically when the seed's run ends, so a registry run stopped at any point resumes where it
stopped. Beside them, ``results/<data set>/test-labels.json``: the true labels of the test split,
against which every recorded prediction string is read.

A result holds the seed's validation and test accuracy, its predictions on every test document
(one character per document, the class id in the data set's label order, documents in data-set
order), the validation curve (training seconds, validation accuracy) for HCAN's Figure 3, the
training time, the parameters, the hardware and the commit of the code that ran it.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hierattn.data.files import fsync
from hierattn.experiments.spec import ROOT

RESULTS = ROOT / "results"
DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"  # up to 36 classes, one character each


@dataclass
class SeedResult:
    experiment: str
    seed: int
    digest: str  # the spec's digest when it ran
    validation_accuracy: float
    test_accuracy: float
    predictions: str  # one character per test document
    train_seconds: float  # optimisation steps only
    total_seconds: float  # the whole run, with validation
    train_ms_per_document: float
    epochs_run: int
    best_epoch: int
    num_parameters: int
    hardware: str
    curve: list = field(default_factory=list)  # [[training seconds, validation accuracy], ...]
    budget: str = "full"
    code: str = ""  # the commit that ran it ("+changes" when tracked files differed); "" if unknown or older
    attention: dict | None = None  # rows whose question is the attention: ``probe.probe``'s figures

    def correct(self, labels: str) -> list[bool]:
        return [p == t for p, t in zip(self.predictions, labels)]


def encode(labels: list[int]) -> str:
    return "".join(DIGITS[i] for i in labels)


def _write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, indent=1)
            f.write("\n")
        fsync(Path(tmp))  # as checkpoints are: a machine crash cannot leave a renamed, empty result
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def result_path(root: Path, experiment: str, seed: int) -> Path:
    return root / experiment / f"seed-{seed}.json"


def write_result(root: Path, result: SeedResult) -> Path:
    path = result_path(root, result.experiment, result.seed)
    _write_json(path, result.__dict__)
    return path


def read_result(root: Path, experiment: str, seed: int) -> SeedResult | None:
    path = result_path(root, experiment, seed)
    if not path.exists():
        return None
    return SeedResult(**json.loads(path.read_text()))


def recorded(root: Path, experiment, seeds=None) -> list[SeedResult]:
    """The results of ``experiment``'s seeds that were recorded under its current spec."""
    found = [read_result(root, experiment.name, s) for s in (seeds or experiment.seeds)]
    return [r for r in found if r is not None and r.digest == experiment.digest()]


def write_test_labels(root: Path, dataset: str, documents: list[int], labels: list[int]) -> None:
    """The test split's labels, with a digest of its document indices: a split that changed would
    make every recorded prediction string meaningless, and ``check_test_labels`` says so."""
    path = root / dataset / "test-labels.json"
    value = {"documents": len(documents), "indices_sha256": _digest(documents), "labels": encode(labels)}
    if path.exists() and json.loads(path.read_text()) != value:
        raise ValueError(f"{path} was recorded for another test split; results there cannot be compared")
    _write_json(path, value)


def read_test_labels(root: Path, dataset: str) -> str | None:
    path = root / dataset / "test-labels.json"
    return json.loads(path.read_text())["labels"] if path.exists() else None


def write_timing(name: str, value: dict, root: Path = RESULTS) -> Path:
    """A timing measurement (the bench's batch-1 protocol) as recorded data: results/timing/NAME.json."""
    path = root / "timing" / f"{name}.json"
    _write_json(path, value)
    return path


def read_timing(name: str, root: Path = RESULTS) -> dict | None:
    path = root / "timing" / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def fingerprint(root: Path = RESULTS) -> str:
    """Changes whenever a result is recorded, replaced or removed (names, sizes and times of the
    files): the key under which the app caches its tables."""
    files = sorted(root.rglob("*.json")) if root.exists() else []
    blob = "\n".join(f"{f.relative_to(root)} {f.stat().st_size} {f.stat().st_mtime_ns}" for f in files)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _digest(documents: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, documents)).encode()).hexdigest()[:16]

"""Experiment specs: ``experiments/<data set>.toml`` holds one table per results row, over the
file's ``[defaults]``; ``experiments/orderings.toml`` the papers' orderings, by row name.

A row's spec is everything its runs depend on: the model type and config, the text caps, the
training recipe (``TrainConfig`` without the seed) and the seeds. The split is always the
stratified 80/10/10 split with seed 1234 (HCAN section 4.3); a seed changes only the
initialisation, the batch order and dropout.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hierattn.data.text import TextConfig
from hierattn.models import REGISTRY, display_name
from hierattn.training.loop import TrainConfig

ROOT = Path(__file__).resolve().parent.parent.parent
EXPERIMENTS = ROOT / "experiments"
# Recipe fields that change what a model learns beyond how long it trains: an ordering between
# rows that differ in one of these says so.
RECIPE_FIELDS = ("lr", "batch_size", "weight_decay", "lr_schedule", "word_dropout", "min_freq", "max_vocab",
                 "embeddings", "precision")


class SpecError(ValueError):
    """A spec file that cannot be read as experiments; the message names the file and the row."""


@dataclass(frozen=True)
class Experiment:
    name: str  # "<data set>/<row>", e.g. "tweets/hcan"
    dataset: str
    model: str
    config: dict
    text: TextConfig
    recipe: TrainConfig  # its seed is unused: each run sets its own
    seeds: tuple[int, ...]
    label: str  # the name the papers use

    @property
    def row(self) -> str:
        return self.name.split("/", 1)[1]

    def digest(self) -> str:
        """A short hash of everything a run depends on but the seed: a recorded result whose digest
        differs was produced by another spec and is not this row's."""
        recipe = {k: v for k, v in dataclasses.asdict(self.recipe).items() if k != "seed"}
        blob = json.dumps([self.dataset, self.model, self.config, dataclasses.asdict(self.text), recipe],
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def differences(self, other: Experiment) -> list[str]:
        """How the two recipes differ beyond the epoch budget: recipe fields, text caps, dropout."""
        out = [f"{k} {getattr(self.recipe, k)} vs {getattr(other.recipe, k)}" for k in RECIPE_FIELDS
               if getattr(self.recipe, k) != getattr(other.recipe, k)]
        if self.text != other.text:
            out.append(f"text {self.text.max_sentences}x{self.text.max_words} vs "
                       f"{other.text.max_sentences}x{other.text.max_words}")
        if self.config.get("dropout") != other.config.get("dropout"):
            out.append(f"dropout {self.config.get('dropout', 'default')} vs {other.config.get('dropout', 'default')}")
        return out


@dataclass(frozen=True)
class Ordering:
    claim: str  # "HCAN >= HAN"
    source: str  # "HCAN Table 2"
    better: str  # the row the paper puts ahead
    worse: str


def _merge(defaults: dict, row: dict) -> dict:
    merged = {**defaults, **row}
    for table in ("text", "recipe", "config"):
        merged[table] = {**defaults.get(table, {}), **row.get(table, {})}
    return merged


def load_experiments(root: Path = EXPERIMENTS) -> dict[str, Experiment]:
    experiments = {}
    for path in sorted(root.glob("*.toml")):
        if path.name == "orderings.toml":
            continue
        dataset = path.stem
        with path.open("rb") as f:
            tables = tomllib.load(f)
        defaults = tables.pop("defaults", {})
        for row, spec in tables.items():
            where = f"{path.name} [{row}]"
            spec = _merge(defaults, spec)
            unknown = set(spec) - {"model", "config", "text", "recipe", "seeds", "label"}
            if unknown:
                raise SpecError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
            if spec.get("model") not in REGISTRY:
                raise SpecError(f"{where}: model {spec.get('model')!r} is not a registered model type")
            try:
                text, recipe = TextConfig(**spec["text"]), TrainConfig(**spec["recipe"])
            except TypeError as e:
                raise SpecError(f"{where}: {e}") from None
            seeds = tuple(spec.get("seeds", (1,)))
            label = spec.get("label") or display_name(spec["model"], spec["config"])
            experiments[f"{dataset}/{row}"] = Experiment(f"{dataset}/{row}", dataset, spec["model"], spec["config"],
                                                         text, recipe, seeds, label)
    return experiments


def load_orderings(root: Path = EXPERIMENTS) -> list[Ordering]:
    with (root / "orderings.toml").open("rb") as f:
        return [Ordering(**entry) for entry in tomllib.load(f)["ordering"]]

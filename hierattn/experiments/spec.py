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
from hierattn.home import home
from hierattn.models import REGISTRY, display_name
from hierattn.training.loop import TrainConfig

ROOT = home()  # the checkout, or an installed package's share/hierattn (hierattn/home.py)
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
    group: str = "results"  # "results": docs/RESULTS.md's results tables; else a figure's sweep
    series: str = ""  # in a sweep: the row the values were swept for (its line in the figure)
    value: object = None  # in a sweep: this row's value of the swept field

    @property
    def row(self) -> str:
        return self.name.split("/", 1)[1]

    def digest(self) -> str:
        """A short hash of everything a run depends on but the seed: a recorded result whose digest
        differs was produced by another spec and is not this row's."""
        # Recipe fields added later stay out at their default, so that old results keep their digests.
        recipe = {k: v for k, v in dataclasses.asdict(self.recipe).items()
                  if k != "seed" and not (k in ADDED_LATER and v == ADDED_LATER[k])}
        # Text settings left unset (None) stay out, so a setting added later keeps old digests.
        text = {k: v for k, v in dataclasses.asdict(self.text).items() if v is not None}
        reads = REGISTRY[self.model].reads if self.model in REGISTRY else "words"
        # A model's input is part of its runs: a transformer that read our words before it read the text
        # recorded results that are not this row's. Word models keep their old digests.
        blob = json.dumps([self.dataset, self.model, self.config, text, recipe] + ([reads] if reads != "words" else []),
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


# TrainConfig fields added after results were recorded, with the default that means "as before".
ADDED_LATER = {"start_from": "", "train_documents": 0}


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


def _swept(row: str, spec: dict, sweep: dict | None, where: str) -> list[tuple[str, dict, object]]:
    """(row name, spec, swept value) for each value of the file's ``[sweep]``, or the row alone."""
    if not sweep:
        return [(row, spec, None)]
    table, _, key = sweep["field"].partition(".")
    if table not in ("config", "text", "recipe") or not key:
        raise SpecError(f"{where}: a sweep's field is config.KEY, text.KEY or recipe.KEY, got {sweep['field']!r}")
    out = []
    for value in sweep["values"]:
        shown = "-".join(map(str, value)) if isinstance(value, list) else str(value)
        out.append((f"{row}-{sweep.get('suffix', '')}{shown}", {**spec, table: {**spec[table], key: value}}, value))
    return out


def load_experiments(root: Path = EXPERIMENTS) -> dict[str, Experiment]:
    """Every row of every spec file. ``<data set>.toml`` holds the results rows (group "results");
    ``<data set>.<group>.toml`` another group of the same data set, e.g. a sweep for a figure,
    whose ``[sweep]`` table (``field``, ``values``, ``suffix``) makes one row per value."""
    experiments = {}
    for path in sorted(root.glob("*.toml")):
        if path.name in ("orderings.toml", "figures.toml"):
            continue
        dataset, _, group = path.stem.partition(".")
        with path.open("rb") as f:
            tables = tomllib.load(f)
        defaults, sweep = tables.pop("defaults", {}), tables.pop("sweep", None)
        for row, spec in tables.items():
            where = f"{path.name} [{row}]"
            spec = _merge(defaults, spec)
            unknown = set(spec) - {"model", "config", "text", "recipe", "seeds", "label"}
            if unknown:
                raise SpecError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
            if spec.get("model") not in REGISTRY:
                raise SpecError(f"{where}: model {spec.get('model')!r} is not a registered model type")
            for name, one, value in _swept(row, spec, sweep, where):
                try:
                    text, recipe = TextConfig(**one["text"]), TrainConfig(**one["recipe"])
                except TypeError as e:
                    raise SpecError(f"{where}: {e}") from None
                seeds = tuple(one.get("seeds", (1,)))
                label = one.get("label") or display_name(one["model"], one["config"])
                key = f"{dataset}/{name}"
                if key in experiments:
                    raise SpecError(f"{where}: the row {key} is defined twice")
                experiments[key] = Experiment(key, dataset, one["model"], one["config"], text, recipe, seeds, label,
                                              group or "results", row, value)
    return experiments


def load_orderings(root: Path = EXPERIMENTS) -> list[Ordering]:
    with (root / "orderings.toml").open("rb") as f:
        return [Ordering(**entry) for entry in tomllib.load(f)["ordering"]]


def load_figure_rows(root: Path = EXPERIMENTS) -> dict:
    """``experiments/figures.toml``: which rows a figure shows (``curves``: ``rows`` and ``drawn``)."""
    with (root / "figures.toml").open("rb") as f:
        return tomllib.load(f)

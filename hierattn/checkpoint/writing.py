"""Writing a checkpoint folder, atomically: a temporary sibling directory, then a rename, or on
Linux an atomic exchange with the old directory. A half-written checkpoint is never seen, and a
process killed at any instant of a save leaves either the old checkpoint or the new one in place.
See docs/RELIABILITY.md. Its card (``README.md``) is written from its other files.
"""
from __future__ import annotations

import errno
import json
import math
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from hierattn import budget
from hierattn.card import model_card
from hierattn.checkpoint.format import FORMAT_VERSION, HELDOUT, PLAYBACK, CheckpointError
from hierattn.checkpoint.reading import described, read_json
from hierattn.data.files import exchange, fsync, is_replaceable, remove_stale_temporaries
from hierattn.data.text import TextConfig, Vocab
from hierattn.models import REGISTRY, display_name, model_config_dict, plugins


def save_checkpoint(directory: str | Path, model: torch.nn.Module, model_type: str, vocab: Vocab,
                    labels: list[str], text_config: TextConfig, metrics: dict, dataset: str | None = None,
                    dtype: torch.dtype = torch.float16, heldout: dict | None = None,
                    playback: dict | None = None) -> Path:
    """Write a checkpoint directory atomically. Weights are stored as ``dtype`` (fp16 keeps it small).
    ``heldout``: {"validation" | "test": [[text, label], ...]}, held-out documents of a data set of
    your own, kept as ``heldout.json`` so the pages can sample, evaluate and describe it.
    ``playback``: the run's attention recorded epoch by epoch (``training.playback``), kept as
    ``playback.json``."""
    directory = Path(directory)
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointError(f"cannot create {directory.parent}: {exc.strerror or exc}") from None
    refuse_to_replace(directory)
    remove_stale_temporaries(directory)
    config = {
        "format_version": FORMAT_VERSION,
        "model_type": model_type,
        "model_config": model_config_dict(model),
        "labels": list(labels),
        "text": asdict(text_config),
        "dataset": dataset,
    }
    if model_type in REGISTRY and REGISTRY[model_type].plugin is not None:
        config["plugin"] = plugins.checkpoint_record(REGISTRY[model_type])  # named, never imported, on load
    form = REGISTRY[model_type].folder if model_type in REGISTRY else None
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        if form is not None:  # another library's folder (a Hugging Face classifier's)
            form.write(tmp, model, vocab, labels, asdict(text_config), dataset, dtype)
        else:
            tensors = {k: v.detach().to("cpu", dtype if v.is_floating_point() else v.dtype).contiguous()
                       for k, v in model.state_dict().items()}
            save_file(tensors, tmp / "model.safetensors")
            (tmp / "config.json").write_text(json.dumps(config, indent=2))
            vocab.save(tmp / "vocab.json")
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2))
        (tmp / "README.md").write_text(card(tmp, directory.name))
        if heldout:
            (tmp / HELDOUT).write_text(json.dumps(heldout, ensure_ascii=False))
        if playback:
            (tmp / PLAYBACK).write_text(json.dumps(playback, ensure_ascii=False))
        # mkdtemp and safetensors create owner-only modes; a checkpoint is shareable
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
            fsync(f)
        os.chmod(tmp, 0o755)
        if directory.exists():
            if exchange(tmp, directory):  # one atomic step: the old checkpoint is now at tmp
                shutil.rmtree(tmp, ignore_errors=True)
            else:  # no atomic exchange here: move the old one aside, then the new one in
                old = directory.with_name(f".{directory.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                os.replace(directory, old)
                os.replace(tmp, directory)
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, directory)
    except (OSError, SafetensorError) as exc:  # safetensors reports its I/O errors as its own type
        shutil.rmtree(tmp, ignore_errors=True)
        disk_full = getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc)
        reason = "the disk is full" if disk_full else (getattr(exc, "strerror", None) or str(exc))
        left = "the previous checkpoint is unchanged" if directory.exists() else "nothing was written"
        raise CheckpointError(f"could not write {directory.name}: {reason}; {left}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def card(directory: Path, name: str | None = None) -> str:
    """The checkpoint card (``hierattn.card``) of a checkpoint folder, from its config.json and
    metrics.json, the weights' file size and, where metrics.json lacks it, the parameter count in
    the safetensors header (the weights and the vocabulary are not read)."""
    directory = Path(directory)
    config = read_json(directory / "config.json")
    metrics = read_json(directory / "metrics.json") if (directory / "metrics.json").exists() else {}
    if not isinstance(config, dict) or not isinstance(metrics, dict):
        raise CheckpointError(f"{directory.name}: config.json or metrics.json is not a JSON object")
    metrics = budget.typed_metrics(metrics)
    config = described(directory, config)
    weights = directory / "model.safetensors"
    if "num_parameters" not in metrics and weights.is_file():
        with safe_open(weights, "pt") as f:
            metrics = {**metrics, "num_parameters": sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())}
    model_type, model_config = config.get("model_type"), config.get("model_config") or {}
    spec = REGISTRY.get(model_type)
    return model_card(name or directory.name, config, metrics, display_name(model_type, model_config),
                      spec.label if spec else f"model type {model_type}", spec.maps if spec else "",
                      plugins.valid_record(config.get("plugin")), weights.stat().st_size if weights.is_file() else None)


def write_card(directory: str | Path) -> Path:
    """(Re)write a checkpoint's README.md from its other files, atomically; returns its path."""
    directory = Path(directory)
    if not (directory / "config.json").is_file() or directory.is_symlink():
        raise CheckpointError(f"{directory} is not a checkpoint directory")
    text = card(directory)
    tmp = directory / ".README.md.tmp"
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    fsync(tmp)
    os.replace(tmp, directory / "README.md")
    return directory / "README.md"


def refuse_to_replace(directory: Path) -> None:
    """CheckpointError unless ``directory`` is new or one of our checkpoints."""
    directory = Path(directory)
    if directory.is_symlink() or (directory.exists() and not is_replaceable(directory)):
        raise CheckpointError(f"{directory} exists and is not a checkpoint directory; refusing to replace it")

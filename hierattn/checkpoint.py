"""Checkpoints: ``config.json`` + ``model.safetensors`` + ``vocab.json`` + ``metrics.json``.

Written atomically (a temporary sibling directory, then a rename) and read with safetensors
only: a checkpoint can never execute code, and a half-written one is never seen.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .models import build_model, model_config_dict
from .text import TextConfig, Vocab

FORMAT_VERSION = 1
FILES = ("config.json", "model.safetensors", "vocab.json", "metrics.json")


class CheckpointError(ValueError):
    """A checkpoint is missing, corrupted or does not match its config; the message says which."""


def best_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class Classifier:
    """A loaded model in eval mode with everything needed to read raw text."""

    name: str
    model: torch.nn.Module
    model_type: str
    vocab: Vocab
    labels: list[str]
    text_config: TextConfig
    metrics: dict
    dataset: str | None
    device: torch.device

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def save_checkpoint(directory: str | Path, model: torch.nn.Module, model_type: str, vocab: Vocab,
                    labels: list[str], text_config: TextConfig, metrics: dict, dataset: str | None = None,
                    dtype: torch.dtype = torch.float16) -> Path:
    """Write a checkpoint directory atomically. Weights are stored as ``dtype`` (fp16 keeps it small)."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "format_version": FORMAT_VERSION,
        "model_type": model_type,
        "model_config": model_config_dict(model),
        "labels": list(labels),
        "text": asdict(text_config),
        "dataset": dataset,
    }
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        tensors = {k: v.detach().to("cpu", dtype if v.is_floating_point() else v.dtype).contiguous()
                   for k, v in model.state_dict().items()}
        save_file(tensors, tmp / "model.safetensors")
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        vocab.save(tmp / "vocab.json")
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2))
        for f in FILES:  # mkdtemp and safetensors create owner-only modes; a checkpoint is shareable
            os.chmod(tmp / f, 0o644)
        os.chmod(tmp, 0o755)
        if directory.exists():  # swap: the old one stays whole until the new one is in place
            old = directory.with_name(f".{directory.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(directory, old)
            os.replace(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent.name}: {path.name} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path.parent.name}: {path.name} is not valid JSON ({exc})") from None


def load_classifier(directory: str | Path, device: str | torch.device | None = None) -> Classifier:
    """Load a checkpoint directory into a ready classifier (eval mode, on ``device`` or the best one)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory} is not a checkpoint directory")
    config = _read_json(directory / "config.json")
    if not isinstance(config, dict) or config.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{directory.name}: unsupported checkpoint format "
                              f"{config.get('format_version') if isinstance(config, dict) else '?'}")
    try:
        vocab = Vocab.load(directory / "vocab.json")
    except FileNotFoundError:
        raise CheckpointError(f"{directory.name}: vocab.json is missing") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{directory.name}: vocab.json is invalid ({exc})") from None
    metrics = _read_json(directory / "metrics.json") if (directory / "metrics.json").exists() else {}
    try:
        model_config = dict(config["model_config"])
        labels = [str(x) for x in config["labels"]]
        text_config = TextConfig(**config["text"])
        model = build_model(config["model_type"], model_config)
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{directory.name}: config.json does not describe a model ({exc})") from None
    if model_config.get("vocab_size") != len(vocab):
        raise CheckpointError(f"{directory.name}: vocab.json has {len(vocab)} words, the model expects "
                              f"{model_config.get('vocab_size')}")
    if model_config.get("num_classes") != len(labels):
        raise CheckpointError(f"{directory.name}: {len(labels)} labels for a {model_config.get('num_classes')}-class model")
    try:
        tensors = load_file(directory / "model.safetensors")
    except FileNotFoundError:
        raise CheckpointError(f"{directory.name}: model.safetensors is missing") from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{directory.name}: model.safetensors is corrupted ({exc})") from None
    expected = model.state_dict()
    if set(tensors) != set(expected):
        missing, extra = set(expected) - set(tensors), set(tensors) - set(expected)
        raise CheckpointError(f"{directory.name}: weights do not match the config "
                              f"(missing {sorted(missing)[:3]}, unexpected {sorted(extra)[:3]})")
    for k, v in tensors.items():
        if v.shape != expected[k].shape:
            raise CheckpointError(f"{directory.name}: weight {k} has shape {tuple(v.shape)}, "
                                  f"the config needs {tuple(expected[k].shape)}")
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in tensors.items()})
    device = torch.device(device) if device is not None else best_device()
    model.to(device).eval()
    return Classifier(directory.name, model, config["model_type"], vocab, labels, text_config, metrics,
                      config.get("dataset"), device)


def list_checkpoints(root: str | Path) -> list[Path]:
    """Checkpoint directories directly under ``root`` (hidden temporaries excluded), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (p / "config.json").exists())

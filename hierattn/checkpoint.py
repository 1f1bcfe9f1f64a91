"""Checkpoints: ``config.json`` + ``model.safetensors`` + ``vocab.json`` + ``metrics.json``.

Written atomically (a temporary sibling directory, then a rename, or on Linux an atomic exchange
with the old directory) and read with safetensors only: a checkpoint can never execute code, a
half-written one is never seen, and a process killed at any instant of a save leaves either the
old checkpoint or the new one in place. Other files in a checkpoint directory (a ``.pt`` pickle,
say) are never opened. See docs/RELIABILITY.md.
"""
from __future__ import annotations

import errno
import json
import math
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from hierattn import budget, limits
from hierattn.card import model_card
from hierattn.data.files import NotAFile, exchange, fsync, is_replaceable, read_bytes, remove_stale_temporaries
from hierattn.data.text import TextConfig, Vocab
from hierattn.home import inside
from hierattn.limits import LimitExceeded
from hierattn.models import (
    BUILT_IN,
    REGISTRY,
    build_model,
    display_name,
    legacy_config,
    model_config_dict,
    plugins,
    text_problem,
)
from hierattn.models.footprint import parameter_count
from hierattn.models.intervention import observe_embedding
from hierattn.models.spec import ModelSpec

FORMAT_VERSION = 1
FILES = ("config.json", "model.safetensors", "vocab.json", "metrics.json", "README.md")  # README.md: the card
HELDOUT = "heldout.json"  # optional: the held-out documents of a model trained on your own data
HELDOUT_MB = 4.0  # what a checkpoint keeps of them (validation and test together)


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

    def __post_init__(self):  # before it is shared: gradient × input reads its lookups per call
        observe_embedding(self.model)

    @property
    def spec(self):
        """The model type's ``ModelSpec`` (its paper name, knobs, what its maps mean)."""
        return REGISTRY[self.model_type]

    @property
    def display_name(self) -> str:
        """The papers' name for this model and config ("HCAN (flat)", "MahNN-rv")."""
        return display_name(self.model_type, model_config_dict(self.model))

    @property
    def plugin(self) -> str | None:
        """Where a plug-in's model type comes from ("plug-in file x.py"); None for a built-in one."""
        return plugins.describe(self.spec) if self.spec.plugin is not None else None

    @property
    def memory_bytes(self) -> int:
        """What holding it costs, roughly: its parameters and buffers, and its vocabulary as a Python
        list and dict (about 150 bytes a word)."""
        tensors = list(self.model.parameters()) + list(self.model.buffers())
        return sum(t.numel() * t.element_size() for t in tensors) + 150 * len(self.vocab)

    @property
    def window(self) -> int | None:  # the most subword tokens a model of its own tokenizer reads at once
        return getattr(self.vocab, "window", None)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def save_checkpoint(directory: str | Path, model: torch.nn.Module, model_type: str, vocab: Vocab,
                    labels: list[str], text_config: TextConfig, metrics: dict, dataset: str | None = None,
                    dtype: torch.dtype = torch.float16, heldout: dict | None = None) -> Path:
    """Write a checkpoint directory atomically. Weights are stored as ``dtype`` (fp16 keeps it small).
    ``heldout``: {"validation" | "test": [[text, label], ...]}, held-out documents of a data set of
    your own, kept as ``heldout.json`` so the pages can sample, evaluate and describe it."""
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
    config = _read_json(directory / "config.json")
    metrics = _read_json(directory / "metrics.json") if (directory / "metrics.json").exists() else {}
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


def _read_json(path: Path):
    """A checkpoint's JSON file, read within ``limits.JSON_MB`` and only if it is a regular file
    (a FIFO or a device named metrics.json is refused, never waited on)."""
    try:
        return json.loads(read_bytes(path, limits.JSON_MB).decode("utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent.name}: {path.name} is missing") from None
    except (NotAFile, LimitExceeded, OSError) as exc:
        raise CheckpointError(f"{path.parent.name}: {exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path.parent.name}: {path.name} is not valid JSON ({exc})") from None
    except RecursionError:
        raise CheckpointError(f"{path.parent.name}: {path.name} is nested too deeply to read") from None


def check_budget(directory: Path, config: dict) -> None:
    """A checkpoint within the server's limits (``hierattn.budget``), judged from its files' sizes and
    its config.json alone, before its vocabulary or weights are read or its model built at size."""
    model_config = config.get("model_config") if isinstance(config.get("model_config"), dict) else {}
    problem = (budget.files_problem(directory) or budget.text_problem(config.get("text", {}))
               or budget.config_problem(config.get("model_type"), model_config))
    if problem:
        raise CheckpointError(f"{directory.name}: {problem}")


def described(directory: Path, config: dict | None = None) -> dict:
    """A checkpoint's config.json in our terms: ours as it is, another library's as its spec says."""
    config = _read_json(Path(directory) / "config.json") if config is None else config
    spec = folder_spec(config)
    if spec is None:
        return config
    try:
        return spec.folder.describe(Path(directory), config, _read_json)
    except CheckpointError:
        raise
    except ValueError as exc:  # a config.json beyond the limits, said before the library read it
        raise CheckpointError(f"{Path(directory).name}: {exc}"[:500]) from None


def folder_spec(config) -> ModelSpec | None:
    """The model type that recognises ``config`` as its library's config.json (a Hugging Face
    classifier's: ``ModelSpec.folder``), or None for a config.json of ours."""
    if not isinstance(config, dict):
        return None
    return next((s for s in REGISTRY.values() if s.folder is not None and s.folder.recognises(config)), None)


def _load_folder(directory: Path, config: dict, spec: ModelSpec, device) -> Classifier:
    """A folder another library wrote, within the limits of ours; nothing in it is imported or run."""
    form = spec.folder
    ours = form.ours(directory, _read_json)
    text = ours.get("text") if isinstance(ours, dict) and isinstance(ours.get("text"), dict) else {}
    problem = form.problem(directory, config) or budget.files_problem(directory) or budget.text_problem(text)
    if problem:
        raise CheckpointError(f"{directory.name}: {problem}")
    count = parameter_count(lambda: form.build(config)[0])
    if limits.PARAMETERS.exceeded(count):
        raise CheckpointError(f"{directory.name}: {limits.PARAMETERS.message(count)}")
    model, labels = form.build(config, ours if isinstance(ours, dict) else {})
    prefix, optional = form.layout(directory, model)
    _load_weights(directory, model, prefix, optional)
    model.untrained_head = form.untrained_head(model, bool(optional))
    metrics = budget.typed_metrics(_read_json(directory / "metrics.json")) if (directory / "metrics.json").exists() \
        else {}
    device = torch.device(device) if device is not None else best_device()
    model.to(device).eval()
    return Classifier(directory.name, model, spec.name, form.vocab(directory, model), labels, TextConfig(**text),
                      metrics, ours.get("dataset") if isinstance(ours, dict) else None, device)


def load_classifier(directory: str | Path, device: str | torch.device | None = None) -> Classifier:
    """Load a checkpoint directory into a ready classifier (eval mode, on ``device`` or the best one).
    Every failure is a CheckpointError naming the checkpoint: one malformed checkpoint is its own
    message, never an exception on a page that lists others."""
    try:
        return _load(Path(directory), device)
    except CheckpointError:
        raise
    except (Exception, RecursionError) as exc:  # noqa: BLE001  (what a hostile config.json may raise)
        raise CheckpointError(f"{Path(directory).name}: cannot be loaded ({type(exc).__name__}: {exc})"[:500]) from None


def _load(directory: Path, device: str | torch.device | None) -> Classifier:
    if not directory.is_dir():
        raise CheckpointError(f"{directory} is not a checkpoint directory")
    _refuse_links_out(directory)
    config = _read_json(directory / "config.json")
    if (spec := folder_spec(config)) is not None:
        return _load_folder(directory, config, spec, device)
    if not isinstance(config, dict) or config.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{directory.name}: unsupported checkpoint format "
                              f"{config.get('format_version') if isinstance(config, dict) else '?'}")
    check_budget(directory, config)
    if isinstance(config.get("model_type"), str) and config["model_type"] not in REGISTRY:
        raise CheckpointError(f"{directory.name}: "
                              + plugins.unregistered_message(config["model_type"], config.get("plugin"), BUILT_IN))
    try:
        vocab = Vocab.load(directory / "vocab.json")
    except FileNotFoundError:
        raise CheckpointError(f"{directory.name}: vocab.json is missing") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{directory.name}: vocab.json is invalid ({exc})") from None
    metrics = budget.typed_metrics(_read_json(directory / "metrics.json")) if (directory / "metrics.json").exists() \
        else {}
    try:
        model_config = {**legacy_config(config["model_type"]), **config["model_config"]}
        labels = [str(x) for x in config["labels"]]
        text_config = TextConfig(**{"letters": "ascii", **config["text"]})  # older checkpoints: ASCII letters
        model = build_model(config["model_type"], model_config)
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{directory.name}: config.json does not describe a model ({exc})") from None
    problem = (text_problem(config["model_type"], model_config, text_config.max_sentences, text_config.max_words)
               or budget.explanation_problem(model, text_config))
    if problem:
        raise CheckpointError(f"{directory.name}: {problem}")
    if model_config.get("vocab_size") != len(vocab):
        raise CheckpointError(f"{directory.name}: vocab.json has {len(vocab)} words, the model expects "
                              f"{model_config.get('vocab_size')}")
    if model_config.get("num_classes") != len(labels):
        raise CheckpointError(f"{directory.name}: {len(labels)} labels for a {model_config.get('num_classes')}-class "
                              "model")
    _load_weights(directory, model)
    device = torch.device(device) if device is not None else best_device()
    model.to(device).eval()
    return Classifier(directory.name, model, config["model_type"], vocab, labels, text_config, metrics,
                      config.get("dataset"), device)


def _load_weights(directory: Path, model: torch.nn.Module, prefix: str = "", optional: frozenset = frozenset()) -> None:
    """model.safetensors into ``model``: every tensor its state dict expects (under ``prefix``), of the
    right shape and finite, judged from the header before a tensor is read; or a CheckpointError.
    ``optional``: keys the file may lack, kept as built (a base encoder's head); with them, keys the
    model has no place for (a base encoder's pooler) are let be."""
    path = directory / "model.safetensors"
    if problem := budget.weights_header_problem(path):
        raise CheckpointError(problem)
    expected = model.state_dict()
    try:
        with safe_open(path, "pt") as f:
            names = {prefix + k: k for k in f.keys() if not optional or prefix + k in expected}
            shapes = {k: tuple(f.get_slice(stored).get_shape()) for k, stored in names.items() if k in expected}
            missing, extra = set(expected) - set(names) - optional, set(names) - set(expected)
            if missing or extra:
                raise CheckpointError(f"{directory.name}: weights do not match the config "
                                      f"(missing {sorted(missing)[:3]}, unexpected {sorted(extra)[:3]})")
            for k, shape in shapes.items():
                if shape != tuple(expected[k].shape):
                    raise CheckpointError(f"{directory.name}: weight {names[k]} has shape {shape}, the config needs "
                                          f"{tuple(expected[k].shape)}")
            tensors = {k: f.get_tensor(stored) for k, stored in names.items()}
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"{directory.name}: model.safetensors is missing") from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{directory.name}: model.safetensors is corrupted ({exc})") from None
    for k, v in tensors.items():
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):  # else every prediction reads "nan%"
            raise CheckpointError(f"{directory.name}: weight {k.removeprefix(prefix)} holds NaN or infinite values; "
                                  "the model cannot predict (a run that diverged)")
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in tensors.items()}, strict=not optional)


def _refuse_links_out(directory: Path) -> None:
    """A checkpoint is read from where it is listed: a symbolic link (the directory, or one of its
    files) that leads out of its folder could make the app read any file on the machine."""
    if directory.is_symlink() and not inside(directory, directory.parent):
        raise CheckpointError(f"{directory.name} is a link to {directory.resolve()}, outside "
                              f"{directory.parent}; it is not loaded")
    for name in dict.fromkeys(FILES + tuple(f for s in REGISTRY.values() if s.folder for f in s.folder.files)):
        f = directory / name
        if f.is_symlink() and not inside(f, directory):
            raise CheckpointError(f"{directory.name}: {name} is a link to a file outside the checkpoint; it is not "
                                  "loaded")


def read_heldout(directory: str | Path) -> dict[str, list[tuple[str, str]]]:
    """{split: [(text, label), ...]} kept with a checkpoint (within ``limits.JSON_MB``, inside its folder)."""
    path = Path(directory) / HELDOUT
    try:
        raw = _read_json(path) if path.is_file() and inside(path, path.parent) else {}
    except CheckpointError:
        return {}
    lists = {k: raw.get(k) for k in ("validation", "test")} if isinstance(raw, dict) else {}
    return {k: [(str(r[0]), str(r[1])) for r in rows if isinstance(r, list) and len(r) == 2]
            for k, rows in lists.items() if isinstance(rows, list)}

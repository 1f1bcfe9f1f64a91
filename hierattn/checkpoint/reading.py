"""Reading a checkpoint folder into a ready ``Classifier``: ours, or another library's (a Hugging
Face classifier's), every file judged within the limits (``hierattn.limits``, ``hierattn.budget``)
before it is trusted: the JSON files by size and type, the model by its config before it is built at
size, the weights by their header before a tensor is read, and no link that leads out of the folder.
Every failure is a ``CheckpointError`` naming the checkpoint.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from hierattn import budget, limits
from hierattn.checkpoint.classifier import Classifier, best_device
from hierattn.checkpoint.format import FILES, FORMAT_VERSION, HELDOUT, CheckpointError
from hierattn.data.files import NotAFile, read_bytes
from hierattn.data.subwords import window_only
from hierattn.data.text import TextConfig, Vocab
from hierattn.home import inside
from hierattn.limits import LimitExceeded
from hierattn.models import BUILT_IN, REGISTRY, build_model, legacy_config, plugins, text_problem
from hierattn.models.footprint import parameter_count
from hierattn.models.spec import ModelSpec


def read_json(path: Path):
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
    config = read_json(Path(directory) / "config.json") if config is None else config
    spec = folder_spec(config)
    if spec is None:
        return config
    try:
        return spec.folder.describe(Path(directory), config, read_json)
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
    ours = form.ours(directory, read_json)
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
    metrics = budget.typed_metrics(read_json(directory / "metrics.json")) if (directory / "metrics.json").exists() \
        else {}
    device = torch.device(device) if device is not None else best_device()
    model.to(device).eval()
    text_config = TextConfig(**text)
    if getattr(model, "window", None):  # subword pieces: the window is the only cut
        text_config = window_only(text_config, model.window)
    return Classifier(directory.name, model, spec.name, form.vocab(directory, model), labels, text_config,
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
    config = read_json(directory / "config.json")
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
    metrics = budget.typed_metrics(read_json(directory / "metrics.json")) if (directory / "metrics.json").exists() \
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
        # names and shapes from the header first: a file of a million empty tensors, or of the wrong
        # model, is refused before any tensor is read (load_file reads them all: 35 s and 1.8 GB)
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
    """{split: [(text, label), ...]} kept with a checkpoint (within ``limits.JSON_MB``, from inside its
    folder only); {} when it has none, or a malformed one."""
    path = Path(directory) / HELDOUT
    try:
        raw = read_json(path) if path.is_file() and inside(path, path.parent) else {}
    except CheckpointError:
        return {}
    lists = {k: raw.get(k) for k in ("validation", "test")} if isinstance(raw, dict) else {}
    return {k: [(str(r[0]), str(r[1])) for r in rows if isinstance(r, list) and len(r) == 2]
            for k, rows in lists.items() if isinstance(rows, list)}

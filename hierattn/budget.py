"""Whether a model fits the server's limits (``hierattn.limits``), judged before it is built at
size: from a checkpoint's files and config.json when it is opened, from the Train page's or the
command line's settings before a run starts. Opening and training ask the same questions, so a
run never makes a checkpoint that opening would refuse.

The questions, in order of cost: every field of the model's and the text's config dataclasses is
of its type and range (``models.footprint.config_problems``); the words read fit; the parameters,
counted on the meta device, fit; and the attention one explanation holds at the text caps, summed
over every map, head, branch and level (predicted by ``models.footprint.attention_cells``), fits.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from hierattn import limits
from hierattn.data.text import TextConfig
from hierattn.models import REGISTRY, build_model, legacy_config, sized_for_text
from hierattn.models.footprint import attention_cells, config_problems, parameter_count, sizes

BYTES_PER_CELL = 4  # an explanation holds its maps as float32


def within(path: Path, limit: limits.Limit, subject: str) -> str | None:
    """The message when the file at ``path`` is larger than ``limit`` (MB) on disk, else None."""
    try:
        size = path.stat().st_size
    except OSError:
        return None  # the reader says it is missing
    return limit.message(size / 2**20, subject, f"{path.name}'s size") if limit.exceeded(size / 2**20) else None


def files_problem(directory: Path) -> str | None:
    """A checkpoint's vocabulary (vocab.json, or a subword model's tokenizer.json) or weights file
    larger than its limit, judged by size on disk, or its weights' header longer than its own."""
    return (within(directory / "vocab.json", limits.VOCAB_MB, directory.name)
            or within(directory / "tokenizer.json", limits.VOCAB_MB, directory.name)
            or within(directory / "model.safetensors", limits.WEIGHTS_MB, directory.name)
            or weights_header_problem(directory / "model.safetensors"))


def weights_header_problem(path: Path) -> str | None:
    """Why model.safetensors' header (8 bytes of length, then the tensors' names and shapes as JSON)
    is not read: longer than ``limits.WEIGHTS_HEADER_MB`` (a million empty tensors made a 56 MB
    header). None: it is, or the file is missing, which the reader says."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return None
    if len(head) < 8:
        return "model.safetensors is corrupted (shorter than its header)"
    size = int.from_bytes(head, "little")
    if limits.WEIGHTS_HEADER_MB.exceeded(size / 2**20):
        return limits.WEIGHTS_HEADER_MB.message(size / 2**20, path.parent.name)
    return None


def text_problem(text: dict) -> str | None:
    """Why a text config (config.json's ``text``) cannot be read, by TextConfig's own fields: caps
    of at least 1, and the words they let through within ``limits.WORDS_READ``."""
    if not isinstance(text, dict):
        return "its text settings are not a JSON object"
    unknown = set(text) - set(TextConfig.__dataclass_fields__)
    if unknown:
        return f"unknown text settings: {', '.join(sorted(map(str, unknown)))[:200]}"
    problems = config_problems(TextConfig, text)
    if problems:
        return "text settings: " + "; ".join(problems)
    config = TextConfig(**text)
    read = limits.words_read(config.max_sentences, config.max_words, config.max_tokens)
    return limits.WORDS_READ.message(read) if limits.WORDS_READ.exceeded(read) else None


def config_problem(model_type: str, model_config: dict) -> str | None:
    """Why ``model_config`` cannot be built within the limits, judged without building it: its
    fields by its config dataclass, then its parameters counted on the meta device."""
    spec = REGISTRY.get(model_type)
    if spec is None or not isinstance(model_config, dict):
        return None  # the loader's own messages say it
    config = {**legacy_config(model_type), **model_config}
    problems = config_problems(spec.config, config)
    # sizes of a vocabulary (a model's own tokenizer's too) are bounded as vocabularies, not as layers
    bounds = {"vocab_size": limits.VOCABULARY, "subwords": limits.VOCABULARY, "num_classes": limits.CLASSES}
    for name, value in sizes(spec.config, config):
        limit = bounds.get(name, limits.WIDTH)
        if limit.exceeded(value):
            problems.append(limit.message(value, what=None if name in bounds else f"{name} ({limit.what})"))
    if problems:
        return "; ".join(dict.fromkeys(problems))
    try:
        count = parameter_count(lambda: build_model(model_type, config))
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        return f"config.json does not describe a model ({exc})"
    return limits.PARAMETERS.message(count) if limits.PARAMETERS.exceeded(count) else None


def explanation_problem(model: torch.nn.Module, text: TextConfig) -> str | None:
    """Why one explanation of a document at ``text``'s caps would hold more attention than
    ``limits.EXPLANATION_CELLS`` (None: it fits, or the cells cannot be predicted, and the explain
    step measures them)."""
    was_training = model.training
    model.eval()
    try:
        cells = attention_cells(model, text.max_sentences, text.max_words)
    finally:
        model.train(was_training)
    if cells is None or not limits.EXPLANATION_CELLS.exceeded(cells):
        return None
    return (limits.EXPLANATION_CELLS.message(cells) + f": {cells * BYTES_PER_CELL / 2**20:,.0f} MB for a document "
            f"of {text.max_sentences} x {text.max_words} words (fewer heads or blocks, or smaller text caps, "
            "make it smaller)")


def model_problem(model_type: str, model_config: dict, text: TextConfig) -> str | None:
    """All the questions above, for a run about to start (its vocabulary's size as configured, its
    positional tables sized for its text caps as training sizes them)."""
    model_config = sized_for_text(model_type, model_config, text.max_sentences, text.max_words)
    problem = text_problem(asdict(text)) or config_problem(model_type, model_config)
    if problem:
        return problem
    return explanation_problem(build_model(model_type, {**legacy_config(model_type), **model_config}), text)


# metrics.json entries that pages and cards read, by what they must be: anything else in their
# place (a "97%" accuracy, a "corpus" that is not a table of files) is dropped when the checkpoint
# is opened, so one malformed file is never an exception on a page that lists other checkpoints.
_NUMBERS = ("test_accuracy", "validation_accuracy", "num_parameters", "epochs_run", "best_epoch",
            "total_training_seconds", "pretrained_words")
_TEXTS = ("dataset", "hardware", "model_type")
_TABLES = ("train_config", "split_sizes", "model_config")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) < 1e18


def _corpus_entry(value) -> bool:
    files = value.get("files") if isinstance(value, dict) else None
    return (isinstance(files, dict) and isinstance(value.get("format"), str) and all(
        isinstance(part, str) and isinstance(entry, list) and entry and isinstance(entry[0], str)
        for part, entry in files.items()))


def _baselines_entry(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(entry, dict) and all(_number(v) for k, v in entry.items() if k.endswith("_accuracy"))
        and isinstance(entry.get("label", ""), str) for entry in value.values())


def typed_metrics(metrics) -> dict:
    """``metrics`` (a checkpoint's metrics.json) without the entries that are not of their type."""
    if not isinstance(metrics, dict):
        return {}
    kept = {}
    for key, value in metrics.items():
        if key in _NUMBERS and not _number(value) or key in _TEXTS and not isinstance(value, str):
            continue
        if key in _TABLES and not isinstance(value, dict):
            continue
        if key == "corpus" and not _corpus_entry(value) or key == "baselines" and not _baselines_entry(value):
            continue
        kept[key] = value
    return kept

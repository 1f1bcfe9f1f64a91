"""What the rest of hierattn knows about a model type, declared once, in the model's own file.

Each model file ends with ``SPEC = ModelSpec(...)``; the registry (``hierattn.models``) collects
them. The app, the command line and the analyses ask the spec (never a model's name) for its
class and config, its name in the papers, the Train page's knobs, and whether it is trained by
gradient descent or fitted in one pass.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import nn


@dataclass(frozen=True)
class Knob:
    """One setting the Train page offers for a model: ``name`` is the config field."""

    name: str
    label: str
    help: str
    kind: str  # "int", "float", "bool" or "choice"
    options: tuple = ()
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model type.

    ``name``: the registry key, written to config.json as ``model_type``.
    ``model`` / ``config``: the ``nn.Module`` and the config dataclass it is built from.
    ``label``: how the Train page lists the architecture.
    ``display_name(config dict)``: the name the papers use for one configuration ("HA-LSTM-8").
    ``knobs``: its variant settings for the Train page (size settings come from
    ``hierattn.models.knobs.SIZES`` where the config has the field).
    ``fit``: for a model fitted in one pass rather than trained by gradient descent (TF-IDF), the
    function ``fit(documents, labels, num_classes, config dict, seed) -> (model, vocab)``.
    ``maps``: what its attention maps mean, in a sentence (the documentation and the app say it).
    ``listed``: its place in the Train page's list (the papers' hierarchical models come first);
    models with equal places are listed by name.
    ``plugin``: None for a model of this package; for a plug-in's, where it came from (set by
    ``hierattn.models.plugins`` when it loads the plug-in, and recorded in its checkpoints).
    ``tested_words``: (words, sentence) when its paper tested it only on texts of about that many
    words or fewer, a sentence saying so; the app says it when a model reads far longer texts.
    ``folder``: for a model type whose checkpoints are another library's folders (a Hugging Face
    classifier's), how to recognise, check, build, read and write one (``huggingface_folder.HuggingFaceFolder``);
    None for a checkpoint of ours (config.json with a ``format_version``, vocab.json).
    ``vocabulary``: for a model that reads its own tokenizer's pieces, how training builds it:
    ``vocabulary(training documents, model config dict, TrainConfig) -> (vocab, config it implies)``;
    None: a word vocabulary (``Vocab.build``, ``min_freq`` and ``max_vocab`` of the TrainConfig).
    ``relabel``: for a model that can be trained further from a checkpoint (fine-tuning),
    ``relabel(model, labels) -> model``: the same model with a classification head for ``labels``
    (kept where they are the checkpoint's, new otherwise). None: it always starts from scratch.
    ``reads``: what its input is, when it is not our words (``"words"``): a model that reads the raw text
    through its own tokenizer says ``"text"``. Part of a registry run's digest: results recorded when
    it read something else are not its results.
    """

    name: str
    model: type[nn.Module]
    config: type
    label: str
    display_name: Callable[[dict], str]
    knobs: tuple[Knob, ...] = ()
    fit: Callable | None = None
    maps: str = ""
    listed: int = 100
    plugin: dict | None = field(default=None, compare=False)
    tested_words: tuple[int, str] | None = None
    folder: object | None = field(default=None, compare=False)
    vocabulary: Callable | None = None
    relabel: Callable | None = None
    reads: str = "words"

    @property
    def fitted(self) -> bool:
        return self.fit is not None

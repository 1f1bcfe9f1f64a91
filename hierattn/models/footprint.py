"""What a model config would cost before anything of its size is built: its fields checked by a
rule read off its config dataclass, its parameters counted on the ``meta`` device (no memory), and
the attention cells one explanation holds at its text caps, across every map, head, branch and
level, predicted from small forward passes.

Why a prediction: the maps' sizes are products of the document's axes (sentences S, words per
sentence W, or the flat sequence S x W) and constants (heads, channels, windows), each axis at
most squared, so the cells are a polynomial in S and W of degree at most 2 in each. Nine forward
passes of a small document (S, W in three sizes each, past any window) fix its nine
coefficients; a tenth at a larger size checks them. A model whose cells are not such a
polynomial (a plug-in's) is reported so, and the caller measures its worst case directly only if
that is small. Forward passes on ``meta`` tensors are not possible here: the models take data-dependent
steps (``nonzero``, ``item``) that meta tensors cannot run.
"""
from __future__ import annotations

import dataclasses
import math
import typing

import torch
from torch.overrides import TorchFunctionMode

from hierattn.contract import Batch

# Probe sizes: large enough that a look-back window or a kernel no wider than MIN_PROBE words
# fits inside a sentence, small enough that ten passes take milliseconds.
MIN_PROBE_SENTENCES, MIN_PROBE_WORDS = 3, 12
# Caps of at most this many words are measured outright (one cheap pass).
DIRECT_WORDS = 256


def config_problems(config_cls: type, config: dict, list_length: int = 16) -> list[str]:
    """Why ``config``'s values do not fit ``config_cls``'s fields, by each field's declared type
    and default (no list kept by hand): an int is a whole number from 1 (from 0 when its default
    is 0); an optional int is empty or such a number; a tuple of ints holds 1 to ``list_length``
    such numbers; a float is finite and not negative; a bool is true or false; a str is short
    text. How large a number may be is the caller's question (``sizes``)."""
    hints = typing.get_type_hints(config_cls)
    problems = []
    for f in dataclasses.fields(config_cls):
        if f.name not in config:
            continue
        value, hint = config[f.name], hints[f.name]
        least = 0 if f.default == 0 and f.default is not False else 1
        if hint is bool:
            if not isinstance(value, bool):
                problems.append(f"{f.name} must be true or false, not {value!r:.40}")
        elif hint is int:
            if not _whole(value) or value < least:
                problems.append(f"{f.name} must be a whole number of at least {least}, not {value!r:.40}")
        elif set(typing.get_args(hint)) == {int, type(None)}:  # an optional cap
            if value is not None and (not _whole(value) or value < 1):
                problems.append(f"{f.name} must be empty or a whole number of at least 1, not {value!r:.40}")
        elif hint is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                problems.append(f"{f.name} must be a number of at least 0, not {value!r:.40}")
        elif hint is str:  # a field's metadata may allow longer text (a path: {"max_length": 4096})
            if not isinstance(value, str) or len(value) > f.metadata.get("max_length", 64):
                problems.append(f"{f.name} must be a short text, not {value!r:.40}")
        elif typing.get_origin(hint) is tuple and typing.get_args(hint)[:1] == (int,):
            if (not isinstance(value, (list, tuple)) or not 1 <= len(value) <= list_length
                    or not all(_whole(v) and v >= 1 for v in value)):
                problems.append(f"{f.name} must be a list of 1 to {list_length} whole numbers of at least 1, "
                                f"not {str(value):.40}")
    return problems


def sizes(config_cls: type, config: dict) -> list[tuple[str, int]]:
    """(field, number) for every whole number of ``config`` in an int, optional int or tuple-of-int
    field of ``config_cls``: what a caller bounds from above."""
    hints = typing.get_type_hints(config_cls)
    out = []
    for f in dataclasses.fields(config_cls):
        value = config.get(f.name)
        if _whole(value) and (hints[f.name] is int or int in typing.get_args(hints[f.name])):
            out.append((f.name, value))
        elif isinstance(value, (list, tuple)) and typing.get_origin(hints[f.name]) is tuple:
            out += [(f.name, v) for v in value if _whole(v)]
    return out


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Unfilled(TorchFunctionMode):
    """Tensors on the meta device are made but not filled: an in-place operation on one (the
    initialisers' ``normal_``, ``uniform_``, ``zero_``) returns it as it is, and a random tensor is
    made empty (``DRAWN``). Filling a meta tensor
    runs a reference implementation that imports ``torch._dynamo``, 1.1-1.8 s of CPU for a count
    that needs only shapes (the command line's ``explain`` paid it). In-place operations keep a
    tensor's shape, except the resizing ones, which run. A torch function mode holds in its own
    thread only: a model built at the same time on another thread is initialised as ever."""

    RESIZING = frozenset({"resize_", "resize_as_", "set_"})
    # random tensors of a shape (``torch.randn(d).mul_(std)``, a query vector's start) made empty instead
    DRAWN = {torch.randn: torch.empty, torch.rand: torch.empty, torch.randn_like: torch.empty_like,
             torch.rand_like: torch.empty_like}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.DRAWN:
            kwargs = {k: v for k, v in kwargs.items() if k != "generator"}
            return self.DRAWN[func](*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name.endswith("_") and not name.startswith("_") and name not in self.RESIZING:
            target = args[0] if args else kwargs.get("tensor", kwargs.get("self"))
            if isinstance(target, torch.Tensor) and target.is_meta:
                return target
        return func(*args, **kwargs)


def parameter_count(build: typing.Callable[[], torch.nn.Module]) -> int:
    """The parameters and buffers ``build()`` makes, counted on the meta device (nothing allocated,
    nothing filled: ``_Unfilled``)."""
    with torch.device("meta"), _Unfilled():
        model = build()
    return sum(t.numel() for t in list(model.parameters()) + list(model.buffers()))


def _cells(model: torch.nn.Module, sentences: int, words: int) -> int:
    ids = torch.full((1, sentences, words), 1, dtype=torch.long)  # <unk>: in every vocabulary
    mask = torch.ones(1, sentences, words, dtype=torch.bool)
    with torch.inference_mode():
        output = model(Batch(ids, mask, mask.any(-1), None))
    return sum(a.weights.numel() for a in output.attentions.values())


def _probe_sizes(cap: int, start: int) -> list[int]:
    """Three sizes along an axis to fit a square in it, or the cap alone when it is too small to
    probe past (the cells are then a constant along that axis)."""
    return [cap] if cap < start + CHECK_STEP else [start, start + 1, start + 2]


CHECK_STEP = 5  # the check pass is this much past the first probe along each probed axis


def attention_cells(model: torch.nn.Module, max_sentences: int, max_words: int) -> int | None:
    """The attention cells one explanation of a full document (``max_sentences`` sentences of
    ``max_words`` words) holds, from small forward passes of ``model`` (eval mode, on the CPU; its
    weights do not matter). None when the cells are not a polynomial of degree 2 in S and W (the
    check pass disagrees) or a small pass fails. A model that bounds its own cells (a method
    ``attention_cells(sentences, words)``: a transformer's, which reads up to a window of subword
    tokens, however many words they make) is asked instead."""
    own = getattr(model, "attention_cells", None)
    if callable(own):
        return int(own(max_sentences, max_words))
    try:
        if max_sentences * max_words <= DIRECT_WORDS:
            return _cells(model, max_sentences, max_words)
        sentences = _probe_sizes(max_sentences, MIN_PROBE_SENTENCES)
        words = _probe_sizes(max_words, MIN_PROBE_WORDS)
        powers = [(i, j) for i in range(len(sentences)) for j in range(len(words))]
        points = [(s, w) for s in sentences for w in words]
        # cells(S, W) = sum of c_ij S^i W^j over the powers probed: solve for the c_ij
        design = torch.tensor([[float(s) ** i * float(w) ** j for i, j in powers] for s, w in points],
                              dtype=torch.float64)
        measured = torch.tensor([float(_cells(model, s, w)) for s, w in points], dtype=torch.float64)
        coefficients = torch.linalg.solve(design, measured).tolist()

        def predict(s: int, w: int) -> float:
            return sum(c * float(s) ** i * float(w) ** j for c, (i, j) in zip(coefficients, powers))

        check = (sentences[0] + CHECK_STEP if len(sentences) > 1 else max_sentences,
                 words[0] + CHECK_STEP if len(words) > 1 else max_words)
        if abs(predict(*check) - _cells(model, *check)) > 0.5:
            return None
    except (RuntimeError, ValueError, IndexError, TypeError):
        return None
    return max(0, round(predict(max_sentences, max_words)))

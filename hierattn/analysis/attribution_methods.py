"""Every attribution method beside attention, in one registry.

An ``AttributionMethod`` is a record of one way to score a document's units for a class: its key,
its reader's name, the unit it scores, its function (``(classifier, document, label) ->
Attribution``, None where it does not apply), whether it differentiates the model and whether
captum computes it, and its cost. The erasure curves and the methods a page waits for
(``faithfulness``), the battery's ERASER rankings (``battery``), Explore's attribution shading and
the notebook's view iterate ``ATTRIBUTION_METHODS``, so a method is one entry there.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from hierattn.analysis.attribution import (
    GRADIENT_X_INPUT,
    IG_STEPS,
    INTEGRATED_GRADIENTS,
    Attribution,
    gradient_times_input,
    integrated_gradients,
    leave_one_out,
    occlusion,
)
from hierattn.analysis.eraser import SENTENCE_UNITS, WORD_UNITS
from hierattn.analysis.shapley import EXACT_SENTENCES, SHAP_MAX_PASSES, sentence_shap
from hierattn.checkpoint.classifier import Classifier
from hierattn.data.text import Document

# Leave-one-out costs one forward pass per word: 14 s for a 1,073-word document with bbc-news-hcan
# on a 2-core CPU (7 s with HAN), growing with the square of the length. Interactive views leave it
# out above this length and say so.
LEAVE_ONE_OUT_MAX_WORDS = 1000


@dataclass(frozen=True)
class AttributionMethod:
    """One attribution method and what it needs and costs."""

    name: str  # its key in erasure curves, their agreement, Explore's choice and recorded erasure results
    label: str  # what it computes, its unit said: the battery's rows, where word and sentence methods stand together
    unit: str  # what it scores: ``eraser.WORD_UNITS`` or ``eraser.SENTENCE_UNITS``
    attribute: Callable[[Classifier, Document, int], Attribution | None]
    gradients: bool  # differentiates the model: needs an embedding table (``attribution.supports_gradients``)
    captum: bool  # computed by captum: the battery ranks these beside the attention
    cost: str  # its forward passes, as a page says them
    most_units: int | None = None  # the longest document (in its units) an interactive page waits for; None: any


GRADIENT = AttributionMethod(GRADIENT_X_INPUT, GRADIENT_X_INPUT, WORD_UNITS, gradient_times_input, gradients=True,
                             captum=False, cost="one forward and one backward pass")
INTEGRATED = AttributionMethod(INTEGRATED_GRADIENTS, INTEGRATED_GRADIENTS, WORD_UNITS, integrated_gradients,
                               gradients=True, captum=True, cost=f"{IG_STEPS + 3} forward passes")
LEAVE_ONE_OUT = AttributionMethod("leave-one-out", "occlusion of words", WORD_UNITS, leave_one_out, gradients=False,
                                  captum=True, cost="one forward pass per word", most_units=LEAVE_ONE_OUT_MAX_WORDS)
SENTENCE_OCCLUSION = AttributionMethod("occlusion of sentences", "occlusion of sentences", SENTENCE_UNITS,
                                       partial(occlusion, unit=SENTENCE_UNITS), gradients=False, captum=True,
                                       cost="one forward pass per sentence")
SENTENCE_SHAPLEY = AttributionMethod("KernelSHAP of sentences", "KernelSHAP of sentences", SENTENCE_UNITS,
                                     sentence_shap, gradients=False, captum=True,
                                     cost=f"2^n forward passes up to {EXACT_SENTENCES} sentences, else at most "
                                          f"{SHAP_MAX_PASSES}")
ATTRIBUTION_METHODS: tuple[AttributionMethod, ...] = (GRADIENT, INTEGRATED, LEAVE_ONE_OUT, SENTENCE_OCCLUSION,
                                                      SENTENCE_SHAPLEY)


def methods_of(unit: str) -> tuple[AttributionMethod, ...]:
    """The registered methods that score ``unit`` (words or sentences), in registry order."""
    return tuple(m for m in ATTRIBUTION_METHODS if m.unit == unit)

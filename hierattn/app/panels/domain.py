"""Explore: is the document like the ones the model was trained on? Two signals, each beside the
model's own test documents (``hierattn.analysis.domain``), under the prediction."""
from __future__ import annotations

from pathlib import Path

from hierattn import viz
from hierattn.analysis import domain
from hierattn.analysis.explain import Explanation
from hierattn.checkpoint import Classifier
from hierattn.data.builtin import BUILTIN
from hierattn.data.split import stratified_split


def _test_texts(classifier: Classifier, path: Path) -> tuple[list[str], str]:
    """The model's test documents (a built-in data set's test split, or the ones a checkpoint trained
    on your own file kept), and what to call them; ([], "") when there are none."""
    from hierattn.app import samples

    if classifier.dataset in BUILTIN:
        data = samples.builtin_dataset(classifier.dataset)
        return [data.texts[i] for i in stratified_split(data.labels)["test"]], f"{classifier.dataset} test"
    kept = samples.heldout(path).get("test", [])
    return [text for text, _ in kept], f"{classifier.dataset or 'its own data'} test"


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def domain_signal(where, classifier: Classifier, path: Path, ex: Explanation) -> None:
    """A caption with both figures and their thresholds; a warning in their place when the document is
    flagged. Nothing while the reference is computed (once per checkpoint, in the background)."""
    from hierattn.app.loading import checkpoint_key
    from hierattn.app.tasks import computed

    texts, source = _test_texts(classifier, path)
    if not texts:
        where.caption("No test documents of the model's data set are at hand, so nothing says whether this text "
                      "is like them.")
        return
    with where:
        ref = computed(("domain", *checkpoint_key(path)),
                       lambda progress: domain.reference(classifier, texts, source, progress),
                       f"Reading {source} to judge the text against it:")
    if ref is None:
        return
    found = domain.check(classifier, ex.document, ex.probabilities, ref)
    level = f"{1 - ref.level:.1%}".replace(".0%", "%")
    rare = (f"{_percent(found.rare_share)} of its words are rare for the model (unknown, or in the rarer half of its "
            f"vocabulary), against at most {_percent(found.rare_threshold)} in {level} of {found.rare_null}"
            if found.rare_share is not None and found.rare_threshold == found.rare_threshold else "")
    sure = (f"the prediction's entropy is {found.entropy:.2f} nats, against at most {found.entropy_threshold:.2f} in "
            f"{level} of {found.entropy_null}")
    if found.flagged:
        words = f" ({', '.join(found.examples)})" if found.examples and found.rare_p <= ref.level else ""
        where.warning(viz.md_text(f"This text is unlike the model's own documents: {rare}{words}"
                                  + ("; " if rare else "") + sure + ". A model answers every text; "
                                  "read its prediction and its attention here with doubt."),
                      icon=":material/travel_explore:")
    else:
        where.caption(viz.md_text(f"Like the model's own documents? {rare[0].upper() + rare[1:] + '; ' if rare else ''}"
                                  f"{sure}. On the shipped models the check flags 4-5% of their own test texts and "
                                  "62-75% of the other data set's: passing it is no proof."))

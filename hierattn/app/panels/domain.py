"""Explore: is the document like the ones the model was trained on? Four signals, each beside the
model's own test documents (``hierattn.analysis.domain``), under the prediction."""
from __future__ import annotations

from pathlib import Path

from hierattn import viz
from hierattn.analysis import domain
from hierattn.analysis.explain import Explanation
from hierattn.checkpoint.classifier import Classifier
from hierattn.data.builtin import BUILTIN


def _test_texts(classifier: Classifier, path: Path) -> tuple[list[str], str]:
    """The model's test documents (a built-in data set's test split, or the ones a checkpoint trained
    on your own file kept), and what to call them; ([], "") when there are none."""
    from hierattn.app import samples

    if classifier.dataset in BUILTIN:
        return samples.split_part(classifier.dataset, "test")[0], f"{classifier.dataset} test"  # split once
    kept = samples.heldout(path).get("test", [])
    return [text for text, _ in kept], f"{classifier.dataset or 'its own data'} test"


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def domain_signal(where, classifier: Classifier, path: Path, ex: Explanation) -> None:
    """A caption with both figures and their thresholds; a warning in their place when the document is
    flagged. Nothing while the reference is computed (once per checkpoint, in the background)."""
    from hierattn.app import domain_reference
    from hierattn.app.loading import checkpoint_key
    from hierattn.app.tasks import computed, keep, result

    texts, source = _test_texts(classifier, path)
    if not texts:
        where.caption("No test documents of the model's data set are at hand, so nothing says whether this text "
                      "is like them.")
        return
    key = ("domain", *checkpoint_key(path))
    ref = result(key)
    if ref is None:  # computed once for the server, by whichever worker came first: read, not computed
        kept = domain_reference.reference_file(path, checkpoint_key(path)[1], texts, source)
        ref = domain_reference.read(kept)
        if ref is not None:
            keep(key, ref)
        else:
            with where:
                ref = computed(key, lambda progress: domain_reference.computed_once(classifier, texts, source, kept,
                                                                                    progress),
                               f"Reading {source} to judge the text against it:")
    if ref is None:
        return
    # the same reference for every worker and paste of this checkpoint: judged once per explanation
    found = ex.remembered(f"domain check {ref.source}", lambda: domain.check(classifier, ex.document,
                                                                            ex.probabilities, ref, ex.vector))
    rare = ""
    if found.rare_share is not None and found.rare_reached[1]:
        examples = f" ({', '.join(found.examples)})" if found.examples else ""
        rare = (f"{_percent(found.rare_share)} of its words are rare for the model{examples}, i.e. unknown to it or in "
                f"the rarer half of its vocabulary: as many or more in {_reached(found.rare_reached)} "
                f"{found.rare_null}")
    sure = (f"its prediction's entropy is {found.entropy:.2f} nats: as high or higher in "
            f"{_reached(found.entropy_reached)} {found.entropy_null}")
    near = ""
    if found.distance is not None:
        near = (f" Its distance to its {domain.NEIGHBOURS}th nearest test document (cosine, on the vector the "
                f"model classifies) is {found.distance:.3f}: as far or farther for {_reached(found.distance_reached)} "
                "of them, each from the others.")
    if found.length is not None:
        near += (f" It reads as {found.length:,} words: as long or longer in {_reached(found.length_reached)} "
                 f"{found.entropy_null}.")
    said = (f"{rare}. {sure[0].upper() + sure[1:]}" if rare else sure[0].upper() + sure[1:]) + "." + near
    rule = f"A text is flagged when any share is under {100 * ref.level:.3g}%."
    if found.flagged:
        where.warning(viz.md_text(f"This text is unlike the model's own documents. {said} {rule} A model answers "
                                  "every text: read its prediction and its attention here with doubt."),
                      icon=":material/travel_explore:")
    else:
        where.caption(viz.md_text(f"Like the model's own documents? {said} {rule} On the shipped models the check "
                                  "flags 4-6% of their own test texts, every BBC article read by a tweet model and "
                                  "about 60% of restaurant reviews and of tweets read by a news model: passing it "
                                  "is no proof."))


def _reached(reached: tuple[int, int]) -> str:
    count, total = reached
    return f"{count:,} of {total:,}"

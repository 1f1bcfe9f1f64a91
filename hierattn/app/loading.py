"""Checkpoints for the pages: where they are, loaded once per process and shared read-only,
explained once per document, and what a page shows when one cannot be loaded."""
from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import Explanation, explain
from hierattn.app.process import process_wide
from hierattn.checkpoint.classifier import Classifier
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.home import all_checkpoints, checkpoint_roots
from hierattn.limits import EXPLANATION_MEMORY_MB, MODEL_MEMORY_MB


def _stamp(path: Path) -> float:
    return max((f.stat().st_mtime for f in path.iterdir()), default=0.0)


def available_checkpoints() -> dict[str, Path]:
    return {p.name: p for p in all_checkpoints()}


def plugin_warnings() -> None:
    """One sidebar warning per plug-in that was named or installed but could not be loaded."""
    from hierattn.models import plugin_problems

    for problem in plugin_problems():
        problem = problem[0].upper() + problem[1:]
        st.sidebar.warning(f"{viz.md_text(problem)}. The built-in models and every other checkpoint work as usual.",
                           icon=":material/extension_off:")
    from hierattn.home import linked_out

    for link in (link for root in checkpoint_roots() for link in linked_out(root)):
        st.sidebar.caption(f"{viz.md_code(link.name)} is not listed: it is a link to a folder outside "
                           f"{viz.md_code(link.parent)}, and hierattn reads a checkpoint only where it sits. Copy or "
                           "move the folder in instead.")


def checkpoints_or_stop() -> dict[str, Path]:
    """The checkpoints, or an error on the page and a stop when there are none."""
    checkpoints = available_checkpoints()
    if not checkpoints:
        folders = " or ".join(viz.md_code(root) for root in checkpoint_roots())
        st.error(f"No checkpoints found in {folders}. Train one with "
                 "`python -m hierattn train --preset bbc-news-hcan`.")
        st.stop()
    return checkpoints


def load_or_stop(path: Path, what: str = "This checkpoint") -> Classifier:
    """The loaded checkpoint, or a clear error on the page and a stop."""
    try:
        return load(path)
    except CheckpointError as exc:
        st.error(f"{what} cannot be loaded: {viz.md_text(exc)}")
        st.stop()


class _Models:
    """The loaded checkpoints, shared read-only by every session, held within
    ``limits.MODEL_MEMORY_MB`` (HIERATTN_MODEL_MEMORY_MB): beyond it the least recently used are
    let go (the one just asked for stays, even alone over the limit: the checkpoint limits bound it)."""

    def __init__(self):
        from collections import OrderedDict

        self.lock = threading.Lock()
        self.items: OrderedDict[tuple[str, float], tuple[Classifier, int]] = OrderedDict()
        self.refused: dict[tuple[str, float], str] = {}

    def cached(self, path: str, stamp: float) -> bool:
        return (path, stamp) in self.items or (path, stamp) in self.refused

    def get(self, path: str, stamp: float) -> Classifier:  # stamp: reload when the files change
        key = (path, stamp)
        with self.lock:  # loads one at a time: two sessions asking for one checkpoint load it once
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key][0]
            if key in self.refused:  # judged once per version of its files: a refusal costs no visit again
                raise CheckpointError(self.refused[key])
            try:
                classifier = load_classifier(path)
            except CheckpointError as exc:
                self.refused = {k: v for k, v in self.refused.items() if k[0] != path} | {key: str(exc)}
                raise
            for stale in [k for k in self.items if k[0] == path]:  # an older version of its files
                del self.items[stale]
            self.items[key] = (classifier, classifier.memory_bytes)
            budget = MODEL_MEMORY_MB.value * 2**20
            while len(self.items) > 1 and sum(size for _, size in self.items.values()) > budget:
                self.items.popitem(last=False)
            return classifier

    @property
    def held_bytes(self) -> int:
        return sum(size for _, size in self.items.values())


@process_wide  # the memory budget and the remembered refusals: no client's clear_cache may drop them
def models() -> _Models:
    return _Models()


def load(path: Path) -> Classifier:
    """The loaded classifier (eval mode, shared read-only across sessions); raises CheckpointError."""
    key = (str(path), _stamp(path))
    if models().cached(*key):
        return models().get(*key)
    with st.spinner("Loading model…"):
        return models().get(*key)


class _Explanations:
    """Explanations kept for reuse, shared read-only by every session, within
    ``limits.EXPLANATION_MEMORY_MB`` (HIERATTN_EXPLANATION_MEMORY_MB) by their size in memory, not
    their number: beyond it the least recently used are let go, and one larger than the whole
    budget is not kept at all."""

    def __init__(self):
        from collections import OrderedDict

        self.lock = threading.Lock()
        self.items: OrderedDict[tuple[str, float, str], tuple[Explanation, int]] = OrderedDict()  # with its size
        self.flights: dict[tuple[str, float, str], threading.Lock] = {}  # explanations being computed

    def flight(self, key: tuple[str, float, str]) -> threading.Lock:
        """The lock held while ``key``'s explanation is computed: a class pasting one sample at once
        computes it once, the others wait for it (30 computations of one article, side by side,
        were what made the class wait)."""
        with self.lock:
            return self.flights.setdefault(key, threading.Lock())

    def landed(self, key: tuple[str, float, str]) -> None:
        with self.lock:
            self.flights.pop(key, None)

    def find(self, key: tuple[str, float, str]) -> Explanation | None:
        with self.lock:
            if key not in self.items:
                return None
            self.items.move_to_end(key)
            self._trim(EXPLANATION_MEMORY_MB.value * 2**20)  # what it holds grows as its maps are read
            return self.items[key][0]

    def keep(self, key: tuple[str, float, str], explanation: Explanation) -> None:
        budget = EXPLANATION_MEMORY_MB.value * 2**20
        if explanation.nbytes > budget:
            return
        with self.lock:
            self.items[key] = (explanation, explanation.nbytes)
            self._trim(budget)

    def _trim(self, budget: int) -> None:
        """Let the least recently used go while the kept hold more than ``budget``, each measured now
        (a transformer's explanation computes its word maps and metrics when they are first read),
        the most recent always kept."""
        for k, (e, _) in list(self.items.items()):
            self.items[k] = (e, e.nbytes)
        while len(self.items) > 1 and self.held_bytes > budget:
            self.items.popitem(last=False)

    @property
    def held_bytes(self) -> int:
        return sum(size for _, size in self.items.values())


@process_wide
def explanations() -> _Explanations:
    return _Explanations()


def explain_cached(path: Path, text: str) -> Explanation:
    """The explanation of ``text`` by the checkpoint at ``path``: kept, or computed and kept."""
    key = (str(path), _stamp(path), text)
    kept = explanations()
    found = kept.find(key)
    if found is None:
        from hierattn.app.admission import admission, predicted_bytes

        with st.spinner("Reading the document…"), kept.flight(key):
            found = kept.find(key)  # another session computed it meanwhile
            if found is None:
                classifier = models().get(key[0], key[1])
                notice = st.empty()

                def waiting(ahead: int) -> None:  # in turn, within the server's memory for explanations
                    notice.caption(f"Waiting for the server's memory: {viz.counted(ahead, 'explanation')} ahead "
                                   "of yours.")

                try:
                    with admission().admitted(predicted_bytes(classifier), waiting):
                        notice.empty()
                        found = explain(classifier, text)
                    kept.keep(key, found)
                finally:
                    kept.landed(key)
    return found


def loadable(checkpoints: dict[str, Path]) -> dict[str, Classifier]:
    """The checkpoints that load, by name (a corrupted one is left out, not an error here)."""
    out = {}
    for name, path in checkpoints.items():
        try:
            out[name] = load(path)
        except CheckpointError:
            continue
    return out


def checkpoint_options(checkpoints: dict[str, Path]) -> dict[str, str]:
    """Picker labels: 'name · model · data set', so two checkpoints of one type stay apart."""
    out = {}
    for name, path in checkpoints.items():
        try:
            c = load(path)
            out[name] = f"{name} · {c.display_name}"
        except CheckpointError:
            out[name] = f"{name} · (cannot be loaded)"
    return out


def checkpoint_key(path: Path) -> tuple[str, float]:
    """What a result computed from a checkpoint depends on: its path and its files' time stamp."""
    return str(path), _stamp(path)


def no_prediction(classifier: Classifier, name: str) -> str:
    """Why the model's prediction is not shown (``Classifier.prediction_withheld``), with what to
    do instead; '' for a model whose prediction means something."""
    from hierattn.checkpoint.classifier import WITHHELD

    why = classifier.prediction_withheld
    if not why:
        return ""
    return (f"{viz.md_code(name)} is {WITHHELD[why]}, so no prediction is shown. Its self-attention below is the "
            f"{'pretrained model' if why == 'base encoder' else 'encoder'}'s own. To classify with it, fine-tune it: "
            f"the Train page, \"Start from\" {viz.md_code(name)}, or `hierattn train --start-from` with its folder.")


def stop_without_prediction(classifier: Classifier, name: str) -> None:
    """A page that scores predictions says why there are none to score, and stops."""
    if said := no_prediction(classifier, name):
        st.info(said.replace("no prediction is shown", "there is no prediction to score"))
        st.stop()


def window_cut(classifier: Classifier) -> str:
    """A sentence, when a library model reads fewer tokens than its positions hold, because one
    explanation of its whole window would hold more attention than the server allows; else ''."""
    from hierattn.limits import EXPLANATION_CELLS

    own = getattr(classifier.model, "model_window", None)
    if not own or not classifier.window or classifier.window >= own:
        return ""
    return (f" Its window is {own:,} tokens: it reads {classifier.window:,} here, since one explanation of the whole "
            f"window would hold more than the server's {EXPLANATION_CELLS.value:,} attention cells (set "
            f"{EXPLANATION_CELLS.variable} to raise it).")


def untested_length(classifier: Classifier) -> str:
    """A sentence, when the model reads texts far longer (over 4 times) than its paper ever tested
    it on (MahNN, the flat recurrent models); else ''."""
    from hierattn.limits import words_read

    tested = classifier.spec.tested_words if classifier.spec else None
    text = classifier.text_config
    reads = words_read(text.max_sentences, text.max_words, text.max_tokens)
    if not tested or reads <= 4 * tested[0]:
        return ""
    return f" {tested[1]}: it was never tested on texts as long as the {reads:,} words this one reads."

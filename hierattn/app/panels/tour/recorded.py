"""How often a Tour step's claim holds over the test split, as recorded (``python -m hierattn tour``
writes results/tour.json), and the documents the record offers: every step says its rate beside
its example, so that one good example does not hide it."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.tour import record
from hierattn.analysis.tour.rates import PICKS, StepRate
from hierattn.analysis.tour.steps import STEPS
from hierattn.app import loading
from hierattn.app.samples import split_part
from hierattn.data.builtin import sample_documents
from hierattn.experiments.results import RESULTS


@st.cache_data(max_entries=2, show_spinner=False)
def _recorded(stamp: float):
    return record.load(RESULTS / "tour.json")


def _record():
    """The recorded rates (``python -m hierattn tour``) and the checkpoint stamps they came from,
    read again only when the file changes."""
    path = RESULTS / "tour.json"
    return _recorded(path.stat().st_mtime if path.exists() else 0.0)


@st.cache_data(max_entries=32, show_spinner=False)
def _digest(folder: str, stamp: float) -> str:
    """The checkpoint's content digest, computed again only when its files change (``stamp``)."""
    return record.checkpoint_digest(Path(folder))


def recorded_rate(step: int) -> StepRate | None:
    """The step's recorded rate, without saying it on the page (``show_rate`` says it)."""
    return _record()[0].get(step)


def show_rate(step: int, checkpoints: dict[str, Path]) -> StepRate | None:
    """The step's rate over the test split, said on the page; None when not recorded."""
    rates, stamps = _record()
    rate = rates.get(step)
    if rate is None:
        st.caption("How often this holds over the test split is not recorded here (`python -m hierattn tour "
                   "--write results/tour.json` records it).")
        return None
    changed = [n for n in STEPS[step].checkpoints
               if n in checkpoints and stamps.get(n) != _digest(str(checkpoints[n]), loading.checkpoint_key(
                   checkpoints[n])[1])]
    st.info(f"**How often it holds.** {viz.md_text(STEPS[step].sentence(rate))}"
            + (" (recorded for an earlier version of these checkpoints)" if changed else "")
            + " The documents offered below are readable ones (no web address, no garbled characters, few words "
              "the model does not know), chosen by their measured effect: the strongest where the claim holds, a "
              "typical one (the median) and the weakest, so that one good example does not hide the rate."
            + ("" if any(k.endswith("strongest") for k in rate.picks) else
               " No readable document of the split makes the point, so none is offered as the strongest."),
            icon=":material/query_stats:")
    return rate


def picked(rate: StepRate | None, dataset: str, prefix: str = "") -> list[tuple[str, str]]:
    """(label, text) of the test documents the record picked for the step, strongest first."""
    if rate is None:
        return []
    texts, truth, _ = split_part(dataset, "test")
    out = []
    for pick in PICKS:
        index = rate.picks.get(f"{prefix}{pick}")
        if index is not None and index < len(texts):
            out.append((f"{pick} effect · {truth[index]} · {' '.join(texts[index].split()[:9])}…", texts[index]))
    return out


def explained_pick(rate: StepRate | None, dataset: str, label: str, key: str, checkpoint: Path):
    """A picker of the step's recorded documents (else the data set's samples), and the chosen one
    explained by ``checkpoint``."""
    docs = picked(rate, dataset) or [(f"{name} · {' '.join(text.split()[:10])}…", text)
                                    for name, text in sample_documents(dataset)]
    pick = st.selectbox(label, range(len(docs)), key=key, format_func=lambda i: docs[i][0])
    return loading.explain_cached(checkpoint, docs[pick][1])

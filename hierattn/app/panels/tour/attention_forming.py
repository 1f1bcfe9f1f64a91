"""The Tour's step 7 on the page: attention forming as a model trains, on two recorded runs of the
same model from two starts of its target vector (the registry's start sweep), played back on the
same validation document; then how far the start and how far training length move sharpness, each
with its figure. Everything here is read from recorded runs: nothing trains or is computed."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels import playback
from hierattn.app.panels.tour.han_and_hcan import seed_points
from hierattn.experiments import start_length, start_sweep
from hierattn.experiments.results import RESULTS, read_result
from hierattn.experiments.runner import playback_path
from hierattn.experiments.spec import load_experiments
from hierattn.training.playback import read as read_playback

DATASET = "tweets"


def recorded_runs(dataset: str = DATASET, root: Path = RESULTS) -> list[tuple[object, dict, object]]:
    """(experiment, playback, result) of the start sweep's seed-1 runs with a recorded playback,
    the smallest and the largest start of one model (the first model with two)."""
    found: dict[str, list] = {}
    for e in load_experiments().values():
        if e.dataset == dataset and e.group.endswith(start_sweep.SUFFIX):
            record = read_playback(playback_path(root, e.name, 1))
            result = read_result(root, e.name, 1)
            if record and result:
                found.setdefault(e.model, []).append((e, record, result))
    for runs in found.values():
        if len(runs) >= 2:
            runs.sort(key=lambda r: float(r[0].value))
            return [runs[0], runs[-1]]
    return []


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 7: the same model from two starts, its attention on one document epoch by epoch."""
    st.subheader("Attention forming as a model trains: the start or the training?")
    st.markdown("Step 4's sweep trained HAN and HCAN from starts of every scale and found that how peaked a target "
                "attention ends follows where its query vector started. Here is that lesson as it happens: the same "
                "HCAN, on the same tweets, trained twice, once with its target vector T started small and once "
                "large. Each run explained a few validation tweets before training and after each epoch, exactly "
                "as the Explore page would have had it stopped there. Slide through the epochs.")
    runs = recorded_runs()
    if len(runs) < 2:
        st.info("The two recorded runs are not here (`python -m hierattn reproduce tweets/hcan-v0.0078125 "
                "tweets/hcan-v10.0 --seeds 1 --force` records them).")
        return
    named = {f"{e.label} from v = {float(e.value):g}": record for e, record, _ in runs}
    playback.show(named, "tour7", f"recorded runs of {runs[0][0].name} and {runs[1][0].name} "
                                  f"({runs[0][0].label}), seed 1, validation documents")
    (a, _, ra), (b, _, rb) = runs
    st.caption(f"Test accuracy: {ra.test_accuracy:.1%} from v = {float(a.value):g}, {rb.test_accuracy:.1%} from "
               f"v = {float(b.value):g} (3 epochs, seed 1).")
    st.markdown("**What to notice.** " + viz.md_text(_noticed(runs)))
    _start_and_length()


def _start_and_length() -> None:
    """How much the start and how much training length move sharpness, with a figure for each."""
    lines = []
    for dataset in ("tweets", "bbc-news"):
        for model in dict.fromkeys(r.model for r in start_length.length_rows(dataset)):
            said = start_length.start_and_length(dataset, model)
            if said:
                lines.append(said[0].upper() + said[1:])
    if not lines:
        st.caption("The training-length runs are not recorded yet (`python -m hierattn reproduce tweets/hcan-e10`).")
        return
    resolution = {m.label: m.accuracy_resolution for m in start_sweep.by_model(start_sweep.rows(DATASET))}
    st.markdown("**The start or the training, measured.** " + " ".join(viz.md_text(line) for line in lines)
                + " Across the starts, accuracy differs by less than three seeds resolve ("
                + ", ".join(f"{label}: {100 * r:.1f} points" for label, r in resolution.items()) + f" on {DATASET}).")
    rows, lengths = start_sweep.rows(DATASET), start_length.length_rows(DATASET)
    left, right = st.columns(2)

    figures = Figures(f"HAN and HCAN on {DATASET} · recorded runs, test split")
    chart(viz.start_sweep_chart(seed_points(rows, lambda r: r.variance, lambda r: r.word_jsd),
                                "word attention's JSD from even"),
          "Sharpness by where the query started (3 epochs)", left, key="tour7_start", figures=figures)
    chart(viz.start_sweep_chart(seed_points(lengths, lambda r: r.epochs, lambda r: r.word_jsd),
                                "word attention's JSD from even", x_title="epochs trained, at the shipped start",
                                log_x=False),
          "Sharpness by how long it trained", right, key="tour7_length", figures=figures)


def _mean_jsd(epoch: dict) -> float:
    values = [d["word_jsd"] for d in epoch["documents"] if d and "word_jsd" in d]
    return sum(values) / len(values) if values else float("nan")


def _noticed(runs) -> str:
    """What the two records show, from their figures: how far from even each run's word attention is
    on the watched documents at the start and after the last epoch, and each run's accuracy."""
    (a, ra, _), (b, rb, _) = runs
    first, last = (ra["epochs"][0], rb["epochs"][0]), (ra["epochs"][-1], rb["epochs"][-1])
    return (f"At the start both are close to even on the watched tweets (mean word JSD from even "
            f"{_mean_jsd(first[0]):.3f} from v = {float(a.value):g}, {_mean_jsd(first[1]):.3f} from "
            f"v = {float(b.value):g}). After epoch {last[0]['epoch']} the first is at {_mean_jsd(last[0]):.3f} and the "
            f"second at {_mean_jsd(last[1]):.3f}, while their validation accuracy is {last[0]['val_accuracy']:.1%} and "
            f"{last[1]['val_accuracy']:.1%}: on these two runs the start decided how peaked the map became, within "
            "the first epoch, "
            "and training did not bring the two together.")

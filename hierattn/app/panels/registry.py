"""The experiments registry on the Evaluation page: docs/RESULTS.md's results and ordering tables for a
data set, and the registry's figures (HA-LSTM's input length, MahNN's Figure 4, HCAN's Figure 3),
computed live from results/ and cached until a result is recorded."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.app.downloads import Figures, chart
from hierattn.experiments import figures, report
from hierattn.experiments.results import RESULTS, fingerprint
from hierattn.experiments.spec import load_experiments


@st.cache_data(show_spinner="Deciding the orderings against their noise…", max_entries=4)
def _computed(dataset: str, results_state: str) -> dict:
    experiments = load_experiments()
    out = {"results": report.results_table(dataset, experiments, RESULTS),
           "orderings": report.orderings_table(dataset, experiments, RESULTS),
           "length": figures.sweep(dataset, "length", experiments, RESULTS),
           "curves": figures.curves(dataset, experiments, RESULTS, drawn=True)}
    for group in ("mahnn-channels", "mahnn-filters"):
        out[group] = figures.sweep(dataset, group, experiments, RESULTS)
    out["batch-one"] = report.batch_one_markdown(RESULTS)
    return out


def _any_recorded(series: dict) -> bool:
    return any(v is not None for values in series.values() for v in values)


def registry_tables(dataset: str) -> None:
    st.subheader(f"The papers' orderings on `{dataset}`, several seeds each")
    st.caption("Every row is a spec of the experiments registry (experiments/*.toml), trained with several seeds "
               "and recorded under results/; `python -m hierattn reproduce` reruns them. Each ordering is decided "
               "by a 95% t interval of the difference that counts the noise of the seeds and of the test "
               "documents: **holds** or **reversed** only when it excludes zero, else **within noise**. "
               "docs/RESULTS.md shows the same tables and figures (`python -m hierattn report --write`).")
    data = _computed(dataset, fingerprint(RESULTS))
    st.markdown(data["orderings"])  # generated from our specs and numbers only: no user text
    with st.expander("Every row of the registry"):
        st.markdown(data["results"])
    recorded = Figures(f"{dataset} · the experiments registry's recorded runs")
    tabs = st.tabs(["Input length (HA-LSTM)", "Channels and filter size (MahNN Figure 4)",
                    "Accuracy against training time (HCAN Figure 3)", "One document a step (HCAN Table 2)"])
    with tabs[0]:
        xs, series = data["length"]
        if not series:
            st.info(f"No input-length rows are registered for {dataset}.")
        elif not _any_recorded(series):
            st.info(f"Nothing recorded yet: `python -m hierattn reproduce {dataset}/` records the input-length rows.")
        else:
            st.caption("Test accuracy as each model reads only the first q words; one seed per point "
                       f"(`python -m hierattn reproduce {dataset}/` records what is missing).")
            left, right = st.columns(2)
            for column, names, part in ((left, figures.LENGTH_A, "a"), (right, figures.LENGTH_B, "b")):
                chosen = {n: (xs, series[n]) for n in names if n in series}
                chart(viz.lines_chart(chosen, "input length q (words)", "test accuracy", f"({part})"),
                      f"Test accuracy against input length ({part})", column, figures=recorded)
    with tabs[1]:
        shown = False
        for group, x_title in (("mahnn-channels", "channels L"), ("mahnn-filters", "filter size")):
            xs, series = data[group]
            if series and _any_recorded(series):
                shown = True
                chart(viz.lines_chart({n: (xs, v) for n, v in series.items()}, x_title, "test accuracy"),
                      f"Test accuracy against {x_title} (MahNN Figure 4)", figures=recorded)
        if not shown:
            st.info("MahNN's Figure 4 is run on tweets only: pick tweets to see it.")
        else:
            st.caption("One seed per point; the other settings as the mahnn-3 row.")
    with tabs[2]:
        curves = data["curves"]
        if not curves:
            st.info("Nothing recorded yet.")
        else:
            st.caption("Validation accuracy after each epoch against the seconds spent in optimisation steps "
                       "(one thread, mean over the recorded seeds), for HAN and the HCAN variants the papers' "
                       "orderings compare (docs/RESULTS.md's table lists every variant).")
            chart(viz.lines_chart(curves, "training seconds (one thread)", "validation accuracy"),
                  "Validation accuracy against training time (HCAN Figure 3)", figures=recorded)
    with tabs[3]:
        if data["batch-one"] is None:
            st.info("Not measured yet: `python -m hierattn bench --only batch-one --json bench.json` records it.")
        else:
            st.markdown(data["batch-one"])  # our own numbers and names only

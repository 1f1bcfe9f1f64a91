"""The experiments registry on the Evaluation page: the README's results and ordering tables for a
data set, computed live from results/ (and cached until a result is recorded)."""
from __future__ import annotations

import streamlit as st

from hierattn.experiments import report
from hierattn.experiments.results import RESULTS, fingerprint
from hierattn.experiments.spec import load_experiments


@st.cache_data(show_spinner="Deciding the orderings against their noise…", max_entries=4)
def _tables(dataset: str, results_state: str) -> tuple[str, str]:
    experiments = load_experiments()
    return (report.results_table(dataset, experiments, RESULTS), report.orderings_table(dataset, experiments, RESULTS))


def registry_tables(dataset: str) -> None:
    st.subheader(f"The papers' orderings on `{dataset}`, several seeds each")
    st.caption("Every row is a spec of the experiments registry (experiments/*.toml), trained with several seeds "
               "and recorded under results/; `python -m hierattn reproduce` reruns them. Each ordering is decided "
               "by a paired bootstrap over the test documents and the seeds: **holds** or **reversed** only when "
               "the 95% interval of the difference excludes zero, else **within noise**. The README shows the same "
               "tables.")
    results, orderings = _tables(dataset, fingerprint(RESULTS))
    st.markdown(orderings)  # generated from our specs and numbers only: no user text
    with st.expander("Every row of the registry"):
        st.markdown(results)

"""hierattn: look inside hierarchical attention classifiers. Run with ``streamlit run app.py``."""
from hierattn.threads import prepare_environment, serving

prepare_environment()  # before torch is imported: OpenMP reads it once, at its start

import streamlit as st  # noqa: E402

if __name__ != "__main__":  # `streamlit run app.py` imports this module to serve it
    from hierattn.app.warm import lifespan

    app = st.App(__file__, lifespan=lifespan)
else:  # every page run of every session
    st.set_page_config(page_title="hierattn", page_icon=":material/search:", layout="wide")
    page = st.navigation([st.Page("pages/explore.py", title="Explore", icon=":material/search:", default=True),
                          st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
                          st.Page("pages/dataset_statistics.py", title="Dataset statistics",
                                  icon=":material/bar_chart:", url_path="statistics"),
                          st.Page("pages/evaluation.py", title="Evaluation", icon=":material/fact_check:"),
                          st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
                          st.Page("pages/tour.py", title="Tour", icon=":material/school:")])
    with serving():  # the server's share of the cores while it computes, beside running trainings
        from hierattn.app.loading import plugin_warnings

        plugin_warnings()
        page.run()

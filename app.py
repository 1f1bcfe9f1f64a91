"""hierattn: look inside hierarchical attention classifiers. Run with ``streamlit run app.py``."""
from hierattn.threads import prepare_environment, serving

prepare_environment()  # before torch is imported: OpenMP reads it once, at its start

import streamlit as st  # noqa: E402

if __name__ != "__main__":  # `streamlit run app.py` imports this module to serve it
    from hierattn.app.warm import lifespan

    app = st.App(__file__, lifespan=lifespan)
else:  # every page run of every session
    from hierattn.app.warm import wait_for_imports

    wait_for_imports()  # the start-up thread's imports first: importing beside it raced (warm.py)

    from hierattn.app.routing import page_icon

    st.set_page_config(page_title="hierattn", page_icon=page_icon(), layout="wide")
    # A metric's value (the predicted class) shrinks with the window instead of being cut to "entertain…".
    st.html("<style>[data-testid=stMetricValue]{font-size:clamp(1.3rem,2.3vw,2.25rem)}</style>")
    page = st.navigation([st.Page("pages/explore.py", title="Explore", icon=":material/search:", default=True),
                          st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
                          # A fresh server's first visitor is served in the pages-folder mode
                          # (hierattn/app/routing.py), which knows a page by its file's name, "1_" stripped:
                          # the URL path /statistics, without a file that shadows the statistics module.
                          st.Page("pages/1_statistics.py", title="Dataset statistics", icon=":material/bar_chart:"),
                          st.Page("pages/evaluation.py", title="Evaluation", icon=":material/fact_check:"),
                          st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
                          st.Page("pages/tour.py", title="Tour", icon=":material/school:")])
    from hierattn.app.admission import page_runs
    from hierattn.app.tasks import page_run

    # in turn (a few at once: see PageRuns), then the server's share of the cores beside running trainings
    with page_runs().turn(), serving(), page_run():
        from hierattn.app.loading import plugin_warnings

        plugin_warnings()
        page.run()

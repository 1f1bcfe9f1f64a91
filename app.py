"""hierattn: look inside hierarchical attention classifiers. Run with ``streamlit run app.py``."""
import streamlit as st

st.set_page_config(page_title="hierattn", page_icon=":material/search:", layout="wide")
page = st.navigation([st.Page("pages/explore.py", title="Explore", icon=":material/search:", default=True),
                      st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
                      st.Page("pages/statistics.py", title="Dataset statistics", icon=":material/bar_chart:"),
                      st.Page("pages/evaluation.py", title="Evaluation", icon=":material/fact_check:"),
                      st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
                      st.Page("pages/tour.py", title="Tour", icon=":material/school:")])
page.run()

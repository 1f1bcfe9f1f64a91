"""hierattn: look inside hierarchical attention classifiers. Run with ``streamlit run app.py``."""
import streamlit as st

st.set_page_config(page_title="hierattn", page_icon=":material/search:", layout="wide")
page = st.navigation([st.Page("pages/explore.py", title="Explore", icon=":material/search:", default=True),
                      st.Page("pages/train.py", title="Train", icon=":material/model_training:")])
page.run()

"""Tour: the papers' ideas, one step at a time, live on the shipped checkpoints."""
import streamlit as st

from hierattn import viz
from hierattn.app import loading
from hierattn.app.panels.tour.steps import STEPS
from hierattn.app.routing import run_through_app

run_through_app()
st.title("A tour of attention in text classifiers")
st.caption("Four ideas from the HCAN and SANet papers, two from a study of BERT's heads and one from our own sweep "
           "of where training starts, each with what to notice and a live check on our own "
           "models. A claim holds on a document only when the model beats a baseline that keeps what the claim is "
           "not about (an even spread of the same structure; every other split of the same heads; each row's own "
           "weights shuffled among its keys), on the same document. The numbers are computed on the "
           "document shown, not written in advance, and each step says how often its claim holds over the whole "
           "test split. Where it does not hold for our models, the step says so: that is a lesson too.")

checkpoints = loading.checkpoints_or_stop()
step = st.segmented_control("Step", list(STEPS), format_func=lambda s: STEPS[s][0], default=1,
                            key="tour_step") or 1
_, needed, draw = STEPS[step]
missing = [n for n in needed if n not in checkpoints]
if missing:
    st.info(f"This step uses the shipped checkpoint(s) {viz.md_text(', '.join(missing))}, which are not in "
            "checkpoints/ here.")
    st.stop()
for name in needed:
    loading.load_or_stop(checkpoints[name])
draw(checkpoints)

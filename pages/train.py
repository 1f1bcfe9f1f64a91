"""Train: pick data, a model and its settings, watch it learn (loss, accuracy, attention sharpness),
cancel if needed; the checkpoint appears in Explore's picker when it is written."""
import streamlit as st

from hierattn import viz
from hierattn.app import train_form, visitors
from hierattn.app.panels import training
from hierattn.app.routing import run_through_app
from hierattn.app.run_policy import MAX_RUNNING, single_user
from hierattn.data.dataset import stratified_subset
from hierattn.home import checkpoint_root
from hierattn.training.jobs import make_job
from hierattn.training.run_names import JobError

run_through_app()

st.title("Train a model")
jobs = train_form.job_manager()
# A run survives a browser refresh: its id is kept in the address bar.
current = jobs.get(st.query_params.get("job") or st.session_state.get("job_id"))
if current is not None:  # e.g. after a refresh: say where the run is; it is yours only from your browser
    st.info(train_form.run_notice(current, visitors.visitor()))

st.header("1. Data")
dataset = training.data_section()
if dataset is None:
    st.info("Upload a file to go on.")
    st.stop()
st.header("2. Model")
model_type, config, start_from = training.model_section()
st.header("3. Training")
text_config, train_config, at_most = training.training_section(dataset, model_type, start_from)

st.header("4. Run")
run_name = st.text_input("Run name", value=train_form.suggest_run_name(dataset.name, model_type),
                         key=f"run_name_{dataset.name}_{model_type}",  # the suggestion follows the choices
                         max_chars=64, help="Letters, digits, '-' and '_'. The checkpoint is saved under this name.")
r1, r2 = st.columns(2)
replace_existing = r1.checkbox("Replace my checkpoint of this name" if not single_user() else
                               "Replace a checkpoint of this name", key="replace",
                               help="Only a checkpoint that a run of yours trained in this session; the shipped "
                                    "ones and other visitors' are never replaced from this page." if not single_user()
                               else "Any checkpoint: this server is set up for one person (HIERATTN_SINGLE_USER=1).")
keep_going = r2.checkbox("Keep training after I leave", key="keep_going",
                         help=train_form.keep_going_help())
share_heldout = train_form.share_heldout_choice(dataset)
st.caption(f"Device: {train_form.device_label()} · {len(jobs.running())} of at most {MAX_RUNNING} runs training now")
if st.button("Start training", type="primary", key="start"):
    try:
        job = make_job(run_name.strip(), checkpoint_root(), model_type, config,
                       stratified_subset(dataset, at_most or len(dataset.texts), train_config.seed), text_config,
                       train_config,
                       replace_existing=replace_existing)
        jobs.start(job, session=visitors.visitor(), keep_going=keep_going, share_heldout=share_heldout)
    except JobError as exc:
        st.error(f"Not started: {viz.md_text(exc)}")
    else:
        st.session_state.job_id = job.id
        st.query_params["job"] = job.id
        st.rerun()
if current is not None:
    training.run_panel(jobs, current.id)  # right under the button that started it

"""The pickers' values (hierattn/app/widgets.py): a value that does not fit the page's options is set
to the page's own default, never deleted (a deleted value let the browser keep showing the old
choice, and the next click sent it back), and a value that fits is kept."""
from streamlit.testing.v1 import AppTest


def _page():
    import streamlit as st

    from hierattn.app import widgets

    layers = st.session_state.get("layers", 3)
    widgets.keep_valid("layer", list(range(layers)), default=layers - 1)
    st.selectbox("Layer", range(layers), key="layer")
    widgets.own_choice("data", ["own", "bbc-news"], "own", owner=st.session_state.get("model", "a"))
    st.selectbox("Data set", ["own", "bbc-news"], key="data")


def test_a_value_another_model_left_becomes_this_pages_default_and_a_fitting_one_stays():
    at = AppTest.from_function(_page).run()
    assert at.selectbox(key="layer").value == 2 and at.selectbox(key="data").value == "own"
    at.selectbox(key="layer").set_value(0).run()
    at.selectbox(key="data").set_value("bbc-news").run()
    for _ in range(5):  # unrelated reruns keep both choices
        at.run()
    assert at.selectbox(key="layer").value == 0 and at.selectbox(key="data").value == "bbc-news"
    at.session_state["layers"] = 2  # a model of two layers: layer 1 (index 0) is still there
    at.run()
    assert at.selectbox(key="layer").value == 0
    at.selectbox(key="layer").set_value(1).run()
    at.session_state["layers"] = 1  # one layer: index 1 is gone, so the last layer, not a blank
    at.session_state["model"] = "b"  # another model: its own data set again
    at.run()
    assert at.selectbox(key="layer").value == 0 and at.session_state["layer"] == 0
    assert at.selectbox(key="data").value == "own" and not at.exception
    at.session_state["layers"] = 3
    at.run()
    at.selectbox(key="layer").set_value(2).run()
    at.session_state["layers"] = 2  # a model without layer 3: its last layer, not its first
    at.run()
    assert at.selectbox(key="layer").value == 1
    assert not at.warning  # no "default value but also set via Session State" warning

"""Headless runs of the app (Streamlit AppTest) against tiny checkpoints built in a fixture."""
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import settle
from tests.conftest import REPO, shown

APP = str(REPO / "app.py")

DOC = "The striker scored twice. The team won the cup final on Sunday! Fans cheered."


def run_app(text: str | None = None, model: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    if model:
        at.selectbox(key="model").set_value(model).run()
    if text is not None:
        at.text_area(key="document").input(text).run()
    assert not at.exception, at.exception
    return at


def texts(at) -> str:
    parts = [e.value for kind in ("markdown", "info", "warning", "error", "caption") for e in getattr(at, kind)]
    parts += [m.label + " " + str(m.value) for m in at.metric]
    return shown("\n".join(str(p) for p in parts))


def html_blocks(at) -> list[str]:
    return [e.proto.body for e in at.get("html")]


def test_a_second_session_on_the_same_document_builds_no_figure(app_env, monkeypatch):
    """A class on one sample: the figures, tables and shaded text of a (model, document, view) are
    built by the first session and reused by every other, on the same page."""
    from hierattn import viz

    built = []
    for name in ("probability_chart", "attention_heatmap", "distribution_chart", "shaded_document_html"):
        real = getattr(viz, name)
        monkeypatch.setattr(viz, name, lambda *a, _real=real, _name=name, **k: built.append(_name) or _real(*a, **k))
    sample = DOC + " The class read this one together."  # explained by no other test in this process
    first = run_app(sample, "tiny-hcan")
    assert {"probability_chart", "attention_heatmap", "distribution_chart", "shaded_document_html"} <= set(built)
    drawn, count = [e.proto.spec for e in first.get("plotly_chart")], len(built)
    second = run_app(sample, "tiny-hcan")
    assert len(built) == count  # nothing built again
    assert [e.proto.spec for e in second.get("plotly_chart")] == drawn  # the same figures drawn
    assert html_blocks(second)[0] == html_blocks(first)[0]


def test_explore_hcan_shows_everything(app_env):
    at = run_app(DOC, "tiny-hcan")
    assert at.title[0].value == "Explore attention"
    assert at.selectbox(key="model").options == [
        "tiny-halstm", "tiny-han", "tiny-han-cached", "tiny-hcan", "tiny-hcan-flat-max", "tiny-kimcnn", "tiny-mahnn",
        "tiny-onlstm", "tiny-sanet", "tiny-tfidf", "tiny-transformer"]
    assert "Prediction" in texts(at)
    assert len(at.get("plotly_chart")) >= 4  # probabilities, heatmap, two distributions
    html = html_blocks(at)[0]
    assert "striker" in html and 'title="weight' in html
    table = at.dataframe[0].value
    assert {"Gini", "b=1", "b=1 (even)", "b=5", "b=5 (even)"} <= set(table.columns)
    sizes = table["size"].tolist()  # each diagonality beside an even spread over the same words
    # the shares are shown in percentage points (a column format, no Styler)
    assert table["b=3 (even)"].tolist() == pytest.approx([100 * min(1.0, (7 * n - 12) / n**2) if n > 3 else 100.0
                                                          for n in sizes])
    assert len(table) == 2 * 2  # sentence 1: two branches x two heads
    assert table["sentence"].tolist() == [1, 1, 1, 1] and table["sentence"].dtype.kind == "i"  # "1", not "1.000000"
    assert "has no self-attention" not in texts(at)
    # switch to the sentence level and a single head
    at.radio(key="self_level").set_value("sentence").run()
    at.selectbox(key="self_head").set_value("head 2").run()
    assert not at.exception
    assert set(at.dataframe[0].value["map"]) == {"sentence self-attention, branch a (ELU)",
                                                 "sentence self-attention, branch b (tanh)"}  # plain names


def test_explore_han_says_it_has_no_self_attention(app_env):
    at = run_app(DOC, "tiny-han")
    assert "HAN has no self-attention" in texts(at)
    assert not at.dataframe  # no empty metrics panel
    assert len(at.get("plotly_chart")) == 3  # probabilities and the two distributions


def test_flat_max_pool_hcan_is_rendered_by_its_axes(app_env):
    long_doc = " ".join(f"The team won the cup final number {i} on Sunday." for i in range(6))
    at = run_app(long_doc, "tiny-hcan-flat-max")
    assert "max-pooling, not target attention" in texts(at)
    assert not at.selectbox(key="self_head").value.startswith("head")  # mean of heads by default
    assert [r.value for r in at.radio if r.key == "self_level"] == ["word"]
    table = at.dataframe[0].value
    assert set(table["map"]) == {"word self-attention, branch a (ELU)", "word self-attention, branch b (tanh)"}
    assert "sentence" not in table.columns
    assert table["size"].tolist() == [6 * 11] * 4  # one document-wide matrix per branch and head (10 words + ".")
    at.toggle(key="all_heads").set_value(True).run()
    # probabilities, the overview in blocks and the zoom (66 words: over the 60 drawn at once), the heads' grid
    assert not at.exception and len(at.get("plotly_chart")) == 3 + 1


@pytest.mark.parametrize("text,expected", [
    ("", "Paste a document"),
    ("   \n\t  ", "Paste a document"),
    ("\x00\x01\x02 ;;; ---", "no words were found"),
])
def test_texts_without_words_get_a_message(app_env, text, expected):
    at = run_app(text, "tiny-hcan")
    assert expected in texts(at)
    assert not at.get("plotly_chart")


def test_huge_text_is_truncated_with_a_warning(app_env):
    at = run_app("The cup final was great and the fans sang. " * 4700, "tiny-hcan")  # > 200,000 characters
    assert "Long document" in texts(at) and "first 6 of 4,700 sentences" in texts(at)
    assert len(at.get("plotly_chart")) >= 4


def test_script_tags_are_escaped(app_env):
    at = run_app("<script>alert('x')</script> The team <b>won</b> the cup.", "tiny-han")
    html = html_blocks(at)[0]
    assert "<script" not in html and "<b>" not in html and "</b" not in html
    assert "&lt;<span" in html and "alert(&#x27;x&#x27;)&lt;/script</span>&gt;" in html


def test_samples_fill_the_text_box(app_env):
    at = run_app(model="tiny-hcan")
    assert at.text_area(key="document").value  # a sample is shown on first load
    options = at.selectbox(key="sample").options
    assert any(o.startswith("tweets · ") for o in options) and any(o.startswith("bbc-news · ") for o in options)
    at.selectbox(key="sample").set_value(options[-1]).run()
    assert at.text_area(key="document").value.split()[:3] == options[-1].split(" · ", 2)[2].split()[:3]
    at.text_area(key="document").input("My own words now.").run()
    assert at.selectbox(key="sample").value == options[0]  # "write or paste your own"


def test_broken_checkpoint_is_reported_not_raised(app_env, tmp_path, monkeypatch):
    import shutil

    shutil.copytree(app_env / "tiny-han", tmp_path / "broken")
    (tmp_path / "broken" / "model.safetensors").write_bytes(b"junk")
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(tmp_path))
    at = run_app()
    assert "cannot be loaded" in texts(at) and "corrupted" in texts(at)


def test_no_checkpoints_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(tmp_path))
    at = run_app()
    assert "No checkpoints found" in texts(at)


def subheaders(at) -> list[str]:
    return [h.value for h in at.subheader]


def test_sanet_shows_one_token_by_token_matrix_per_block(app_env):
    at = run_app(DOC, "tiny-sanet")
    assert "does not weigh words or sentences" in texts(at)
    assert not html_blocks(at)  # nothing to paint on the text
    assert at.selectbox(key="branch_word").options == ["word self-attention, block 1"]
    assert not [s for s in at.selectbox if s.key == "self_head"]  # one head: no head picker
    table = at.dataframe[0].value
    assert table["size"].tolist() == [17] and "head" not in table.columns  # 14 words + 3 sentence marks


def test_halstm_shows_window_attention_per_time_step(app_env):
    at = run_app(DOC, "tiny-halstm")
    step = next(s for s in at.select_slider if s.key.startswith("self_step_"))
    assert len(step.options) == 17
    assert step.value == 16  # starts at the last word, the state the classifier reads
    step.set_value(5).run()
    assert not at.exception
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Where each step looks back" in t for t in titles)
    table = at.dataframe[0].value
    assert table["time"].tolist() == [6] and table["size"].tolist() == [4]  # the N = 4 window


def test_mahnn_shows_channel_strips_and_semantic_attention(app_env):
    at = run_app(DOC, "tiny-mahnn")
    assert "Syntactical attention per channel" in subheaders(at)
    assert "Semantical attention over hidden dimensions" in subheaders(at)
    assert at.radio(key="target_head").options == ["mean of channels", "channel 1", "channel 2", "channel 3"]
    at.radio(key="target_head").set_value("channel 2").run()
    at.selectbox(key="semantic_channel").set_value(2).run()
    assert not at.exception and 'title="weight' in html_blocks(at)[0]


def test_on_lstm_shows_its_master_forget_gate_as_not_attention(app_env):
    at = run_app(DOC, "tiny-onlstm")
    assert "Ordered neurons: how much each word closes" in subheaders(at)
    assert "Semantical attention over hidden dimensions" not in subheaders(at)  # a gate is not MahNN's attention
    said = texts(at)
    assert "Not attention" in said and "What it exposes instead is below" in said
    assert "split spread evenly over the units would erase (0.44)" in said  # H = 8: (8 - 1) / 16
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert sum("share of the memory erased" in t for t in titles) == 1


def test_kim_cnn_says_its_weights_are_not_attention(app_env):
    at = run_app(DOC, "tiny-kimcnn")
    assert "Kim CNN has no attention" in texts(at)
    assert "striker" in html_blocks(at)[0]


@pytest.mark.parametrize("model", ["tiny-tfidf"])
def test_models_without_attention_say_so(app_env, model):
    at = run_app(DOC, model)
    assert "has no attention mechanism" in texts(at)
    assert "Prediction" in texts(at) and len(at.get("plotly_chart")) == 1


def test_cached_lstm_han_is_shown_like_han(app_env):
    at = run_app(DOC, "tiny-han-cached")
    assert "HAN (Cached LSTM)" in texts(at)
    assert "striker" in html_blocks(at)[0] and len(at.get("plotly_chart")) == 3


def test_erasure_curves_on_request(app_env):
    at = run_app(DOC, "tiny-hcan")
    charts = len(at.get("plotly_chart"))
    at.toggle(key="faithfulness").set_value(True).run()
    settle(at, 60)
    assert len(at.get("plotly_chart")) == charts + 1
    verdicts = texts(at)
    for method in ("attention", "gradient × input", "leave-one-out"):
        assert f"- {method}: removing its top words (1 to " in verdicts
    assert "- random: removing random words (1 to " in verdicts
    line = next(m.value for m in at.markdown if m.value.startswith("**Spearman ρ of the attention with**"))
    found = dict(re.findall(r"(gradient × input|integrated gradients|leave-one-out) ([+-][0-9.]+|n/a)", line))
    assert set(found) == {"gradient × input", "integrated gradients", "leave-one-out"}
    # the attribution's shading beside the attention's, with their rank correlation
    assert f"**gradient × input** · Spearman ρ with attention: {found['gradient × input']}" in texts(at)
    attention_view, attribution_view = html_blocks(at)[:2]
    assert "striker" in attention_view and "striker" in attribution_view
    assert _shades(attention_view) != _shades(attribution_view)  # two different rankings, drawn
    at.radio(key="attribution").set_value("leave-one-out").run()
    assert "**leave-one-out** · Spearman ρ with attention:" in texts(at) and not at.exception


def _shades(view: str) -> list[str]:
    return re.findall(r"title=\"weight ([0-9.]+)\"", view)


def _open_with(params: dict) -> AppTest:
    at = AppTest.from_file(str(Path(APP).parent / "pages/explore.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_the_address_bar_reproduces_the_view(app_env):
    at = run_app(model="tiny-hcan")
    at.radio(key="target_head").set_value("head 2").run()
    at.radio(key="self_level").set_value("sentence").run()
    link = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert link["model"] == "tiny-hcan" and link["head"] == "head 2" and link["level"] == "sentence"
    assert link["sample"].startswith("tweets:")  # a built-in sample: any session can open it
    again = _open_with(link)  # a new session, as a colleague opening the link
    assert not again.exception  # and no warning but the tiny model's unknown words (the link itself works)
    assert all("unknown to tiny-hcan" in shown(w.value) or "is not in the model's vocabulary" in shown(w.value)
               or "unlike the model's own documents" in shown(w.value)  # the tiny model's own check, once computed
               for w in again.warning)
    assert again.selectbox(key="model").value == "tiny-hcan"
    assert again.text_area(key="document").value == at.text_area(key="document").value
    assert again.radio(key="target_head").value == "head 2" and again.radio(key="self_level").value == "sentence"
    from urllib.parse import parse_qsl

    copyable = next(m.value for m in again.markdown if m.value.startswith("`") and "model=" in m.value).strip("`")
    assert dict(parse_qsl(copyable.split("?", 1)[1])) == link


def test_a_pasted_document_survives_a_refresh_and_opens_from_a_link_in_another_session(app_env, tmp_path,
                                                                                        monkeypatch):
    """A refresh keeps the pasted document, and a shared link to it opens it, not a sample; once the
    server has let it go, the link asks for it again."""
    monkeypatch.setenv("HIERATTN_DOCUMENTS", str(tmp_path / "kept"))
    at = run_app(DOC, "tiny-han")
    link = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert len(link["doc"]) == 32 and "sample" not in link  # 128 bits (app/documents.py)
    elsewhere = _open_with(link)  # a refresh, or a colleague's browser: a new session
    assert not elsewhere.exception and not [w for w in elsewhere.warning if "link" in shown(w.value)]
    assert elsewhere.text_area(key="document").value == DOC
    assert elsewhere.selectbox(key="model").value == "tiny-han"
    shutil.rmtree(tmp_path / "kept")  # the server let it go (age, count or size)
    forgotten = _open_with(link)
    assert any("paste it again" in shown(w.value) for w in forgotten.warning)
    assert forgotten.selectbox(key="model").value == "tiny-han"


def test_a_link_with_values_that_do_not_fit_is_followed_as_far_as_it_can(app_env):
    at = _open_with({"model": "no-such-model"})
    assert not at.exception and any("no checkpoint" in shown(w.value) for w in at.warning)
    at = _open_with({"model": "tiny-hcan", "head": "head 99", "level": "paragraph", "sentence": "x",
                     "sample": "tweets:999"})
    assert not at.exception and any("no sample" in shown(w.value) for w in at.warning)
    assert at.radio(key="target_head").value == "mean of heads" and at.radio(key="self_level").value == "word"


def test_what_if_drops_a_sentence_and_replaces_a_word(app_env):
    at = run_app(DOC, "tiny-hcan")
    at.toggle(key="whatif").set_value(True).run()
    order = next(m for m in at.multiselect if m.key.startswith("whatif_order_"))
    assert order.value == [0, 1, 2]
    order.set_value([2, 0]).run()
    at.text_input(key="whatif_word").input("Fans").run()
    at.text_input(key="whatif_by").input("<b>squad</b>").run()
    assert not at.exception
    assert "Edit: dropped S2; new order S3 S1; 'Fans' → '<b>squad</b>'." in texts(at)
    labels = [shown(m.label) for m in at.metric]
    assert any(label.startswith("Before · P(") for label in labels)
    assert any(label.startswith("After · P(") for label in labels)
    before, after = html_blocks(at)[-2:]
    assert "line-through" in before and "outline:2px solid" in after
    assert "&lt;b&gt;squad&lt;/b&gt;" in re.sub(r"</?span[^>]*>", "", after) and "<b>squad" not in after
    order = next(m for m in at.multiselect if m.key.startswith("whatif_order_"))
    order.set_value([]).run()
    assert "Every sentence is dropped" in texts(at)


def test_drop_this_sentence_on_each_sentence(app_env):
    at = run_app(DOC, "tiny-hcan")
    at.toggle(key="whatif").set_value(True).run()
    drops = [b for b in at.button if b.key.startswith("drop_")]
    assert len(drops) == 3  # one per sentence of the document
    drops[1].click().run()
    assert not at.exception
    order = next(m for m in at.multiselect if m.key.startswith("whatif_order_"))
    assert order.value == [0, 2]
    assert "Edit: dropped S2." in texts(at)
    assert [b.key[-1] for b in at.button if b.key.startswith("drop_")] == ["0", "2"]  # S2's button is gone


@pytest.fixture
def long_reader(checkpoint_dir, tiny_vocab, tmp_path, monkeypatch):
    """Tiny checkpoints with caps high enough for long documents: hierarchical and flat HCAN."""
    import shutil

    import torch

    from hierattn.checkpoint.writing import save_checkpoint
    from hierattn.data.text import TextConfig
    from hierattn.models import build_model, sized_for_text
    from tests.tiny import LABELS

    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir / "tiny-han", root / "tiny-han")
    monkeypatch.setenv("HIERATTN_MAX_WORDS_READ", "6000")  # 200 x 30: over the default limit, as the docs say to
    monkeypatch.setenv("HIERATTN_MAX_EXPLANATION_CELLS", str(150_000_000))  # the flat one's 2 x 2 x 6000^2 cells
    monkeypatch.setenv("HIERATTN_MAX_WIDTH", "6000")  # and its 6,000-row table of positions
    torch.manual_seed(0)
    for name, config in (("long-hcan", {}), ("long-flat", {"hierarchical": False})):
        config = sized_for_text("hcan", config, 200, 30)  # as training sizes the positional tables
        model = build_model("hcan", {"vocab_size": len(tiny_vocab), "num_classes": 4, "d": 16, "heads": 2, **config})
        save_checkpoint(root / name, model, "hcan", tiny_vocab, LABELS, TextConfig(max_sentences=200, max_words=30), {})
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))


def _settled(at, seconds: float = 120) -> AppTest:
    return settle(at, seconds)


# every built-in model with an embedding table (TF-IDF has none)
WITH_EMBEDDINGS = ["tiny-hcan", "tiny-han", "tiny-han-cached", "tiny-hcan-flat-max", "tiny-sanet", "tiny-halstm",
                   "tiny-onlstm", "tiny-mahnn", "tiny-kimcnn"]


@pytest.mark.parametrize("model", [pytest.param(m, marks=pytest.mark.slow) if m != "tiny-hcan" else m
                                   for m in WITH_EMBEDDINGS])
def test_integrated_gradients_and_occlusion_beside_the_attention(app_env, model):
    at = run_app(DOC, model)
    if not at.toggle(key="faithfulness").label:
        pytest.fail("no 'Test the shading' toggle")
    at.toggle(key="faithfulness").set_value(True).run()
    _settled(at)
    assert at.radio(key="attribution").options == ["gradient × input", "integrated gradients", "leave-one-out"]
    assert "- integrated gradients: removing its top words (1 to " in texts(at)
    at.radio(key="attribution").set_value("integrated gradients").run()
    if model == "tiny-onlstm":  # no attention: the attribution alone, and why
        assert "**integrated gradients**" in texts(at) and "has no attention: the attribution shows" in texts(at)
    else:
        assert "**integrated gradients** · Spearman ρ with attention:" in texts(at)
    assert "Convergence delta: the words' scores add up to the logit's change" in texts(at)
    at.toggle(key="sentence_attributions").set_value(True).run()
    _settled(at)
    table = next(d.value for d in at.dataframe if "Shapley value (points)" in d.value.columns)
    assert list(table.columns) == ["sentence", "attention (%)", "occlusion (points)", "Shapley value (points)"]
    assert len(table) == 3 and table["sentence"].iloc[0].startswith("S1: The striker")
    assert "the Shapley values are exact: all 8 subsets of the 3 sentences were read" in texts(at)
    at.toggle(key="sentence_attributions").set_value(False).run()
    at.toggle(key="faithfulness").set_value(False).run()


def test_the_trust_panel_ranks_captums_attributions_beside_the_attention(app_env):
    at = run_app(DOC, "tiny-han")
    at.toggle(key="trust").set_value(True).run()
    _settled(at)
    own, references = [d.value for d in at.table if "verdict" in d.value.columns][:2]
    assert {("comprehensiveness (two-stage)", "word"), ("Kendall tau with IG", "word"),
            ("Kendall tau with IG", "sentence")} <= set(zip(own["test"], own["level"]))
    assert set(zip(references["test"], references["level"])) >= {
        ("comprehensiveness (IG)", "word"), ("comprehensiveness (occlusion)", "word"),
        ("comprehensiveness (occlusion)", "sentence"), ("comprehensiveness (KernelSHAP)", "sentence")}
    assert not any("(IG)" in t or "(occlusion)" in t or "(KernelSHAP)" in t for t in own["test"])
    words = texts(at)
    assert "The attention's ranking beats random in" in words and "References: captum's attributions" in words
    assert words.index("The attention's ranking beats random in") < words.index("The attention's own tests")
    at.toggle(key="trust").set_value(False).run()


@pytest.mark.slow
def test_long_documents_page_by_sentence_and_show_an_overview(long_reader):
    text = " ".join(f"The team won match number {i} on Sunday." for i in range(150))  # 150 sentences, 1,200 words
    at = run_app(text, "long-hcan")
    pager = next(n for n in at.number_input if n.key.startswith("page_"))
    assert pager.max == 4 and "150 in all" in pager.label
    first = re.sub(r"<[^>]+>", "", html_blocks(at)[0])
    assert "match number 0 " in first and "match number 40 " not in first
    pager.set_value(2).run()
    second = re.sub(r"<[^>]+>", "", html_blocks(at)[0])
    assert "match number 40 " in second and "match number 0 " not in second
    at.toggle(key="whatif").set_value(True).run()
    drops = [int(b.key.rsplit("_", 1)[1]) for b in at.button if b.key.startswith("drop_")]
    assert drops == list(range(40, 80))  # "drop this sentence" for the sentences of the page shown
    at.toggle(key="whatif").set_value(False).run()
    at.toggle(key="faithfulness").set_value(True).run()
    settle(at, 120)
    assert "Leave-one-out is left out" in texts(at) and "- random: removing random words" in texts(at)
    assert "leave-one-out: removing its top words" not in texts(at)
    assert at.radio(key="attribution").options == ["gradient × input", "integrated gradients"]
    at.toggle(key="faithfulness").set_value(False).run()  # else the next model's curves start in the background
    at.selectbox(key="model").set_value("long-flat").run()
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("overview: 1350 positions in blocks of 14" in t for t in titles)  # 150 x 9 tokens
    assert at.slider(key="self_window").max == 1350 - 60 + 1  # a zoom of 60: every word named


def test_tables_download_as_csv_and_json(app_env):
    at = run_app(DOC, "tiny-hcan")
    keys = {b.key for b in at.get("download_button")}
    assert {"metrics_table_csv", "metrics_table_json", "export_json", "export_attention", "export_metrics",
            "export_report"} <= keys


def test_an_export_popover_draws_its_buttons_only_while_open(app_env):
    """A paste sends no figure's export buttons (most runs never open a popover); each popover,
    once open, has its four formats under the figure's own key."""
    from tests.app.test_pages import open_exports

    at = run_app(DOC, "tiny-hcan")
    menus = [m.proto.popover.id.split("-", 2)[-1] for m in at.get("popover")]
    figures = [k.removeprefix("export_menu_") for k in menus if k.startswith("export_menu_")]
    assert len(figures) >= 3  # the probabilities, a heatmap, the distributions
    assert not [b.key for b in at.get("download_button") if b.key.removeprefix("export_").rpartition("_")[0]
                in figures]
    keys = {b.key for b in open_exports(at).get("download_button")}
    assert not at.exception
    assert all({f"export_{f}_{fmt}" for fmt in ("png", "svg", "pdf", "html")} <= keys for f in figures)


def test_picking_a_word_shows_what_it_attends_to_in_every_head(app_env):
    """The interaction people use BertViz for: a word picked (or its heatmap row clicked)
    shows its row of attention in each head and their mean, shaded over the sentence's words."""
    at = run_app(DOC, "tiny-hcan")
    pills = next(w for w in at.get("button_group") if str(w.proto.label).startswith("What does a word attend"))
    assert not [b for b in html_blocks(at) if "outline:2px solid #d62728" in b]  # nothing picked yet
    at.session_state[pills.key] = 1  # "striker"
    at.run()
    assert not at.exception
    view = next(b for b in html_blocks(at) if "outline:2px solid #d62728" in b)
    assert view.count("head ") == 2 and "mean of heads" in view  # tiny-hcan has two heads
    assert re.search(r"outline:2px solid #d62728[^>]*>striker<", view)
    assert "“striker” (outlined)" in texts(at)


def test_the_first_screen_welcomes_and_points_to_the_tour(app_env):
    """The first thing the landing page says is a welcome and the way to the Tour, not a model's
    limits (it once opened on "HAN has no self-attention")."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    words = texts(at)
    assert words.startswith("#### Welcome to hierattn")  # before anything else the page says
    links = at.get("page_link")
    assert any("Tour" in link.proto.label for link in links) or "Tour" in words
    at.button(key="welcome_hide").click().run()
    assert "Welcome to hierattn" not in texts(at) and not at.exception


def test_a_model_read_far_beyond_the_lengths_its_paper_tested_says_so(checkpoint_dir, tmp_path, monkeypatch):
    """MahNN's data sets average 3-23 words a text; trained to read articles of up to
    1,000 words, the app says the paper never tested it there. At tweet caps it says nothing."""
    import shutil

    from hierattn.app.loading import untested_length
    from hierattn.checkpoint.reading import load_classifier
    from tests.conftest import edit_config

    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir / "tiny-mahnn", root / "long-mahnn")
    edit_config(root / "long-mahnn", lambda c: c["text"].update(max_sentences=25, max_words=40))
    assert untested_length(load_classifier(checkpoint_dir / "tiny-mahnn", device="cpu")) == ""  # 72 words read
    assert untested_length(load_classifier(checkpoint_dir / "tiny-han", device="cpu")) == ""  # no such bound
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60).run()
    assert not at.exception
    notes = " ".join(c.value for c in at.sidebar.caption)
    assert "average 3 to 23 words: it was never tested on texts as long as the 1,000 words this one reads" in notes

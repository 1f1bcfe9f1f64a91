"""Compare, Dataset statistics and Evaluation pages, headless (AppTest): on the shipped checkpoints,
and, where a page reads a whole split or several models, on their tiny stand-ins (``stand_ins``)."""
import json
import time

import pytest
from streamlit.testing.v1 import AppTest

from hierattn.app.panels.trust import NULL
from tests.conftest import REPO, shown


@pytest.fixture(autouse=True)
def shipped_checkpoints(monkeypatch):
    monkeypatch.delenv("HIERATTN_CHECKPOINTS", raising=False)


def open_page(page: str, **state) -> AppTest:
    # Page files run on their own: clicks are not delivered to a page reached with switch_page.
    at = AppTest.from_file(str(REPO / page), default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    return settle(at.run())


def open_exports(at: AppTest) -> AppTest:
    """Open every figure's Export popover, as a click does (its buttons are drawn only while open)."""
    for menu in at.get("popover"):
        key = menu.proto.popover.id.split("-", 2)[-1]  # a keyed popover's id: "$$ID-<hash>-<its key>"
        if key.startswith("export_menu_"):
            at.session_state[key] = True
    return at.run()


def settle(at: AppTest, limit: float = 240) -> AppTest:
    """Rerun until no background computation shows a progress bar. Between reruns, wait on the
    computations themselves: a rerun every half second, as the page polls, took the interpreter
    lock from them on 2 cores. A rerun at least every ``tasks.LEASE / 2`` seconds renews the page's
    claim on them (outside a server a claim lapses after ``LEASE``)."""
    from hierattn.app import tasks

    deadline = time.monotonic() + limit
    while at.get("progress") and time.monotonic() < deadline:
        renew = min(time.monotonic() + tasks.LEASE / 2, deadline)
        while time.monotonic() < renew and any(not t.finished for t in list(tasks._results().running.values())):
            time.sleep(0.05)
        at.run()
    assert not at.get("progress"), "a computation did not finish"
    assert not at.exception, at.exception
    return at


def html_blocks(at) -> list[str]:
    return [e.proto.body for e in at.get("html")]


def test_compare_han_and_hcan_side_by_side():
    at = open_page("pages/compare.py")
    assert at.selectbox(key="compare_a").value == "bbc-news-han"
    assert at.selectbox(key="compare_b").value == "bbc-news-hcan"
    assert [m.label for m in at.metric] == ["Prediction", "Prediction"]
    assert [s.value for s in at.subheader] == ["Where each model looks", "Agreement",
                                              "Self-attention over the same sentence", "What one word attends to"]
    agreement = at.dataframe[0].value
    assert list(agreement["measure"]) == ["Spearman rank correlation", "top-5 overlap", "top-10 overlap"]
    assert list(agreement.columns[1:]) == [c for c in agreement.columns[1:] if c.endswith("(if unrelated)")]
    words = [float(cell.split(" ")[0]) for cell in agreement.iloc[:, 1]]  # "0.62 (0.00)": the figure, then chance
    assert -1 <= words[0] <= 1 and all(0 <= v <= 1 for v in words[1:])
    assert not any("None" in cell or "nan" in cell for column in agreement.columns[1:] for cell in agreement[column])
    blocks = html_blocks(at)
    assert sum('class="ha-w' in b for b in blocks) >= 3  # both documents and HCAN's word lines
    charts = at.get("plotly_chart")
    assert len(charts) == 3  # two probability charts, HCAN's heatmap (HAN has none)
    heatmap = json.loads(charts[2].proto.spec)
    assert heatmap["layout"]["meta"]["kind"] == "attention" and heatmap["layout"].get("width") is None  # fills
    # alone, it stands under its own model's heading, not under both columns (there it stood under A's)
    holder = [c for c in at.columns if any(json.loads(p.proto.spec)["layout"].get("meta", {}).get("kind") ==
                                           "attention" for p in c.get("plotly_chart"))]
    assert len(holder) == 1 and any(m.value.startswith("**B: HCAN") for m in holder[0].markdown)


def test_compare_two_self_attention_models_and_the_difference_map():
    at = open_page("pages/compare.py", compare_a="bbc-news-sanet")
    charts = at.get("plotly_chart")
    assert len(charts) == 4  # both heatmaps, same sentence, each filling its column
    assert all(json.loads(c.proto.spec)["layout"].get("width") is None for c in charts[2:])
    assert any("block of its document-wide matrix" in c.value for c in at.caption)
    at.session_state["compare_view"] = "difference"
    settle(at.run())
    assert any("A − B" in b for b in html_blocks(at))
    at.text_area(key="compare_document").input("<script>alert(1)</script> Hello there. The market <b>fell</b>.").run()
    settle(at)
    joined = "\n".join(html_blocks(at))
    assert "<script>" not in joined and "<b>" not in joined
    assert "&lt;" in joined and "&gt;" in joined  # the pasted tags are shown as text


def test_statistics_table_for_a_few_documents():
    at = open_page("pages/1_statistics.py", stats_documents=12)
    assert at.selectbox(key="stats_model").value == "bbc-news-hcan"
    table = at.dataframe[0].value
    assert list(table.index) == ["Gini coefficient"] + [f"Diagonality (bandwidth = {b})" for b in range(1, 6)]
    assert list(table.columns) == ["measured", "even spread", "excess"]
    values, even = table["measured"], table["even spread"]
    assert all(0 < v < 100 for v in values) and list(values.iloc[1:]) == sorted(values.iloc[1:])  # wider band, more
    assert even.iloc[0] == 0 and all(0 < v < 100 for v in even.iloc[1:])  # an even spread: Gini 0, some diagonality
    assert list(table["excess"]) == pytest.approx(list(values - even))
    assert any("Read the excess" in c.value for c in at.caption)
    assert any("12 documents" in c.value for c in at.caption)
    downloads = {b.key for b in at.get("download_button")}
    assert {"stats_csv", "stats_table_csv"} <= downloads  # the two tables
    assert not [k for k in downloads if k.startswith("export_gini")]  # the Export popover is closed
    downloads = {b.key for b in open_exports(at).get("download_button")}
    assert {k.rsplit("_", 1)[1] for k in downloads if k.startswith("export_gini")} == {"png", "svg", "pdf",
                                                                                       "html"}  # the box plot
    at.session_state["stats_grouping"] = "level"
    settle(at.run())
    assert list(at.dataframe[0].value.columns) == [f"{level} · {kind}" for level in ("sentence", "word")
                                                   for kind in ("measured", "even spread", "excess")]


def test_statistics_page_says_when_a_model_has_no_self_attention():
    at = open_page("pages/1_statistics.py", stats_model="bbc-news-han", stats_documents=5)
    assert any("has no self-attention" in i.value for i in at.info)


@pytest.mark.slow
def test_topic_versus_sentiment_panel(stand_ins):
    at = open_page("pages/1_statistics.py", stats_model="bbc-news-sanet", stats_documents=3,
                   stats_topic="bbc-news-sanet", stats_sentiment="tweets-sanet")
    at.button(key="stats_pair_go").click().run()
    settle(at)
    table = next(d.value for d in at.dataframe if "raw difference" in d.value.columns)
    # no length-matched columns: these two models share no length (below)
    assert list(table.columns) == ["topic · measured", "topic · even spread", "sentiment · measured",
                                   "sentiment · even spread", "topic (SANet paper)", "sentiment (SANet paper)",
                                   "raw difference"]
    assert table.loc["Gini coefficient", "topic (SANet paper)"] == pytest.approx(63.5667, abs=1e-3)
    b3 = table.loc["Diagonality (bandwidth = 3)"]
    assert b3["raw difference"] == pytest.approx(b3["sentiment · measured"] - b3["topic · measured"])
    verdicts = [m.value for m in at.markdown if "the raw means would say" in m.value]
    assert len(verdicts) == 2
    # flat SANet over whole articles against tweets: no length in common, so no finding, and the page says why
    assert all("**no finding**" in v for v in verdicts) and any("no lengths in common" in i.value for i in at.info)


def test_the_evaluation_page_shows_the_shipped_models_recorded_accuracy():
    """The smoke case on a shipped checkpoint: the page's figures are the recorded ones."""
    at = open_page("pages/evaluation.py", eval_model="bbc-news-han")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == "223" and metrics["Accuracy"] == "97.31%"  # docs/RESULTS.md's number
    assert len(at.dataframe[1].value) == int(metrics["Misclassified"]) == 6


@pytest.mark.slow
def test_evaluation_page_and_opening_a_mistake_in_explore(stand_ins):
    at = open_page("pages/evaluation.py", eval_model="bbc-news-han")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == "223"  # the whole test split
    report = at.dataframe[0].value
    assert list(report["class"]) == ["business", "entertainment", "politics", "sports", "tech", "macro mean",
                                     "weighted mean"]
    wrong = at.dataframe[1].value
    assert len(wrong) == int(metrics["Misclassified"])
    # the registry's orderings on the page are docs/RESULTS.md's, decided from results/
    from hierattn.experiments.report import readme_sections

    orderings = readme_sections()["orderings:bbc-news"]
    assert any(m.value.strip() == orderings.strip() for m in at.markdown)
    at.button(key="eval_all").click().run()
    settle(at)
    results = at.dataframe[2].value
    assert set(results["checkpoint"]) == {"bbc-news-han", "bbc-news-hcan", "bbc-news-sanet"}  # the data set's
    assert list(results["test accuracy"]) == sorted(results["test accuracy"], reverse=True)
    # the Explore page takes a document handed over by the Evaluation page's button
    at = open_page("pages/explore.py",
                   explore_request={"checkpoint": "bbc-news-han", "text": "Petrol duties frozen. Brown says."})
    assert at.selectbox(key="model").value == "bbc-news-han"
    assert at.text_area(key="document").value == "Petrol duties frozen. Brown says."
    assert "explore_request" not in at.session_state


def test_compare_with_a_one_word_sentence():
    at = open_page("pages/compare.py", compare_a="bbc-news-sanet",
                   compare_document="Markets\nThe market fell sharply today after the bank raised rates.")
    assert not at.get("select_slider")  # one word: nothing to pick
    assert sum("outline:2px" in b for b in html_blocks(at)) == 2  # both models' lines for the word


def test_statistics_page_survives_a_corrupted_checkpoint(checkpoint_dir, tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir, root)
    (root / "tiny-sanet" / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = open_page("pages/1_statistics.py", stats_model="tiny-hcan", stats_documents=5)
    options = at.selectbox(key="stats_topic").options
    assert "tiny-hcan · HCAN" in options and not any(o.startswith("tiny-sanet") for o in options)


@pytest.mark.slow
def test_statistics_erasure_curves_over_a_split(stand_ins):
    at = open_page("pages/1_statistics.py", stats_model="tweets-hcan", stats_dataset="tweets", stats_documents=20,
                   erasure_documents=10)
    assert at.toggle(key="erasure_occlusion").value  # tweets are short: leave-one-out is on by default
    at.button(key="erasure_go").click().run()
    settle(at)
    table = next(d.value for d in at.dataframe if "mean drop (points)" in d.value.columns)
    assert list(table["method"]) == ["attention", "gradient × input", "integrated gradients", "leave-one-out",
                                     "sentence attention × even words", "random"]
    assert table.loc[table["method"] == "random", "vs random (points)"].item() == 0.0
    assert any("10 documents" in c.value or "documents. Mean Spearman" in c.value for c in at.caption)
    at.run()  # the result stays on the page after another rerun
    assert any("mean drop (points)" in d.value.columns for d in at.dataframe)


def test_a_compare_link_reopens_the_comparison():
    at = open_page("pages/compare.py", compare_a="tweets-han", compare_b="tweets-hcan")
    link = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert link["a"] == "tweets-han" and link["b"] == "tweets-hcan" and "sample" in link
    again = AppTest.from_file(str(REPO / "pages/compare.py"), default_timeout=120)
    for k, v in link.items():
        again.query_params[k] = v
    again = settle(again.run())
    assert again.selectbox(key="compare_a").value == "tweets-han"
    assert again.selectbox(key="compare_b").value == "tweets-hcan"
    assert again.text_area(key="compare_document").value == at.text_area(key="compare_document").value


@pytest.mark.slow
def test_topic_versus_sentiment_at_matched_lengths(stand_ins):
    """Two hierarchical models, whose word-level matrices (sentences) share lengths: the panel
    compares them within length buckets, with the interval, and lists the buckets."""
    at = open_page("pages/1_statistics.py", stats_model="tweets-hcan", stats_dataset="tweets", stats_documents=3,
                   stats_topic="bbc-news-hcan", stats_sentiment="tweets-hcan")
    at.button(key="stats_pair_go").click().run()
    settle(at)
    table = next(d.value for d in at.dataframe if "raw difference" in d.value.columns)
    assert list(table.columns)[-3:] == ["length-matched difference", "interval low", "interval high"]
    gini = table.loc["Gini coefficient"]
    assert gini["interval low"] <= gini["length-matched difference"] <= gini["interval high"]
    verdicts = [m.value for m in at.markdown if "the raw means would say" in m.value]
    assert len(verdicts) == 2 and all("points at matched lengths" in v for v in verdicts)
    assert any("length buckets both sets share" in e.proto.label for e in at.get("expander"))


def test_compare_with_on_lstm_says_it_has_no_word_weights(app_env):
    at = open_page("pages/compare.py", compare_a="tiny-onlstm", compare_b="tiny-han",
                   compare_document="The market rallied today. Shares rose sharply!")
    assert not at.exception
    said = " ".join(str(e.value) for kind in ("info", "caption", "markdown") for e in getattr(at, kind))
    assert "Model A (ON-LSTM) has no attention: nothing to shade" in said
    assert len([m for m in at.metric if m.label.startswith("Prediction")]) == 2


@pytest.mark.slow
def test_statistics_battery_over_a_split_with_intervals(stand_ins):
    at = open_page("pages/1_statistics.py", stats_model="tweets-han", stats_dataset="tweets", stats_documents=20,
                   battery_documents=10)
    at.button(key="battery_go").click().run()
    settle(at)
    assert not at.exception, at.exception
    table = next(d.value for d in at.table if "baseline [95%]" in d.value.columns)
    row = table[table["test"] == "comprehensiveness (two-stage)"].iloc[0]  # HAN's words: the two-stage product
    assert row["baseline [95%]"].startswith("random words: ") and row["difference [95%]"].count("[") == 1
    beside = next(d.value for d in at.table if f"{NULL} [95%]" in d.value.columns)
    row = beside[beside["test"] == "comprehensiveness (two-stage)"].iloc[0]
    assert row["difference from it [95%]"].count("[") == 1 and set(beside["level"]) == {"word"}
    accuracy = next(d.value for d in at.table if "accuracy, uniform attention" in d.value.columns)
    assert set(accuracy["attention replaced at"]) == {"word", "sentence", "both"}
    at.run()  # kept: the result stays on the page after another rerun
    assert any("mean [95% interval]" in d.value.columns for d in at.table)


def test_every_page_is_served_at_its_files_name():
    """A fresh server's first visitor is served in the pages-folder mode (hierattn/app/routing.py),
    which finds a page by its file's name (a leading "1_" stripped): a url_path of another name
    opened "Page not found"."""
    import ast

    calls = [n for n in ast.walk(ast.parse((REPO / "app.py").read_text()))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "Page"]
    assert len(calls) == len(list((REPO / "pages").glob("*.py"))) == 6
    assert not [c for c in calls if any(k.arg == "url_path" for k in c.keywords)]


def test_evaluation_opens_on_the_models_own_data_and_offers_only_data_sets_with_its_classes():
    """A data set chosen for one model does not stay when another is picked: Evaluation showed a
    red label mismatch, and Dataset statistics computed a model's attention over another data set."""
    at = open_page("pages/evaluation.py", eval_model="tweets-han")
    assert at.selectbox(key="eval_dataset").options == ["tweets"] and at.selectbox(key="eval_dataset").value == "tweets"
    at.selectbox(key="eval_model").set_value("bbc-news-han").run()
    settle(at)
    assert at.selectbox(key="eval_dataset").value == "bbc-news" and not at.exception
    stats = open_page("pages/1_statistics.py", stats_model="tweets-han", stats_dataset="tweets", stats_documents=3)
    stats.selectbox(key="stats_model").set_value("bbc-news-han").run()
    assert stats.selectbox(key="stats_dataset").value == "bbc-news"


@pytest.mark.slow
def test_explore_says_whether_a_text_is_like_the_models_own_beside_its_baseline():
    article = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=120)
    article.session_state["model"] = "tweets-han"
    article = settle(article.run())
    words = shown("\n".join(c.value for c in article.caption))
    assert "Like the model's own documents?" in words and "tweets test documents" in words  # a tweet: its own kind
    article.text_area(key="document").input(
        "The Chancellor announced that corporation tax relief for manufacturers would be extended until 2027, "
        "while the Treasury forecast that inflation would ease. Economists at several banks said the measures "
        "were modest, and shares in engineering firms rose on the London Stock Exchange after the statement. "
        "Opposition spokesmen criticised the timing of the announcement before the parliamentary recess.").run()
    settle(article)
    warning = next(shown(w.value) for w in article.warning if "unlike the model" in w.value)
    assert "rare for the model" in warning and "as many or more in" in warning and "under 1.25%" in warning, warning


def test_the_statistics_page_computes_inside_the_servers_budget_for_explanations(monkeypatch):
    """Dataset statistics started its split-wide computation as soon as a model was picked, outside
    the budget every explanation waits for: its batches now hold what one explanation may, and the
    whole computation holds that much of the budget while it runs."""
    from hierattn.app import admission as admission_module
    from hierattn.app.admission import PEAK_PER_CELL, Admission
    from hierattn.limits import EXPLANATION_CELLS

    held = []
    real = Admission.admitted

    def recorded(self, cost, on_wait=None):
        held.append(cost)
        return real(self, cost, on_wait)

    monkeypatch.setattr(Admission, "admitted", recorded)
    at = open_page("pages/1_statistics.py", stats_documents=7)
    assert at.dataframe and held, "the statistics ran, admitted"
    assert 0 < max(held) <= PEAK_PER_CELL * EXPLANATION_CELLS.value
    assert admission_module.admission().held == 0  # given back once computed


def test_a_linked_checkpoint_folder_is_named_in_the_sidebar_not_skipped_silently(checkpoint_dir, tmp_path,
                                                                                 monkeypatch):
    import shutil

    outside, root = tmp_path / "elsewhere", tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir / "tiny-hcan", outside / "mine")
    shutil.copytree(checkpoint_dir / "tiny-han", root / "tiny-han")
    (root / "mine").symlink_to(outside / "mine")
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    monkeypatch.setenv("HIERATTN_SHIPPED", "0")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    said = " ".join(shown(c.value) for c in at.sidebar.caption)
    assert "`mine` is not listed: it is a link to a folder outside" in said and not at.exception
    assert "mine" not in at.selectbox(key="model").options

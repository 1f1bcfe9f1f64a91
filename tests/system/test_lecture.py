"""A lecture prepared from the exports, in one browser session: Explore, every step of the Tour,
Evaluation, Dataset statistics, Compare and Train (a model trained on an uploaded file), each page
reached from the sidebar (one Streamlit session throughout), every Export popover's SVG
downloaded. Each slide's subtitle names that figure's own model (never one another page picked:
the subtitle was once kept per session, and Explore's model and article were printed on the Tour's
slides), and no two pieces of its text overlap once Chromium lays it out. The data set pickers keep
the chosen model's data set (the uploaded file's, for the model trained on it) across unrelated
clicks and a reload."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hierattn.app.panels.tour.steps import STEPS
from tests.system.conftest import END_TO_END, choose, no_exception, settle
from tests.viz.test_slides import TEXT_BOXES, overlapping

pytestmark = END_TO_END
EXPLORED = "tiny-hcan"  # Explore's model: no other page's slide may name it


def _subtitle(svg: bytes) -> str:
    found = [e for e in ET.fromstring(svg).iter() if e.get("class") == "gtitle-subtitle"]
    return "".join(found[0].itertext()).strip() if found else ""


def _picked(page, n: int) -> str:
    """What the sidebar's n-th select box shows (its text, or its input's value)."""
    box = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").nth(n)
    return box.evaluate("e => e.innerText + ' ' + [...e.querySelectorAll('input')].map(i => i.value).join(' ')")


def _go(page, title: str) -> None:
    page.locator("[data-testid=stSidebarNav] a").filter(has_text=title).first.click()
    settle(page)


# each chart's texts on the page, as TEXT_BOXES gives them for a slide
CHART_BOXES = "() => [...document.querySelectorAll('.js-plotly-plot')].map(chart => (" + TEXT_BOXES.replace(
    "document.querySelectorAll('svg text')", "chart.querySelectorAll('svg text')").removeprefix("() => ") + "))"


def _on_page(page, where: str) -> list[str]:
    """Text over text in the page's own charts, at a projector's widths (a legend one row wide once
    sat on the axis title at 1920 px, and wrapped clear of it at 1024)."""
    wrong = []
    for width in (1024, 1920):
        page.set_viewport_size({"width": width, "height": 1800})
        page.wait_for_timeout(800)  # the charts redraw for their new width
        for n, boxes in enumerate(page.evaluate(CHART_BOXES)):
            if found := overlapping(boxes):
                wrong.append(f"{where} chart {n + 1} at {width} px: text overlaps {found[:3]}")
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.wait_for_timeout(800)
    return wrong


def _slides(page, browser) -> list[tuple[str, str, list]]:
    """Every Export popover on the page: (file name, subtitle, overlapping texts) of its SVG."""
    measure = browser.new_page(viewport={"width": 1600, "height": 900})
    out = []
    popovers = page.get_by_role("button", name="Export")
    for i in range(popovers.count()):
        popovers.nth(i).scroll_into_view_if_needed()
        popovers.nth(i).click()
        body = page.locator("[data-testid=stPopoverBody]").last
        body.wait_for(timeout=60_000)
        with page.expect_download(timeout=120_000) as download:
            body.get_by_role("button", name="SVG", exact=True).click()
        svg = Path(download.value.path()).read_bytes()
        measure.set_content(f"<html><body style='margin:0'>{svg.decode()}</body></html>")
        out.append((download.value.suggested_filename, _subtitle(svg), overlapping(measure.evaluate(TEXT_BOXES))))
        page.keyboard.press("Escape")
        body.wait_for(state="hidden", timeout=60_000)
    measure.close()
    return out


def _check(slides, owners: tuple[str, ...], where: str) -> list[str]:
    """What is wrong with ``slides``: a subtitle that names none of ``owners`` or names Explore's
    model, and text over text."""
    wrong = []
    for name, subtitle, overlaps in slides:
        if not any(o in subtitle for o in owners) or (EXPLORED in subtitle and not any(EXPLORED in o for o in owners)):
            wrong.append(f"{where} {name}: subtitle {subtitle!r}, expected one of {owners}")
        if overlaps:
            wrong.append(f"{where} {name}: text overlaps {overlaps[:3]}")
    return wrong


def test_every_slide_of_a_lecture_names_its_own_model_and_no_text_overlaps(served_app, page, browser):
    page.goto(f"{served_app.url}/?model={EXPLORED}")
    page.get_by_text("Prediction").first.wait_for(timeout=240_000)
    settle(page)
    slides = _slides(page, browser)
    assert len(slides) >= 3
    wrong = _check(slides, (f"{EXPLORED} ",), "Explore") + _on_page(page, "Explore")

    _go(page, "Tour")
    for number, (title, needed, _) in STEPS.items():
        page.get_by_text(title, exact=True).first.click()
        settle(page)
        no_exception(page)
        wrong += _check(_slides(page, browser), (*(f"{n} " for n in needed), "HAN and HCAN on", "recorded runs of"),
                        f"Tour step {number}")
        wrong += _on_page(page, f"Tour step {number}")

    _go(page, "Evaluation")
    choose(page, "Model", "bbc-news-han")
    slides = _slides(page, browser)
    assert slides, "Evaluation's confusion matrix has an Export"
    wrong += _check(slides, ("bbc-news-han · bbc-news, test split", "bbc-news · the experiments registry"),
                    "Evaluation") + _on_page(page, "Evaluation")

    _go(page, "Dataset statistics")
    choose(page, "Model", "tweets-sanet")
    choose(page, "Model", "bbc-news-sanet")  # another model: its own data set, in the browser too
    page.get_by_text("Distribution of").first.wait_for(timeout=240_000)
    settle(page)
    for _ in range(3):  # other clicks send the browser's widget values back: they must still be bbc-news's
        for rows in ("level", "overall"):  # the "Rows of the table" buttons
            page.locator("[data-testid=stButtonGroup] button").filter(has_text=re.compile(f"^{rows}$")).first.click()
            settle(page)
    assert "bbc-news" in _picked(page, 1) and "tweets" not in _picked(page, 1)
    assert "its attention over" not in page.inner_text("body")  # no other data set's statistics
    wrong += _check(_slides(page, browser), ("bbc-news-sanet · bbc-news, test split",), "Dataset statistics")
    wrong += _on_page(page, "Dataset statistics")
    assert "data=bbc-news" in page.url and "model=bbc-news-sanet" in page.url
    page.reload()
    page.get_by_text("Distribution of").first.wait_for(timeout=240_000)
    settle(page)
    assert "bbc-news" in _picked(page, 1) and "bbc-news-sanet" in _picked(page, 0)

    _go(page, "Compare")
    page.get_by_text("Agreement").first.wait_for(timeout=240_000)
    settle(page)
    slides = _slides(page, browser)
    assert any(name.startswith("where-each-model-looks") for name, _, _ in slides), "the shaded text's slide"
    wrong += _check(slides, ("A: ", "B: ", "bbc-news-han (", "bbc-news-hcan ("), "Compare") + _on_page(page, "Compare")
    no_exception(page)

    wrong += _train_on_a_file(page, browser)
    for where, ready, click in (("Evaluation", "Accuracy", _other_split), ("Dataset statistics", "Distribution of",
                                                                           _other_rows)):
        _go(page, where)
        choose(page, "Model", TRAINED)
        page.get_by_text(ready).first.wait_for(timeout=240_000)
        assert "films (held out with the model)" in _picked(page, 1), (where, _picked(page, 1))
        for n in range(5):  # clicks on something else: the browser sends its widget values back each time
            click(page, n)
        assert "films (held out with the model)" in _picked(page, 1), (where, "after five clicks", _picked(page, 1))
        assert f"model={TRAINED}" in page.url and "data=films" in page.url, page.url
        page.reload()
        page.get_by_text(ready).first.wait_for(timeout=240_000)
        settle(page)
        assert TRAINED in _picked(page, 0) and "films (held out with the model)" in _picked(page, 1), (where, "reload")
        no_exception(page)
    assert not wrong, "\n".join(wrong)


TRAINED = "lecture-films-hcan"


def _train_on_a_file(page, browser) -> list[str]:
    """Train a small HCAN on an uploaded CSV from the Train page; export its curve, its sharpness
    chart and its playback (the chart and the slide of the start beside an epoch); what is wrong
    with those slides."""
    from tests.app.test_train_page import toy_csv

    _go(page, "Train")
    page.get_by_text("my own file (CSV, TSV or JSONL)").click()
    settle(page)
    page.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files(
        files=[{"name": "films.csv", "mimeType": "text/csv", "buffer": toy_csv()}])
    page.get_by_text("Stratified split").first.wait_for(timeout=60_000)
    settle(page)
    choose(page, "Architecture", "HCAN (hierarchical convolutional attention)")
    for label, value in (("Model width d", "16"), ("Heads", "2"), ("Epochs", "3"), ("Batch size", "8"),
                         ("Run name", TRAINED)):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
        settle(page)
    page.get_by_role("button", name="Start training").click()
    page.get_by_role("button", name="Open it in Explore").wait_for(timeout=240_000)
    settle(page)
    no_exception(page)
    from tests.system.conftest import ARTIFACTS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width in (1024, 1920):  # the finished run as a projector shows it
        page.set_viewport_size({"width": width, "height": 1400})
        settle(page)
        page.get_by_role("button", name="Open it in Explore").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"lecture-train-{width}.png"))
    page.set_viewport_size({"width": 1400, "height": 1800})
    slides = _slides(page, browser)
    names = sorted(name for name, _, _ in slides)
    wrong = [] if len(slides) == 4 else [f"Train: exports {names}, expected the curve, the sharpness chart and the "
                                         "playback's chart and slide"]
    return wrong + _check(slides, (f"{TRAINED} (HCAN) · trained on films",), "Train") + _on_page(page, "Train")


def _other_split(page, n: int) -> None:
    choose(page, "Split", ("validation", "test")[n % 2])


def _other_rows(page, n: int) -> None:
    rows = ("level", "overall")[n % 2]
    page.locator("[data-testid=stButtonGroup] button").filter(has_text=re.compile(f"^{rows}$")).first.click()
    settle(page)


@pytest.mark.parametrize("width", [1024, 1920])
def test_the_pages_at_lecture_widths(served_app, browser, width, tmp_path):
    """Screenshots of Compare and Dataset statistics at a projector's widths, kept as artefacts."""
    from tests.system.conftest import ARTIFACTS

    page = browser.new_page(viewport={"width": width, "height": 1400})
    for path, ready in (("compare", "Agreement"), ("statistics?model=bbc-news-sanet", "Distribution of")):
        page.goto(f"{served_app.url}/{path}")
        page.get_by_text(ready).first.wait_for(timeout=240_000)
        settle(page)
        no_exception(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"lecture-{path.split('?')[0]}-{width}.png"), full_page=True)
    page.close()

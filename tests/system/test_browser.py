"""End to end in a real browser, with the quick tier: the shared served app (``conftest.served_app``,
tiny checkpoints) driven by Playwright through Debian's Chromium, as a visitor clicks. What the
pages compute is checked headless (tests/app); here, what only a browser shows: escaping, links,
downloads, two tabs at once, and (the ``page`` fixture) JavaScript errors and anything fetched from
outside the server."""

import pytest

from tests.system.conftest import ARTIFACTS, SYSTEM, choose, no_exception, settle, toggle
from tests.tiny import HOSTILE_LABELS

pytestmark = SYSTEM
DOCUMENT = ("Shares in the carmaker fell sharply on Monday after it warned that profits would drop. "
            "The company blamed higher steel prices and a weak dollar for the slump. "
            "Analysts said the firm's sales in Europe had also disappointed investors. "
            "<script>alert('x')</script> The chief executive said he expected a recovery next year.")
REVIEW = ("I bought this blender last month. It was loud and the lid cracked after a week. "
          "Customer service never answered my emails. The motor is strong though. "
          "I would not buy it again and I returned it.")


def paste(page, text: str) -> None:
    box = page.get_by_role("textbox", name="Document", exact=True)
    box.fill(text)
    box.press("Control+Enter")
    settle(page)


# Words the browser draws on the shading's blue (the rules sit in the shading's own style block)
SHADED = ("() => [...document.querySelectorAll('[data-testid=stHtml] span.ha-w')]"
          ".filter(w => getComputedStyle(w).backgroundColor.startsWith('rgba(31, 119, 180')).length")


def shaded_words(page) -> int:
    return page.evaluate(SHADED)


def test_explore_paste_switch_models_and_heads(served_app, page):
    page.goto(f"{served_app.url}/?model=tiny-hcan")
    settle(page)
    no_exception(page)
    paste(page, DOCUMENT)
    no_exception(page)
    assert page.locator(".js-plotly-plot").count() >= 3  # probabilities, distribution, heatmap
    assert shaded_words(page) > 20  # every word the model reads is shaded
    document_view = page.locator("[data-testid=stHtml]").first
    # each word its own span, and spaCy's sentencizer keeps the "<" with the sentence before it
    assert "script>alert('x')</script>" in "".join(document_view.inner_text().split())
    assert document_view.locator("script").count() == 0  # shown as text, not run
    page.get_by_text("head 2", exact=True).first.click()  # a target-attention head
    settle(page)
    charts = page.locator(".js-plotly-plot").count()
    page.get_by_text("Show every head side by side").click()
    settle(page)
    assert page.locator(".js-plotly-plot").count() > charts  # the heads side by side, in one figure
    no_exception(page)
    choose(page, "Model", "tiny-han")
    assert shaded_words(page) > 20
    assert page.get_by_text("has no self-attention").count() == 1
    no_exception(page)


@pytest.mark.parametrize("path,expect", [
    ("compare", "Agreement"),
    ("statistics", "Topic versus sentiment"),
    ("evaluation", "Misclassified documents"),
    ("train", "Train a model"),
    ("tour", "What to notice"),
])
def test_every_page_opens_and_draws(served_app, page, path, expect):
    page.goto(f"{served_app.url}/{path}")
    settle(page)
    no_exception(page)
    assert page.get_by_text(expect).count() >= 1
    if path not in ("train", "tour"):
        assert page.locator(".js-plotly-plot").count() >= 1
    if path == "tour":  # every step draws and judges its claim
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for step in ("2 · Two self-attentions", "3 · Diagonal or columnar", "4 · HAN and HCAN"):
            page.get_by_text(step, exact=True).click()
            settle(page)
            no_exception(page)
            assert page.get_by_text("What to notice").count() >= 1
            page.screenshot(path=str(ARTIFACTS / f"tour-{step[0]}.png"), full_page=True)
    assert page.locator("[data-testid=stSidebarNav], [data-testid=stNavSectionHeader], nav").count() >= 1


def test_exports_download_and_open(served_app, page, browser):
    page.goto(f"{served_app.url}/?model=tiny-hcan")
    settle(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="Report (HTML)").click()
    report = ARTIFACTS / "report.html"
    download.value.save_as(report)
    viewer = browser.new_page()
    viewer.goto(report.as_uri())
    viewer.wait_for_selector(".js-plotly-plot", timeout=60_000)
    assert viewer.locator(".js-plotly-plot").count() >= 3  # probabilities, heatmap, distributions
    assert viewer.get_by_text("Prediction:").count() == 1
    viewer.close()
    page.get_by_role("button", name="Export").first.click()  # the probability chart's popover
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="PNG").first.click()
    png = ARTIFACTS / "probabilities.png"
    download.value.save_as(png)
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="Attention maps (CSV)").click()
    csv = ARTIFACTS / "attention.csv"
    download.value.save_as(csv)
    assert csv.read_text().splitlines()[0].startswith("map,")
    no_exception(page)


def test_a_shared_link_opens_the_same_view(served_app, page, browser):
    page.goto(f"{served_app.url}/?model=tiny-hcan")  # a sample of its data set, shaded
    settle(page)
    page.get_by_text("head 2", exact=True).first.click()
    settle(page)
    link = page.url
    assert "model=tiny-hcan" in link and "head=head+2" in link and "sample=" in link
    other = browser.new_page(viewport={"width": 1400, "height": 1800})  # a colleague's browser
    other.goto(link)
    settle(other)
    no_exception(other)
    picked = other.locator("[data-testid=stSidebar] [data-testid=stSelectbox] input").first
    assert picked.input_value() == "tiny-hcan"
    radio = other.locator("[data-testid=stRadio]").filter(has_text="Target-attention head")
    assert radio.locator("input:checked").count() == 1
    label = radio.locator("label").filter(has=other.locator("input:checked")).inner_text()
    assert label.strip() == "head 2"
    other.close()


def test_three_analyses_toggled_at_once_in_two_tabs(served_app, browser, server_log):
    """The trust panel, its adversarial search and "Test the shading", switched on one after another
    in one tab while another tab does the same on the same cached model: the gradient capture of one
    call once saw the other's forward passes, and one tab showed a RuntimeError with everything
    below it gone. Each switch waits only until the server has started acting on the one before, so
    the computations overlap on any machine."""
    errors, tabs = [], []
    for i in range(2):
        tab = browser.new_page(viewport={"width": 1400, "height": 1800})
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        tab.goto(f"{served_app.url}/?model=tiny-han")
        settle(tab)
        paste(tab, REVIEW + f" Tab {i}.")
        tabs.append(tab)
    first, second = tabs
    for tab, label in ((first, "Can I trust this shading"), (first, "Also search for adversarial"),
                       (first, "Test the shading"), (second, "Test the shading"), (second, "Can I trust this shading")):
        toggle(tab, label)
        busy(tab)
    for tab in tabs:
        tab.bring_to_front()  # a tab behind another may have its timers (the progress poll) throttled
        settle(tab, 480)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for i, tab in enumerate(tabs):
        tab.screenshot(path=str(ARTIFACTS / f"two-tabs-{i}.png"), full_page=True)
        no_exception(tab)
        assert tab.get_by_text("random: removing random words").count() == 1  # the erasure verdicts
        assert tab.get_by_text("How to read them").count() == 1  # the trust panel's table drew
        assert tab.get_by_text("What if? Drop or reorder").count() == 1  # and everything below it
        tab.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


def busy(page, limit: float = 120) -> None:
    """Wait until the page shows the server acting on the last click: a run, a spinner or a progress
    bar (the click's toggle is only sent once the checkbox has drawn)."""
    from bench.served import BUSY

    page.wait_for_function(BUSY, timeout=limit * 1000, polling=50)


def test_no_label_becomes_a_link_or_an_image_in_a_real_browser(served_app, page):
    """Labels are a checkpoint's (another visitor's model, a Hub download): bare URLs, a markdown
    link and an image among them. Streamlit's markdown autolinks bare URLs in the browser, which an
    AppTest never sees; here Chromium draws Explore's sidebar, prediction and trust panel, and no
    element links to or loads from those addresses."""
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if "127.0.0.1:9" in r.url or "evil" in r.url else None)
    page.goto(f"{served_app.url}/?model=hostile")
    settle(page)
    paste(page, "The team won the cup. The fans were happy.")
    shown = page.evaluate("() => document.body.innerText.replaceAll('\\u2060', '')")
    assert HOSTILE_LABELS[3] in shown  # the label is shown, as typed
    links = page.evaluate("""() => [...document.querySelectorAll('a[href], img[src]')]
        .map(e => e.getAttribute('href') || e.getAttribute('src'))""")
    assert not [link for link in links if "127.0.0.1:9" in link or "evil" in link or "javascript:" in link], links
    assert not fetched, fetched
    no_exception(page)

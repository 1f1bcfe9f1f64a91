"""Every figure's slide, in the full suite: each Export popover of each page downloaded from the
shared served app and opened, the first in each format (PNG at 2x, SVG with its title, PDF), the
others in one format each, in turn. That every figure builder lays out as a slide, and that the
heatmap exports in every format, is ``tests/viz/test_export.py``'s, without a browser."""
from pathlib import Path

import pytest

from tests.system.conftest import END_TO_END, no_exception, settle

pytestmark = END_TO_END


def _exported_title(fmt: str, data: bytes) -> bool:
    """Whether ``data`` is a valid file of ``fmt`` (a slide: PNG at 2x, an SVG with its title, a PDF)."""
    if fmt == "PNG":
        return data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
    if fmt == "PDF":
        return data.startswith(b"%PDF") and b"%%EOF" in data[-1024:]
    import xml.etree.ElementTree as ET

    titles = [e for e in ET.fromstring(data).iter() if e.get("class") == "gtitle"]
    return bool(titles) and bool("".join(titles[0].itertext()).strip())


@pytest.mark.parametrize("path,ready", [("?model=tiny-hcan", "Prediction"), ("compare", "Agreement"),
                                        ("tour", "What to notice"), ("statistics", "Topic versus sentiment")])
def test_every_figure_exports_as_png_svg_and_pdf(served_app, page, path, ready):
    """Each Export popover of the page, downloaded and opened: a valid file with its title (the
    heatmap's once failed without a word)."""
    page.goto(f"{served_app.url}/{path}")
    page.get_by_text(ready).first.wait_for(timeout=240_000)
    settle(page)
    if path == "tour":  # step 1 is text; step 3 draws the self-attention heatmaps
        page.get_by_text("3 · Diagonal or columnar", exact=True).click()
        settle(page)
    popovers = page.get_by_role("button", name="Export")
    count = popovers.count()
    assert count >= 1
    bad = []
    for i in range(count):
        popovers.nth(i).scroll_into_view_if_needed()
        popovers.nth(i).click()
        body = page.locator("[data-testid=stPopoverBody]").last
        body.wait_for(timeout=60_000)
        assert body.get_by_text("cannot be drawn as a slide").count() == 0
        for fmt in ("PNG", "SVG", "PDF") if i == 0 else [("PNG", "SVG", "PDF")[i % 3]]:
            with page.expect_download(timeout=120_000) as download:
                body.get_by_role("button", name=fmt, exact=True).click()
            data = Path(download.value.path()).read_bytes()
            if not _exported_title(fmt, data):
                bad.append((i, fmt, download.value.suggested_filename, len(data)))
        page.keyboard.press("Escape")
        body.wait_for(state="hidden", timeout=60_000)
    no_exception(page)
    assert not bad, bad

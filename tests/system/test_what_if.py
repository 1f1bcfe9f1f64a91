"""Explore's deeper tools in a real browser, in the full suite: "Test the shading", "What if?"
(drop a sentence, replace a word) and a 9,600-word document read in pages, on the shared served app."""
import re

from tests.system.conftest import END_TO_END, no_exception, settle, toggle
from tests.system.test_browser import paste

pytestmark = END_TO_END


def test_erasure_what_if_and_a_long_document(served_app, page):
    page.goto(f"{served_app.url}/?model=tiny-hcan")
    settle(page)
    paste(page, "The match was great. The fans loved every minute! But the referee was awful.")
    charts = page.locator(".js-plotly-plot").count()
    toggle(page, "Test the shading")  # the welcome names it too
    settle(page)
    assert page.locator(".js-plotly-plot").count() == charts + 1  # the erasure curves
    assert page.get_by_text("random: removing random words").count() == 1
    assert page.get_by_text("Spearman ρ with attention").count() == 1  # the attribution's shading beside it
    shaded = page.locator("[data-testid=stHtml]").count()
    page.get_by_text("What if? Drop or reorder").click()
    settle(page)
    page.get_by_role("button", name="Drop", exact=True).first.click()  # "drop this sentence" on S1
    settle(page)
    assert page.get_by_text("Edit: dropped S1").count() == 1
    assert page.locator("[data-testid=stHtml] div[style*='line-through']").count() >= 1
    assert page.locator("[data-testid=stHtml]").count() == shaded + 2  # before and after
    word = re.findall(r"[A-Za-z]{3,}", page.get_by_role("textbox", name="Document", exact=True).input_value())[0]
    page.get_by_label("Replace the word").fill(word)
    page.get_by_label("Replace the word").press("Enter")
    page.get_by_label("with").fill("terrible")
    page.get_by_label("with").press("Enter")
    settle(page)
    assert page.locator("[data-testid=stHtml] span[style*='outline']").count() >= 1  # the replaced word, marked
    no_exception(page)
    long_text = " ".join(f"Sentence {i} says the market rose again today." for i in range(1200))  # 9,600 words
    page.goto(f"{served_app.url}/?model=bbc-news-sanet")  # reads 25 x 40 words
    settle(page)
    box = page.get_by_role("textbox", name="Document", exact=True)
    box.fill(long_text)
    box.press("Control+Enter")
    settle(page)
    assert page.get_by_text("Long document").count() >= 1
    assert page.get_by_text("positions in blocks of").count() >= 1  # the overview of a 1,000-word matrix
    no_exception(page)

"""Explore's "Can I trust this shading?" in one browser tab on an idle server: the time from ticking
the box to the panel drawn ("How to read them" on the page, nothing running), for BBC test
articles of about 265 words on the shipped bbc-news-hcan, each article a computation of its own
(the app keeps results per checkpoint and document). Goal: 10 s (11.8-12.8 s were
measured in one tab on a busy machine).

Unlike ``inference.trust_two_tabs`` (the battery through the library, as the app's background
thread runs it) this is what a visitor waits for: the page's runs, the charts and tables, the
browser's drawing. The server is fresh (the shipped checkpoints); one untimed panel first, as a
served app has done its first (captum's import, the caches).
"""
from __future__ import annotations

import os
import statistics
import time

from bench.served import choose, settled, start_server
from bench.soak import CHROMIUM

MODEL = "bbc-news-hcan"
WORDS = (240, 290)  # an article's words, about the 265 of the measurement
READY = "How to read them"


def articles(count: int) -> list[str]:
    """``count`` + 1 bbc-news test articles of WORDS words, across the classes (the split is sorted
    by class: every k-th)."""
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split

    data = load_builtin("bbc-news")
    test = stratified_split(data.labels)["test"]
    fitting = [data.texts[i] for i in test if WORDS[0] <= len(data.texts[i].split()) <= WORDS[1]]
    step = max(1, len(fitting) // (count + 1))
    return fitting[::step][:count + 1]


def record_trust_tab(quick: bool = False) -> dict:
    """The seconds of each timed panel, their median and the article lengths."""
    from playwright.sync_api import sync_playwright

    texts = articles(1 if quick else 5)
    env = {k: v for k, v in os.environ.items() if k != "HIERATTN_CHECKPOINTS"}
    server, url = start_server(env, limit=300)
    seconds, words = [], []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            page.goto(f"{url}/?model={MODEL}")
            page.get_by_text("Prediction").first.wait_for(timeout=300_000)
            settled(page)
            choose(page, "Model", MODEL)
            for n, text in enumerate(texts):
                box = page.get_by_role("textbox", name="Document", exact=True)
                box.fill(text)
                box.press("Control+Enter")
                page.get_by_text("Where the model looks").first.wait_for(timeout=300_000)
                settled(page)
                trust = page.locator("[data-testid=stCheckbox]").filter(has_text="Can I trust this shading").first
                if trust.locator("input").is_checked():
                    trust.click()  # off again: the next article's panel is timed from the tick
                    settled(page)
                start = time.perf_counter()
                trust.click()
                page.get_by_text(READY).first.wait_for(timeout=300_000)
                settled(page)
                if n:  # the first is the untimed warm-up
                    seconds.append(time.perf_counter() - start)
                    words.append(len(text.split()))
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
    return {"seconds": seconds, "median_seconds": statistics.median(seconds), "words": words, "model": MODEL,
            "goal_seconds": 10.0}


def format_trust_tab(found: dict) -> list[str]:
    runs = ", ".join(f"{s:.1f}" for s in found["seconds"])
    return [f"trust panel, one tab, idle server, {found['model']}, {min(found['words'])}-{max(found['words'])} words: "
            f"median {found['median_seconds']:.1f} s (runs {runs} s; goal {found['goal_seconds']:.0f} s)"]

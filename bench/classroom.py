"""A class on one server: N sessions at once, each a student in their own browser tab,
paste a review into Explore, switch the model, open "Can I trust this shading?" and go to Compare,
on the shipped checkpoints, for a bounded time. Every step of every session must be answered, with
no error box, no JavaScript error and no white page; the figures are each step's latency (from the
action to the page settled, p50 and p95 over sessions) and the server's memory.

``run_classroom`` returns the figures; the bench records them (``python -m hierattn bench --only
classroom``, a class of 30 on a server of its own) and ``tests/system/test_classroom.py`` holds a
class of three on the suite's shared server to the same rules.
Loopback only; Debian's Chromium through Playwright's async API (one browser, a context per student).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time

from bench.served import BUSY, Served, cpu_seconds, rss_mb, start_server
from bench.soak import CHROMIUM

REVIEWS = [
    "I bought this blender last month. It was loud and the lid cracked after a week. Customer service never answered.",
    "What a lovely little cafe! The coffee was great and the staff were friendly. I will be back next week.",
    "The update broke my phone again. Battery drains in an hour and the apps keep crashing. Not impressed.",
    "Watched the match with friends last night. Great goals, great atmosphere, and we won in the last minute!",
    "The hotel was fine. Nothing special, clean rooms, average breakfast. The location was convenient though.",
]
STEPS = ("open Explore", "paste a review", "switch the model", "open the trust panel", "open Compare")
SETTLE_TIMEOUT = 300.0  # seconds one step may take before it counts as unanswered


async def _settle(page, expect: str | None, timeout: float = SETTLE_TIMEOUT) -> float:
    """Seconds until the script has finished, no progress bar shows and ``expect`` is on the page."""
    start = time.monotonic()
    await asyncio.sleep(0.4)
    while time.monotonic() - start < timeout:
        busy = await page.evaluate(BUSY)
        found = expect is None or await page.get_by_text(expect).count() > 0
        if not busy and found:
            return time.monotonic() - start
        await asyncio.sleep(0.25)
    raise TimeoutError(f"not settled within {timeout:.0f} s (waiting for {expect!r})")


async def _student(browser, url: str, number: int, record: dict, models: tuple[str, str]) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 1600})
    # the students' 30 tabs render on the server's own cores here: a step may wait its turn for the CPU
    context.set_default_timeout(SETTLE_TIMEOUT * 1000)
    page = await context.new_page()
    errors = record.setdefault("errors", [])
    page.on("pageerror", lambda exc: errors.append(f"student {number}: {exc}"))
    times = record.setdefault("latency", {step: [] for step in STEPS})
    review = REVIEWS[number % len(REVIEWS)] + f" (Student {number}.)"  # each a document of its own

    async def step(name: str, action, expect: str | None):
        start = time.monotonic()
        try:
            await action()
            await _settle(page, expect)
        except Exception as exc:  # noqa: BLE001  an unanswered step, counted and reported
            errors.append(f"student {number}, {name}: {type(exc).__name__}: {str(exc)[:200]}")
            return
        boxes = await page.locator("[data-testid=stException]").count()
        if boxes:
            errors.append(f"student {number}, {name}: an error box on the page")
        if len((await page.inner_text("body")).strip()) < 200:
            errors.append(f"student {number}, {name}: a white page")
        times[name].append(time.monotonic() - start)

    async def paste():
        box = page.get_by_role("textbox", name="Document", exact=True)
        await box.fill(review)
        await box.press("Control+Enter")

    async def switch():
        await page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").first.click()
        await page.keyboard.type(models[1])  # as a visitor with many models does: the open list draws only
        await page.get_by_role("option", name=models[1], exact=True).click()  # the options in view

    async def trust():
        await page.locator("[data-testid=stCheckbox]").filter(has_text="Can I trust this shading").first.click()

    await step(STEPS[0], lambda: page.goto(f"{url}/?model={models[0]}", wait_until="commit"), "Prediction")
    await step(STEPS[1], paste, "Where the model looks")
    await step(STEPS[2], switch, "Where the model looks")
    await step(STEPS[3], trust, "How to read them")
    await step(STEPS[4], lambda: page.goto(f"{url}/compare", wait_until="commit"), "Agreement")
    record.setdefault("finished", []).append(number)
    await context.close()


async def _class(url: str, sessions: int, stagger: float, record: dict, limit: float,
                 models: tuple[str, str]) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"])

        async def late(i):
            await asyncio.sleep(i * stagger)  # a class does not press Enter in the same millisecond
            await _student(browser, url, i, record, models)

        try:
            await asyncio.wait_for(asyncio.gather(*(late(i) for i in range(sessions))), limit)
        except TimeoutError:
            record.setdefault("errors", []).append(f"the class did not finish within {limit:.0f} s")
        await browser.close()


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def run_classroom(sessions: int = 30, stagger: float = 1.0, limit: float = 1200.0, served: Served | None = None,
                  models: tuple[str, str] = ("tweets-han", "tweets-hcan")) -> dict:
    """``sessions`` students, bounded by ``limit`` seconds, each opening ``models[0]`` and switching to
    ``models[1]``; returns the figures. ``served``: the app they use; by default a fresh server of
    the shipped checkpoints, stopped at the end."""
    if served is None:
        env = {k: v for k, v in os.environ.items() if k != "HIERATTN_CHECKPOINTS"}
        server, url = start_server(env)
        log_from = None
    else:
        server, url, log_from = served.process, served.url, served.log_size()
    record: dict = {}
    sampling = {"peak": 0.0}
    try:
        start_mb = rss_mb(server.pid)
        started, server_cpu = time.monotonic(), cpu_seconds(server.pid)

        async def main():
            async def sample():
                while True:
                    sampling["peak"] = max(sampling["peak"], rss_mb(server.pid))
                    await asyncio.sleep(0.5)
            sampler = asyncio.create_task(sample())
            await _class(url, sessions, stagger, record, limit, models)
            sampler.cancel()

        # in a thread of its own: a caller may hold Playwright's synchronous API, whose event loop
        # runs in this thread
        worker = threading.Thread(target=asyncio.run, args=(main(),))
        worker.start()
        worker.join()
        seconds = time.monotonic() - started
        end_mb = rss_mb(server.pid)
        server_cpu = cpu_seconds(server.pid) - server_cpu
    finally:
        if served is None:
            server.terminate()
            try:
                server.wait(15)
            except Exception:  # noqa: BLE001
                server.kill()
            log = server.stderr.read().decode(errors="replace")
        else:
            log = served.log_since(log_from)
    latency = record.get("latency", {})
    every = [t for times in latency.values() for t in times]
    return {
        "sessions": sessions, "finished": len(record.get("finished", [])), "seconds": round(seconds, 1),
        "errors": record.get("errors", []),
        "steps_answered": len(every), "steps_asked": sessions * len(STEPS),
        "p50_s": _percentile(every, 50), "p95_s": _percentile(every, 95),
        "per_step": {step: {"p50_s": _percentile(times, 50), "p95_s": _percentile(times, 95), "n": len(times)}
                     for step, times in latency.items()},
        "rss_start_mb": round(start_mb), "rss_peak_mb": round(sampling["peak"]), "rss_end_mb": round(end_mb),
        "server_tracebacks": log.count("Traceback"),
        "server_log_tail": log[-3000:] if record.get("errors") else "",  # what the server said, when a step failed
        # the share of the machine's CPU time the server had: the rest went to the students' browsers
        "server_cpu_seconds": round(server_cpu, 1),
        "machine": f"{os.cpu_count()} cores",
    }


if __name__ == "__main__":
    print(json.dumps(run_classroom(int(sys.argv[1]) if len(sys.argv) > 1 else 30), indent=1))


def format_classroom(figures: dict) -> list[str]:
    """The figures as BENCHMARKS.md shows them."""
    lines = ["| step | p50 (s) | p95 (s) | answered |", "|---|---:|---:|---:|"]
    for step, f in figures["per_step"].items():
        lines.append(f"| {step} | {f['p50_s']:.1f} | {f['p95_s']:.1f} | {f['n']} of {figures['sessions']} |"
                     if f["n"] else f"| {step} | — | — | 0 of {figures['sessions']} |")
    lines.append(f"| every step | {figures['p50_s']:.1f} | {figures['p95_s']:.1f} | {figures['steps_answered']} of "
                 f"{figures['steps_asked']} |")
    lines.append("")
    lines.append(f"{figures['sessions']} sessions, {len(figures['errors'])} errors, {figures['seconds']:.0f} s in "
                 f"all; server memory {figures['rss_start_mb']} MB at start, {figures['rss_peak_mb']} MB at its "
                 f"peak, {figures['rss_end_mb']} MB at the end; {figures['machine']}.")
    return lines

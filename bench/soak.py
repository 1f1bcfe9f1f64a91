"""A soak of the served app: several headless sessions paste hostile and long documents, switch
models, open checkpoints beyond the limits and leave mid-computation, while a training run trains
beside the server; then the server's CPU should return to idle, its memory stay near its start, its
checkpoints stay intact, and the session that stayed get its answer.

``run_soak`` returns the figures. The bench (``python -m hierattn bench``) runs it on a server of its
own over copies of the shipped checkpoints, then the class server's attacks (``bench/soak_class.py``:
a worker killed, a client steering the proxy, twenty cookie-less identities) on
``hierattn app --workers 2``, and reports every figure; ``tests/system/test_soak.py``
runs one round on the suite's shared server (tiny checkpoints) and holds what can fail on a defect.
Loopback only; Debian's Chromium through Playwright.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from bench.served import ARRIVE, Served, choose, rss_mb, seconds_to_idle, settled, start_server
from hierattn.app.documents import WRITER_SHARE

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class SoakModels(NamedTuple):
    """The checkpoints the soak's visitors open: a HAN (the one who stays, the links, the replacement
    attempt), an HCAN and a SANet (the models the one who stays switches to)."""
    han: str
    hcan: str
    sanet: str


SHIPPED = SoakModels("tweets-han", "tweets-hcan", "bbc-news-sanet")
NORMAL = "The team won the cup final on Sunday. The fans sang all night. It was a great game!"
HOSTILE = "<script>alert(1)</script> **bold** $x$ :red[no] " * 2000
# A run of punctuation spaCy's tokenizer took quadratic time on (20,000 "!": 25 s of the server's
# core; this one would take minutes), a table 300,000 columns wide (2.36 GB), a model whose one
# explanation held 1.95 GB, a visitor replacing a shipped checkpoint from the Train page.
PATHOLOGICAL = "Breaking news " + "!" * 40_000 + " " + "\U0001F600" * 20_000
WIDE_COLUMNS = 300_000


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def hostile_folders(root: Path, han: Path) -> None:
    """The checkpoints the soak's attacks open, written into ``root``: ``huge-caps`` (a copy of the
    HAN checkpoint ``han`` whose caps read beyond the words-read limit: refused from its config
    alone), ``flat-16`` (an explanation over its memory budget) and two Hugging Face folders
    (``_library_folders``)."""
    huge = root / "huge-caps"
    shutil.copytree(han, huge)
    config = json.loads((huge / "config.json").read_text())
    config["text"].update(max_sentences=500, max_words=500)
    (huge / "config.json").write_text(json.dumps(config))
    _over_budget(root / "flat-16")
    _library_folders(root)


def _prepare(workdir: Path) -> Path:
    root = workdir / "checkpoints"
    for name in SHIPPED:
        shutil.copytree(REPO / "checkpoints" / name, root / name)
    hostile_folders(root, REPO / "checkpoints" / SHIPPED.han)
    return root


# A tokenizer's pre-tokenizer regex that backtracks: one 162,000-character paste held the lock 65 s.
BACKTRACKING = r"[A-Za-z .!?]*\d"


def _library_folders(root: Path) -> None:
    """Two Hugging Face folders as a visitor might bring them: ``long-bert``, 4 layers x 4 heads with
    a 4,096-token window (its 3,000-word paste held 4.8 GB before its window was cut to what one
    explanation may hold), and ``hostile-tokenizer``, the same with a Split regex that backtracks."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import AutoModelForSequenceClassification, BertConfig, PreTrainedTokenizerFast

    words = "the a movie was great and fun bad . ! ?".split()
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                                ("[SEP]", 3)])
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=4, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=4096, num_labels=2)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():  # a head as training leaves it (all-zero biases read as a head never trained)
        model.classifier.bias.normal_(0, 0.1)
    long = root / "long-bert"
    model.save_pretrained(long)
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]").save_pretrained(long)
    for name, change in HOSTILE_TOKENIZERS.items():
        hostile = root / name
        shutil.copytree(long, hostile)
        spec = json.loads((hostile / "tokenizer.json").read_text())
        change(spec)
        (hostile / "tokenizer.json").write_text(json.dumps(spec))


def _backtracking(spec: dict) -> None:
    spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": BACKTRACKING}, "behavior": "Isolated", "invert": False},
        spec["pre_tokenizer"]]}


def _chain(spec: dict) -> None:
    """Fifteen Replaces of "qq" by sixteen "q", each within the per-step rule: a 23-character paste
    asked for 4 GB and aborted a worker."""
    spec["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "qq"}, "content": "q" * 16} for _ in range(15)]}


def _long_words(spec: dict) -> None:
    """WordPiece's per-word knob at 10^9: its work cubic in a word's length (a 51 KB paste, 138 s)."""
    spec["model"]["max_input_chars_per_word"] = 10 ** 9


def _id_beyond(spec: dict) -> None:
    """A token whose id is past the model's embedding (an IndexError box on the page)."""
    spec["added_tokens"].append({**spec["added_tokens"][-1], "id": 5000, "content": "[BEYOND]"})


# Hugging Face folders whose tokenizer.json is hostile, and what the page says when one is opened
HOSTILE_TOKENIZERS = {"hostile-tokenizer": _backtracking, "chain-tokenizer": _chain,
                      "long-words-tokenizer": _long_words, "id-beyond-tokenizer": _id_beyond}
REFUSALS = {"hostile-tokenizer": "is not one a known tokenizer family uses",
            "chain-tokenizer": "times longer", "long-words-tokenizer": "WordPiece reads words of up to",
            "id-beyond-tokenizer": "outside the model's"}


def _over_budget(out: Path) -> None:
    """Flat HCAN, 16 heads, d 64, 80 x 50 words, within the words-read limit: one explanation would
    hold 512 million attention cells (1.95 GB). Saved directly, as a page's run could before."""
    import torch

    from hierattn.checkpoint.writing import save_checkpoint
    from hierattn.data.text import TextConfig, Vocab
    from hierattn.models import build_model, sized_for_text

    vocab = Vocab(["<pad>", "<unk>", "team", "won"])
    config = sized_for_text("hcan", {"vocab_size": len(vocab), "num_classes": 2, "hierarchical": False, "heads": 16,
                                     "d": 64}, 80, 50)
    torch.manual_seed(0)
    save_checkpoint(out, build_model("hcan", config), "hcan", vocab, ["a", "b"], TextConfig(80, 50), {})


def _upload(page, name: str, raw: bytes) -> None:
    page.get_by_text("my own file (CSV, TSV or JSONL)").click()
    page.locator("input[type=file]").set_input_files({"name": name, "mimeType": "text/csv", "buffer": raw})


def _shown(page, text: str, timeout: float = 180) -> bool:
    return _shown_at(page.get_by_text(text), timeout)


def _shown_at(locator, timeout: float = 180) -> bool:
    """Whether ``locator`` is on the page within ``timeout`` seconds (a liveness bound)."""
    try:
        locator.first.wait_for(timeout=timeout * 1000)
        return True
    except Exception:  # noqa: BLE001  a timeout
        return False


def _wide_table() -> bytes:
    return (",".join(f"c{i}" for i in range(WIDE_COLUMNS)) + "\n" + "," * (WIDE_COLUMNS - 1) + "\n").encode()


def _replace_attempt(page, url: str, name: str) -> bool:
    """A visitor names their run after checkpoint ``name``, which their session did not train, and
    ticks "replace": refused?"""
    page.goto(f"{url}/train")
    _upload(page, "films.csv", ("text,label\n" + "".join(f"film {i} was {['good', 'bad'][i % 2]},{'ab'[i % 2]}\n"
                                                         for i in range(40))).encode())
    page.get_by_text("Text column").first.wait_for(timeout=60_000)
    box = page.get_by_role("textbox", name="Run name")
    box.fill(name)
    box.press("Enter")
    settled(page)
    page.get_by_text("Replace my checkpoint of this name").click()
    settled(page)
    page.get_by_role("button", name="Start training").click()
    return _shown(page, "a checkpoint this session did not train")


def _clear_cache(browser, url: str, model: str) -> bool:
    """A visitor sends ``BackMsg{clear_cache: true}`` over its own websocket, as any client can (the
    app's "viewer" toolbar only hides the menu item); it used to drop the run caps, the remembered
    refusals and the computations under way. True once the message went out and the server went on
    answering that visitor."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    to_server = []
    page = browser.new_context().new_page()
    page.route_web_socket(re.compile(r"_stcore/stream"), lambda ws: to_server.append(ws.connect_to_server()))
    try:
        page.goto(f"{url}/?model={model}", **ARRIVE)
        if not _answered(page, 120) or not to_server:
            return False
        to_server[-1].send(BackMsg(clear_cache=True).SerializeToString())  # handled before the paste after it
        _paste(page, NORMAL + " Again.")
        return _shown(page, "Again.", 120) and _answered(page, 120)
    finally:
        page.context.close()


TEACHER = "The school board approved the curriculum."
ATTACKER = "Every exam is cancelled."


def _settled(page, timeout: float = 180) -> bool:
    """The page's run has finished (a paste sent while it runs can be lost to the address bar's
    update at its end)."""
    try:
        settled(page, timeout)
        return True
    except AssertionError:
        return False


def _address(page) -> str:
    """The address bar now (``page.url`` is only brought up to date while Playwright is called)."""
    return page.evaluate("() => location.href")


def _address_after(page, before: str | None, timeout: float = 120) -> str:
    """The address once it carries a pasted document's key other than ``before``'s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _address(page)
        if "doc=" in now and now != before:
            return now
        page.wait_for_timeout(300)
    return _address(page)


def _link_held(browser, url: str, model: str, kept: int) -> bool:
    """The collision attack on shared links, replayed: a teacher pastes a text and shares its link;
    another visitor pastes the look-alike of it (the same words, trailing spaces: under the old
    48-bit keys, a crafted pair shared a key) and then a run of documents past its share of the
    store (``kept``: the store's count; a visitor's share is an eighth, and its own oldest go past
    it; the hold that keeps recent links from twenty identities is ``app/test_documents``'); a
    student opening the teacher's link must read the teacher's text."""
    teacher = browser.new_context().new_page()
    teacher.goto(f"{url}/?model={model}", **ARRIVE)
    if not (_answered(teacher, 120) and _settled(teacher)):
        return False
    _paste(teacher, TEACHER)
    link = _address_after(teacher, None)  # the address bar follows the paste: its link
    teacher.context.close()
    if "doc=" not in link:
        return False
    attacker = browser.new_context().new_page()  # another browser: another visitor
    attacker.goto(f"{url}/?model={model}", **ARRIVE)
    _answered(attacker, 120) and _settled(attacker)
    share = max(1, int(kept * WRITER_SHARE))
    for text in [TEACHER + "   ", ATTACKER] + [f"{ATTACKER} Number {i}." for i in range(share)]:  # > its share
        before = _address(attacker)
        _paste(attacker, text)
        _address_after(attacker, before)  # kept: its own link
        _settled(attacker)
    attacker.context.close()
    student = browser.new_context().new_page()
    student.goto(link, **ARRIVE)
    held = _shown(student, "approved the curriculum", 120) and student.get_by_text("exam is cancelled").count() == 0
    student.context.close()
    return held


def _paste(page, text: str) -> None:
    """Put ``text`` in Explore's document box as a paste does, and send it (Ctrl+Enter). Set through
    the element's value setter: Playwright's ``fill`` of a text of many lines never finished."""
    page.evaluate("""([text]) => {
        const box = document.querySelector('textarea[aria-label="Document"]');
        Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value').set.call(box, text);
        box.dispatchEvent(new Event('input', {bubbles: true}));
    }""", [text])
    page.get_by_role("textbox", name="Document").press("Control+Enter", timeout=120_000)


def _answered(page, timeout: float) -> bool:
    try:
        page.get_by_text("Prediction", exact=True).first.wait_for(timeout=timeout * 1000)
        return True
    except Exception:  # noqa: BLE001  a timeout: no answer
        return False


def _training(workdir: Path, epochs: int) -> subprocess.Popen:
    csv = workdir / "films.csv"
    csv.write_text("text,label\n" + "".join(f'"The film was {["great fun", "a bore"][i % 2]}. Day {i}.",'
                                            f'{["pos", "neg"][i % 2]}\n' for i in range(400)))
    env = {**os.environ, "HIERATTN_RUNTIME": str(workdir / "census")}
    return subprocess.Popen([sys.executable, "-m", "hierattn", "train", "--model", "han", "--file", str(csv),
                             "--epochs", str(epochs), "--patience", str(epochs), "--min-freq", "1", "--out",
                             str(workdir / "run-out"), "--device", "cpu"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_soak(workdir: str | Path, rounds: int = 2, served: Served | None = None, models: SoakModels = SHIPPED,
             training_epochs: int = 30, browser=None, kept_documents: int = 16) -> dict:
    """The soak, in ``workdir`` (created); returns its figures. ``served``: the app to soak, already
    serving a folder that holds ``models`` and ``hostile_folders``; by default a server of its own over
    copies of the shipped checkpoints, stopped with Ctrl-C at the end (``server_exit_seconds``).
    ``browser``: a Playwright Chromium to open the visitors' contexts in (by default one of its own).
    ``kept_documents``: how many pasted documents the server keeps for links (its
    ``HIERATTN_KEPT_DOCUMENTS``; a visitor's share is an eighth): the link attack pastes two more than a share."""

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    own = served is None
    if own:
        root = _prepare(workdir)
        log = workdir / "server.log"
        server, url = start_server({**os.environ, "HIERATTN_CHECKPOINTS": str(root),
                                    "HIERATTN_RUNTIME": str(workdir / "census"),
                                    "HIERATTN_DOCUMENTS": str(workdir / "documents"),
                                    "HIERATTN_KEPT_DOCUMENTS": str(kept_documents)}, log=log)
        served = Served(server, url, root, log)
    log_from = served.log_size()
    before = _hashes(served.checkpoints)
    figures: dict = {"rounds": rounds}
    training = None
    try:
        with _chromium(browser) as chromium:
            stays = _before_the_rounds(chromium, served.url, models, figures, kept_documents, null=own)
            figures["rss_start_mb"] = rss_mb(served.process.pid)
            training = _training(workdir, training_epochs)
            for _ in range(rounds):
                _round(chromium, served, models, stays, figures)
            stays.context.close()
        rounds_idle = figures.get("seconds_to_idle_each_round", [])
        figures["seconds_to_idle"] = None if None in rounds_idle or not rounds_idle else max(rounds_idle)
        with _phase(figures, "training run's end"):
            figures["training_exit_code"] = training.wait(timeout=600)
        figures["rss_end_mb"] = rss_mb(served.process.pid)
        figures["rss_growth_mb"] = figures["rss_end_mb"] - figures["rss_start_mb"]
        figures["answered"] = all(figures.get("answers", [])) and bool(figures.get("answers"))
        for attack in ("refused_the_huge_checkpoint", "refused_the_over_budget_model", "refused_the_wide_table",
                       "refused_the_replacement", "cleared_caches"):
            figures[attack] = all(figures.get(attack, [False]))
    finally:
        if training is not None and training.poll() is None:
            training.kill()
        if own:
            stop = time.monotonic()
            served.process.send_signal(signal.SIGINT)  # Ctrl-C
            try:
                served.process.wait(30)
            except subprocess.TimeoutExpired:
                served.process.kill()
                served.process.wait()
            figures["server_exit_seconds"] = time.monotonic() - stop
            figures["server_exit_code"] = served.process.returncode
        figures["server_log_tail"] = served.log_since(log_from)[-3000:]
    figures["checkpoints_intact"] = _hashes(served.checkpoints) == before
    if own:  # the class server's attacks, on `hierattn app --workers 2` over the same folder
        from bench.soak_class import run_class_server

        figures["class_server"] = run_class_server(served.checkpoints, workdir, models.han)
    return figures


@contextmanager
def _phase(figures: dict, name: str):
    """Adds the seconds the block takes to ``figures["phase_seconds"][name]``: where a soak spends
    its time, for the bench's report."""
    start = time.monotonic()
    try:
        yield
    finally:
        phases = figures.setdefault("phase_seconds", {})
        phases[name] = round(phases.get(name, 0.0) + time.monotonic() - start, 1)


@contextmanager
def _chromium(browser):
    """``browser``, or a headless Chromium of the soak's own, closed at the end."""
    if browser is not None:
        yield browser
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        own = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield own
        own.close()


def _before_the_rounds(browser, url: str, models: SoakModels, figures: dict, kept: int, null: bool):
    """The attacks made once: the pathological paste, the link collision, a long window, hostile
    tokenizers (``null``: and the same paste beside as many ordinary visitors, the bench's figure).
    Returns the page of the visitor who stays through the rounds."""
    stays = browser.new_context().new_page()
    stays.goto(f"{url}/?model={models.han}", **ARRIVE)
    figures["warm"] = _answered(stays, 120)
    stays.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
    with _phase(figures, "pathological paste"):
        start = time.monotonic()  # the pathological paste, answered (it froze the server for minutes)
        _paste(stays, PATHOLOGICAL)
        shaded = stays.locator("[data-testid=stHtml]").filter(has_text="Breaking")  # its own explanation
        figures["pathological_answered"] = _shown_at(shaded, 120) and _answered(stays, 120)
        figures["pathological_seconds"] = time.monotonic() - start
    with _phase(figures, "link collision"):
        figures["link_held"] = _link_held(browser, url, models.han, kept)
    with _phase(figures, "long window"):
        long = browser.new_context().new_page()  # a 4,096-token window, a 3,000-word paste
        long.goto(f"{url}/?model=long-bert", **ARRIVE)
        long.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
        start = time.monotonic()
        _paste(long, " ".join(["The movie was great and fun."] * 500))
        from hierattn.models.library_limits import fitting_window

        window = figures["long_window"] = fitting_window(layers=4, heads=4)  # the folder's 4 x 4 heads
        figures["long_window_answered"] = _shown(long, f"it reads {window:,} here", 180) and _answered(long, 180)
        figures["long_window_seconds"] = time.monotonic() - start
        long.context.close()
    with _phase(figures, "hostile tokenizers"):
        _settled(stays)
        figures["paste_alone_s"] = _timed_paste(stays, NORMAL + " Alone.")
        if null:  # as many visitors opening a model already loaded, at once (each first page run takes
            # its turn before the paste: page runs go in arrival order)
            ordinary = _arriving(browser, url, [models.han] * len(HOSTILE_TOKENIZERS))
            figures["paste_beside_visitors_s"] = _timed_paste(stays, NORMAL + " Beside visitors.")
            for page in ordinary.values():
                page.context.close()
            _settled(stays)
        opened = _arriving(browser, url, list(HOSTILE_TOKENIZERS))  # four visitors open the hostile folders
        figures["paste_beside_hostile_s"] = _timed_paste(stays, NORMAL + " Beside them.")  # while they open
        figures["refused_the_hostile_tokenizers"] = {name: _shown(page, REFUSALS[name])
                                                     for name, page in opened.items()}
        for page in opened.values():
            page.context.close()
    _settled(stays)
    return stays


def _arriving(browser, url: str, models: list[str]) -> dict:
    """A new visitor per model in ``models``, each opening Explore on it, all at once (not waited for)."""
    pages = {}
    for i, name in enumerate(models):
        pages[(name, i) if name in pages else name] = page = browser.new_context().new_page()
        page.goto(f"{url}/?model={name}", **ARRIVE)
    return pages


def _timed_paste(page, text: str) -> float | None:
    """Seconds from the paste to its explanation on the page (None: not within 120 s)."""
    start = time.monotonic()
    _paste(page, text)
    if not _shown_at(page.locator("[data-testid=stHtml]").filter(has_text=text.split()[-1]), 120):
        return None
    return round(time.monotonic() - start, 2)


def _round(browser, served: Served, models: SoakModels, stays, figures: dict) -> None:
    """One round: visitors paste what costs the most, start a split's statistics, open the
    checkpoints beyond the limits, upload a wide table, try to replace a checkpoint and clear the
    caches, then leave, some mid-computation; the server should go back to idle and the one who
    stays be answered on two other models."""
    url = served.url
    leaving = []
    with _phase(figures, "pastes that cost the most"):
        for path, text in ((f"/?model={models.hcan}", "w\n" * 200_000), (f"/?model={models.han}", HOSTILE),
                           (f"/?model={models.han}", PATHOLOGICAL)):
            page = browser.new_context().new_page()
            page.goto(url + path, **ARRIVE)
            page.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
            _paste(page, text)
            leaving.append(page)
    with _phase(figures, "statistics started"):
        stats = browser.new_context().new_page()
        stats.goto(f"{url}/statistics", **ARRIVE)
        choose(stats, "Model", models.hcan)  # starts its split's metrics in the background
        progress = stats.get_by_text(re.compile(r"[\d,]+ / [\d,]+ documents"))
        finished = stats.get_by_text(re.compile(r"[\d,]+ matrices, computed in"))  # cached from an earlier round
        try:  # waiting on the bar alone cost a round the whole timeout once the result was cached
            progress.or_(finished).first.wait_for(timeout=120_000)
            if progress.count():
                figures["statistics_started"] = figures.get("statistics_started", 0) + 1
        except Exception:  # noqa: BLE001
            pass
    leaving.append(stats)
    huge = browser.new_context().new_page()
    huge.goto(f"{url}/?model=huge-caps", **ARRIVE)
    # a liveness bound: under the whole suite's load, with every page's out-of-domain reference
    # computing, the refusal took up to 2-4 minutes
    with _phase(figures, "checkpoint beyond the limits"):
        figures.setdefault("refused_the_huge_checkpoint", []).append(_shown(huge, "HIERATTN_MAX_WORDS_READ", 240))
    leaving.append(huge)
    over = browser.new_context().new_page()  # the model whose explanation would hold 1.95 GB
    over.goto(f"{url}/?model=flat-16", **ARRIVE)
    with _phase(figures, "model over its budget"):
        figures.setdefault("refused_the_over_budget_model", []).append(_shown(over, "HIERATTN_MAX_EXPLANATION_CELLS"))
    leaving.append(over)
    wide = browser.new_context().new_page()
    wide.goto(f"{url}/train", **ARRIVE)
    _upload(wide, "wide.csv", _wide_table())
    with _phase(figures, "wide table"):
        figures.setdefault("refused_the_wide_table", []).append(_shown(wide, "HIERATTN_MAX_HEADER_KB"))
    leaving.append(wide)
    replacing = browser.new_context().new_page()
    with _phase(figures, "replacement"):
        figures.setdefault("refused_the_replacement", []).append(_replace_attempt(replacing, url, models.han))
    leaving.append(replacing)
    with _phase(figures, "cleared caches"):
        figures.setdefault("cleared_caches", []).append(_clear_cache(browser, url, models.han))  # any visitor may
    for page in leaving:  # they leave, some of them mid-computation
        page.context.close()
    # what they started should end with them (the training run is another process)
    with _phase(figures, "back to idle"):
        figures.setdefault("seconds_to_idle_each_round", []).append(seconds_to_idle(served.process.pid, 120))
    with _phase(figures, "switching models"):
        for model in (models.hcan, models.sanet):  # the one who stays switches models
            stays.goto(f"{url}/?model={model}", **ARRIVE)
            stays.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
            _paste(stays, NORMAL)
            figures.setdefault("answers", []).append(_answered(stays, 120))


if __name__ == "__main__":
    import tempfile

    print(json.dumps(run_soak(tempfile.mkdtemp(prefix="hierattn-soak-"), int(sys.argv[1]) if len(sys.argv) > 1
                              else 2), indent=1))

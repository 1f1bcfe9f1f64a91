"""A soak of the served app (issue 22): several headless sessions paste hostile and long documents,
switch models, open a checkpoint beyond the limits and leave mid-computation, while a training run
trains beside the server; then the server's CPU should return to idle, its memory stay near its
start, its checkpoints stay intact, and the session that stayed get its answer.

``run_soak`` returns the figures; ``tests/test_soak.py`` holds them to their bounds in CI and the
bench (``python -m hierattn bench``) reports them. Loopback only; Debian's Chromium through
Playwright.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHIPPED = ("tweets-han", "tweets-hcan", "bbc-news-sanet")
IDLE_SHARE = 0.05  # of one core, over a second: the server is idle
NORMAL = "The team won the cup final on Sunday. The fans sang all night. It was a great game!"
HOSTILE = "<script>alert(1)</script> **bold** $x$ :red[no] " * 2000
# Issue 31's attacks: a run of punctuation spaCy's tokenizer took quadratic time on (20,000 "!": 25 s
# of the server's core; this one would take minutes), a table 300,000 columns wide (2.36 GB), a model
# whose one explanation held 1.95 GB, a visitor replacing a shipped checkpoint from the Train page.
PATHOLOGICAL = "Breaking news " + "!" * 40_000 + " " + "\U0001F600" * 20_000
WIDE_COLUMNS = 300_000


# A page under load: wait for the server's answer, not for every script to load (a loaded server
# served the page's JavaScript in over 30 s on CI's 2 cores); what the page then shows is waited for.
ARRIVE = {"wait_until": "commit", "timeout": 120_000}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def seconds_to_idle(pid: int, limit: float = 120.0) -> float | None:
    """Seconds until the process uses under ``IDLE_SHARE`` of a core over a whole second."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        before, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(1.0)
        if (cpu_seconds(pid) - before) / (time.monotonic() - t0) < IDLE_SHARE:
            return time.monotonic() - start - 1.0
    return None


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _prepare(workdir: Path) -> Path:
    root = workdir / "checkpoints"
    for name in SHIPPED:
        shutil.copytree(REPO / "checkpoints" / name, root / name)
    huge = root / "huge-caps"  # a checkpoint beyond the words-read limit: refused from its config alone
    shutil.copytree(REPO / "checkpoints" / "tweets-han", huge)
    config = json.loads((huge / "config.json").read_text())
    config["text"].update(max_sentences=500, max_words=500)
    (huge / "config.json").write_text(json.dumps(config))
    _over_budget(root / "flat-16")
    _library_folders(root)
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
    hostile = root / "hostile-tokenizer"
    shutil.copytree(long, hostile)
    spec = json.loads((hostile / "tokenizer.json").read_text())
    spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": BACKTRACKING}, "behavior": "Isolated", "invert": False},
        spec["pre_tokenizer"]]}
    (hostile / "tokenizer.json").write_text(json.dumps(spec))


def _over_budget(out: Path) -> None:
    """Flat HCAN, 16 heads, d 64, 80 x 50 words, within the words-read limit: one explanation would
    hold 512 million attention cells (1.95 GB). Saved directly, as a page's run could before."""
    import torch

    from hierattn.checkpoint import save_checkpoint
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
    try:
        page.get_by_text(text).first.wait_for(timeout=timeout * 1000)
        return True
    except Exception:  # noqa: BLE001  a timeout
        return False


def _wide_table() -> bytes:
    return (",".join(f"c{i}" for i in range(WIDE_COLUMNS)) + "\n" + "," * (WIDE_COLUMNS - 1) + "\n").encode()


def _replace_attempt(page, url: str) -> bool:
    """A visitor names their run after a shipped checkpoint and ticks "replace": refused?"""
    page.goto(f"{url}/train")
    _upload(page, "films.csv", ("text,label\n" + "".join(f"film {i} was {['good', 'bad'][i % 2]},{'ab'[i % 2]}\n"
                                                         for i in range(40))).encode())
    page.get_by_text("Text column").first.wait_for(timeout=60_000)
    name = page.get_by_role("textbox", name="Run name")
    name.fill("tweets-han")
    name.press("Enter")
    time.sleep(1)
    page.get_by_text("Replace my checkpoint of this name").click()
    time.sleep(1)
    page.get_by_role("button", name="Start training").click()
    return _shown(page, "a checkpoint this session did not train")


def _clear_cache(browser, url: str) -> bool:
    """A visitor sends ``BackMsg{clear_cache: true}`` over its own websocket, as any client can (the
    app's "viewer" toolbar only hides the menu item); it used to drop the run caps, the remembered
    refusals and the computations under way. True once the message went out and the server went on
    answering that visitor."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    to_server = []
    page = browser.new_context().new_page()
    page.route_web_socket(re.compile(r"_stcore/stream"), lambda ws: to_server.append(ws.connect_to_server()))
    try:
        page.goto(f"{url}/?model=tweets-han", **ARRIVE)
        if not _answered(page, 120) or not to_server:
            return False
        to_server[-1].send(BackMsg(clear_cache=True).SerializeToString())
        time.sleep(1)
        _paste(page, NORMAL + " Again.")
        return _shown(page, "Again.", 120) and _answered(page, 120)
    finally:
        page.context.close()


TEACHER = "The school board approved the curriculum."
ATTACKER = "Every exam is cancelled."


# A page is busy until Streamlit's own script state reads "notRunning" with no spinner, progress bar
# or skeleton: before the app has connected the page shows no spinner at all ("initial").
BUSY = ("() => { const app = document.querySelector('[data-testid=stApp]');"
        " return !app || app.getAttribute('data-test-script-state') !== 'notRunning' || !!document.querySelector("
        "'[data-testid=stStatusWidget], [data-testid=stProgress], [data-testid=stSkeleton]'); }")


def _settled(page, timeout: float = 180) -> bool:
    """The page's run has finished (a paste sent while it runs can be lost to the address bar's
    update at its end)."""
    try:
        time.sleep(1)
        page.wait_for_function(f"() => !({BUSY})()", timeout=timeout * 1000)
        return True
    except Exception:  # noqa: BLE001  a timeout
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


def _link_held(browser, url: str) -> bool:
    """The collision attack on shared links, replayed: a teacher pastes a text and shares its link;
    another visitor pastes the look-alike of it (the same words, trailing spaces: under the old
    48-bit keys, a crafted pair shared a key) and then a run of documents to evict the class's
    links (18 documents, the store holding 16 here); a student opening the teacher's link must read
    the teacher's text."""
    teacher = browser.new_context().new_page()
    teacher.goto(f"{url}/?model=tweets-han", **ARRIVE)
    if not (_answered(teacher, 120) and _settled(teacher)):
        return False
    _paste(teacher, TEACHER)
    link = _address_after(teacher, None)  # the address bar follows the paste: its link
    teacher.context.close()
    if "doc=" not in link:
        return False
    attacker = browser.new_context().new_page()  # another browser: another visitor
    attacker.goto(f"{url}/?model=tweets-han", **ARRIVE)
    _answered(attacker, 120) and _settled(attacker)
    for text in [TEACHER + "   ", ATTACKER] + [f"{ATTACKER} Number {i}." for i in range(16)]:  # > the store
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


def start_server(env: dict, command: list[str] | None = None, limit: float = 120,
                 own_group: bool = False) -> tuple[subprocess.Popen, str]:
    """``command`` (default ``streamlit run app.py``) on a free loopback port with ``env``, once it
    answers its health check: (the process, its URL). ``own_group``: in a process group of its own
    (stop it and its children with ``os.killpg``). RuntimeError when it exits or does not answer
    within ``limit`` seconds."""
    port = _free_port()
    command = command or [sys.executable, "-m", "streamlit", "run", "app.py"]
    server = subprocess.Popen([*command, "--server.headless", "true", "--server.port", str(port),
                               "--server.address", "127.0.0.1"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=own_group)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return server, url
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"streamlit exited: {server.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"streamlit did not answer within {limit:.0f} s")


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


def _training(workdir: Path, root: Path) -> subprocess.Popen:
    csv = workdir / "films.csv"
    csv.write_text("text,label\n" + "".join(f'"The film was {["great fun", "a bore"][i % 2]}. Day {i}.",'
                                            f'{["pos", "neg"][i % 2]}\n' for i in range(400)))
    env = {**os.environ, "HIERATTN_RUNTIME": str(workdir / "census")}
    return subprocess.Popen([sys.executable, "-m", "hierattn", "train", "--model", "han", "--file", str(csv),
                             "--epochs", "30", "--patience", "30", "--min-freq", "1", "--out",
                             str(workdir / "run-out"), "--device", "cpu"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_soak(workdir: str | Path, rounds: int = 2) -> dict:
    """The soak, in ``workdir`` (created); returns its figures."""
    from playwright.sync_api import sync_playwright

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    root = _prepare(workdir)
    before = _hashes(root)
    server, url = start_server({**os.environ, "HIERATTN_CHECKPOINTS": str(root),
                                "HIERATTN_RUNTIME": str(workdir / "census"),
                                "HIERATTN_DOCUMENTS": str(workdir / "documents"),
                                "HIERATTN_KEPT_DOCUMENTS": "16"})  # a visitor's share: 2 links
    figures: dict = {"rounds": rounds}
    training = None
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            stays = browser.new_context().new_page()
            stays.goto(f"{url}/?model=tweets-han", **ARRIVE)
            figures["warm"] = _answered(stays, 120)
            stays.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
            start = time.monotonic()  # the pathological paste, answered (it froze the server for minutes)
            _paste(stays, PATHOLOGICAL)
            time.sleep(0.5)
            figures["pathological_answered"] = _shown(stays, "Breaking", 120) and _answered(stays, 120)
            figures["pathological_seconds"] = time.monotonic() - start
            figures["link_held"] = _link_held(browser, url)
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
            hostile = browser.new_context().new_page()
            hostile.goto(f"{url}/?model=hostile-tokenizer", **ARRIVE)
            figures["refused_the_hostile_tokenizer"] = _shown(hostile, "is not one a known tokenizer family uses")
            hostile.context.close()
            time.sleep(2)
            figures["rss_start_mb"] = rss_mb(server.pid)
            training = _training(workdir, root)
            refused = True
            for _ in range(rounds):
                leaving = []
                for path, text in (("/?model=tweets-hcan", "w\n" * 200_000), ("/?model=tweets-han", HOSTILE),
                                   ("/?model=tweets-han", PATHOLOGICAL)):
                    page = browser.new_context().new_page()
                    page.goto(url + path, **ARRIVE)
                    page.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
                    _paste(page, text)
                    leaving.append(page)
                stats = browser.new_context().new_page()
                stats.goto(f"{url}/statistics", **ARRIVE)  # starts its split's metrics in the background
                progress = stats.get_by_text(re.compile(r"[\d,]+ / [\d,]+ documents"))
                finished = stats.get_by_text(re.compile(r"[\d,]+ matrices, computed in"))  # cached from round 1
                try:  # waiting on the bar alone cost a round the whole timeout once the result was cached
                    progress.or_(finished).first.wait_for(timeout=30_000)
                    if progress.count():
                        figures["statistics_started"] = figures.get("statistics_started", 0) + 1
                except Exception:  # noqa: BLE001
                    pass
                leaving.append(stats)
                huge = browser.new_context().new_page()
                huge.goto(f"{url}/?model=huge-caps", **ARRIVE)
                try:
                    # a liveness bound: under the whole test suite's load, with every page's
                    # out-of-domain reference computing, the refusal took up to ~2-4 minutes
                    huge.get_by_text("HIERATTN_MAX_WORDS_READ").first.wait_for(timeout=240_000)
                except Exception:  # noqa: BLE001
                    refused = False
                leaving.append(huge)
                over = browser.new_context().new_page()  # the model whose explanation would hold 1.95 GB
                over.goto(f"{url}/?model=flat-16", **ARRIVE)
                figures.setdefault("refused_the_over_budget_model", []).append(
                    _shown(over, "HIERATTN_MAX_EXPLANATION_CELLS"))
                leaving.append(over)
                wide = browser.new_context().new_page()
                wide.goto(f"{url}/train", **ARRIVE)
                _upload(wide, "wide.csv", _wide_table())
                figures.setdefault("refused_the_wide_table", []).append(_shown(wide, "HIERATTN_MAX_HEADER_KB"))
                leaving.append(wide)
                replacing = browser.new_context().new_page()
                figures.setdefault("refused_the_replacement", []).append(_replace_attempt(replacing, url))
                leaving.append(replacing)
                time.sleep(2)  # mid-computation
                figures.setdefault("cleared_caches", []).append(_clear_cache(browser, url))  # any visitor may
                for page in leaving:  # they leave, some of them mid-computation
                    page.context.close()
                # what they started should end with them (the training run is another process)
                figures.setdefault("seconds_to_idle_each_round", []).append(seconds_to_idle(server.pid, 120))
                for model in ("tweets-hcan", "bbc-news-sanet"):  # the one who stays switches models
                    stays.goto(f"{url}/?model={model}", **ARRIVE)
                    stays.get_by_role("textbox", name="Document").wait_for(timeout=60_000)
                    _paste(stays, NORMAL)
                    figures.setdefault("answers", []).append(_answered(stays, 120))
            figures["refused_the_huge_checkpoint"] = refused
            stays.context.close()
            browser.close()
        rounds_idle = figures.get("seconds_to_idle_each_round", [])
        figures["seconds_to_idle"] = None if None in rounds_idle or not rounds_idle else max(rounds_idle)
        figures["training_exit_code"] = training.wait(timeout=600)
        figures["rss_end_mb"] = rss_mb(server.pid)
        figures["rss_growth_mb"] = figures["rss_end_mb"] - figures["rss_start_mb"]
        figures["answered"] = all(figures.get("answers", [])) and bool(figures.get("answers"))
        for attack in ("refused_the_over_budget_model", "refused_the_wide_table", "refused_the_replacement",
                       "cleared_caches"):
            figures[attack] = all(figures.get(attack, [False]))
    finally:
        if training is not None and training.poll() is None:
            training.kill()
        stop = time.monotonic()
        server.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        figures["server_exit_seconds"] = time.monotonic() - stop
        figures["server_exit_code"] = server.returncode
        figures["server_log_tail"] = server.stderr.read().decode(errors="replace")[-3000:]
    figures["checkpoints_intact"] = _hashes(root) == before
    return figures


if __name__ == "__main__":
    import tempfile

    print(json.dumps(run_soak(tempfile.mkdtemp(prefix="hierattn-soak-"), int(sys.argv[1]) if len(sys.argv) > 1
                              else 2), indent=1))

"""The hostile-input table of docs/RELIABILITY.md: one test per row that earlier test
files do not already cover (the table names the test of every row). Each row checks the library,
the CLI (a clear ``error:`` line, a non-zero exit code, no traceback) and, where a page can receive
the input, the page (a clear message, no exception, nothing rendered unescaped)."""
import ast
import json
import pickle
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from hierattn.analysis.explain import explain
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.cli import main
from hierattn.data.dataset import DataError
from hierattn.data.formats import csv_bytes, read_rows
from hierattn.data.text import TextConfig, tokenize
from hierattn.home import list_checkpoints
from hierattn.models import build_model
from hierattn.viz.html import document_html, md_code, md_text
from tests.app.test_pages import settle
from tests.conftest import REPO, shown
from tests.tiny import LABELS, hostile_checkpoint

# What would run as HTML, markdown or LaTeX if it reached the page unescaped.
PAYLOADS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "**bold** _it_", "$\\frac{1}{2}$",
            "[click](javascript:alert(3))", "=cmd|' /C calc'!A0",
            "![x](http://127.0.0.1:9/t.png) **TRAINED** [Log in again](http://127.0.0.1:9/phish)",
            "see http://127.0.0.1:9/x or www.evil.example"]
RAW_MARKS = ["<script", "<img", "**bold**", "_it_", "$\\frac", "](javascript:", "![x](", "**TRAINED**", "](http",
             "http://", "www."]


# ---- helpers -------------------------------------------------------------------------------
# Elements whose strings Streamlit does not render as markdown: escaped HTML (checked apart), figures,
# tables, the text boxes' contents; a select box's options are plain text (its label is markdown).
NOT_MARKDOWN = {"html", "plotly_chart", "arrow_data_frame", "text_area", "text_input", "code", "json", "iframe",
                "empty", "progress", "download_button"}
PLAIN_OPTIONS = {"selectbox", "multiselect"}


def _elements(node):
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _elements(child)
    else:
        yield node


def _strings(message, only: set[str] | None = None):
    from google.protobuf.message import Message

    for field, value in message.ListFields():
        if only is not None and field.name not in only:
            continue
        values = value if isinstance(value, (list, tuple)) or type(value).__name__.startswith("Repeated") else [value]
        for v in values:
            if isinstance(v, str):
                yield v
            elif isinstance(v, Message):
                yield from _strings(v)


def markdown_strings(at: AppTest) -> list[str]:
    """Every string the page hands to Streamlit's markdown renderer: every string of every element
    (labels, values, deltas, options, tooltips, bodies) but those above, which it does not render."""
    out = []
    for root in (at.main, at.sidebar):
        for element in _elements(root):
            kind = getattr(element, "type", "")
            proto = getattr(element, "proto", None)
            if proto is None or kind in NOT_MARKDOWN:
                continue
            out += list(_strings(proto, {"label", "help", "placeholder"} if kind in PLAIN_OPTIONS else None))
    return out


def unescaped(markdown: str) -> str:
    """What markdown would interpret in ``markdown``: code spans and backslash escapes removed."""
    return re.sub(r"\\[!-/:-@\[-`{-~]", "\x00", re.sub(r"`[^`]*`", "`code`", markdown))


def assert_nothing_interpreted(at: AppTest) -> None:
    assert not at.exception, at.exception
    for s in markdown_strings(at):
        visible = unescaped(s)
        for mark in RAW_MARKS:
            assert mark not in visible, f"{mark!r} reaches the markdown renderer unescaped in {s!r}"
    for body in (e.proto.body for e in at.get("html")):
        for mark in ("<script", "<img", "onerror="):
            assert mark not in body, f"{mark!r} in an HTML block"


def explored_with_a_warning(text: str, warning: str) -> None:
    """Paste ``text`` on Explore with tiny-hcan: the page says ``warning``, draws, interprets nothing."""
    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=120).run()
    at.selectbox(key="model").set_value("tiny-hcan").run()
    at.text_area(key="document").input(text).run()
    assert_nothing_interpreted(at)
    assert any(warning in shown(w.value) for w in at.warning)
    assert at.get("plotly_chart")


@pytest.fixture
def hostile_env(checkpoint_dir, tiny_vocab, tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir, root)
    hostile_checkpoint(root, tiny_vocab)
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    return root


def cli_fails(argv, capsys, message: str) -> str:
    assert main(argv) != 0
    captured = capsys.readouterr()
    # A logging handler that Streamlit's loggers kept from an earlier AppTest may complain about its
    # closed stream here ("--- Logging error ---" + its own traceback): not the CLI's output.
    output = re.sub(r"--- Logging error ---.*?\nArguments: [^\n]*\n", "", captured.err + captured.out, flags=re.S)
    assert "Traceback" not in output
    assert message in captured.err, captured.err
    return captured.err


# ---- text ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_1_mb_paste_is_read_up_to_the_caps_and_says_so(checkpoint_dir, tmp_path, capsys, monkeypatch):
    text = ("The team won the cup. " * 50_000)[: 2**20]
    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    ex = explain(classifier, text)
    assert ex.document.truncation and "sentences" in ex.document.truncation.message
    assert "ignored (limit 1,000,000 characters; set HIERATTN_MAX_CHARS" in ex.document.truncation.message
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
    # the box takes the first 1,000,000 characters (its max_chars) and says so
    explored_with_a_warning(text[:1_000_000], "The box holds at most 1,000,000 characters")
    f = tmp_path / "big.txt"
    f.write_text(text)
    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-hcan"), "--file", str(f), "--compact"]) == 0
    assert json.loads(capsys.readouterr().out)["truncation"]


@pytest.mark.slow
def test_a_50000_sentence_paste(checkpoint_dir, monkeypatch):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
    text = "Go. " * 50_000
    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    ex = explain(classifier, text)
    assert len(ex.document.sentences) == classifier.text_config.max_sentences
    assert "of 50,000 sentences" in ex.document.truncation.message
    explored_with_a_warning(text, "of 50,000 sentences")


@pytest.mark.parametrize("text", [
    "Ünïcödé façade — naïve café. Straße!",  # precomposed Latin
    "Cafe\u0301 au lait. Nin\u0303o here.",  # combining accents after the base letter
    "The team 🎉🏆 won! 👍🏽 Great game 👨‍👩‍👧.",  # emoji, skin tone, zero-width joiner
    "東京は晴れです。明日も晴れ。",  # CJK without spaces
    "שלום עולם. مرحبا بالعالم!",  # right-to-left scripts
    "Mixed עברית and English. Done.",
])
def test_scripts_keep_their_spans(text):
    """Every word's span points at the characters it was read from, and the document view shows the
    original text, character for character, around the shading."""
    import html

    doc = tokenize(text, TextConfig(max_sentences=20, max_words=50))
    assert doc.sentences and doc.num_tokens
    for s in doc.sentences:
        for t in s.tokens:
            assert text[t.start: t.end] == t.text and t.text.strip()
    sentences = [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in doc.sentences]
    weights = [[1.0 / len(s.tokens)] * len(s.tokens) for s in doc.sentences]
    shown = document_html(text, sentences, weights, [1.0 / len(sentences)] * len(sentences))
    shown = html.unescape(re.sub(r"<[^>]+>", "", shown))
    rest = iter(shown)  # every character of the text, in order (sentence weight badges in between)
    assert all(ch in rest for ch in "".join(text.split()))


def test_binary_bytes_in_a_file_or_pasted(checkpoint_dir, tmp_path, capsys):
    f = tmp_path / "junk.bin"
    f.write_bytes(bytes(range(256)) * 8)
    cli_fails(["explain", "--checkpoint", str(checkpoint_dir / "tiny-hcan"), "--file", str(f)], capsys,
              "not a text file")
    f.write_bytes(b"Caf\xe9 was open. The team won.")  # Latin-1, not UTF-8: read, with a note
    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-hcan"), "--file", str(f)]) == 0
    assert "not valid UTF-8; 1 undecodable bytes were replaced" in capsys.readouterr().err
    with pytest.raises(DataError, match="not a text file"):
        read_rows(b"\x00\x01\x02\x03" * 100, "junk.csv")


# ---- injection -----------------------------------------------------------------------------
def test_injection_in_a_document_is_shown_not_run(hostile_env):
    doc = " ".join(PAYLOADS) + " The team won."
    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60).run()
    at.selectbox(key="model").set_value("tiny-hcan").run()
    at.text_area(key="document").input(doc).run()
    assert_nothing_interpreted(at)
    assert any("&lt;script&gt;" in e.proto.body.replace("<span", "").replace("</span>", "") or "&lt;" in e.proto.body
               for e in at.get("html"))


@pytest.mark.parametrize("page", ["pages/explore.py", "pages/compare.py", "pages/1_statistics.py",
                                  "pages/evaluation.py"])
def test_injection_in_label_and_data_set_names_is_shown_not_run(hostile_env, page):
    """A checkpoint whose labels and data set name are HTML, markdown and LaTeX: every page that
    shows them escapes them."""
    at = AppTest.from_file(str(REPO / page), default_timeout=120)
    at.session_state["explore_request"] = None
    at.run()
    for key in ("model", "model_a", "stats_model", "eval_model"):
        boxes = [b for b in at.selectbox if b.key == key]
        if boxes and "hostile" in boxes[0].options:
            boxes[0].set_value("hostile").run()
    if page == "pages/explore.py":
        at.text_area(key="document").input("The team won. " + PAYLOADS[2]).run()
        assert_nothing_interpreted(at)
        at.toggle(key="whatif").set_value(True).run()  # the prediction before and after an edit
        at.text_input(key="whatif_word").input("team").run()
        at.text_input(key="whatif_by").input("side").run()
        assert len(at.metric) >= 3
        assert_nothing_interpreted(at)
        at.toggle(key="whatif").set_value(False).run()
        at.toggle(key="trust").set_value(True).run()  # its sentence names the predicted label
        settle(at, 120)
    assert_nothing_interpreted(at)
    assert "hostile" in str([b.value for b in at.selectbox])


def test_injection_in_an_uploaded_file_name_and_labels(hostile_env):
    from tests.app.test_train_page import open_train_page, upload

    rows = ["text,label"] + [f"\"Film {i} was fine.\",\"{PAYLOADS[i % 2]}\"" for i in range(30)] + \
           [f"\"Match {i} was won.\",\"{PAYLOADS[2]}\"" for i in range(30)]
    at = upload(open_train_page(), ("\n".join(rows) + "\n").encode(), "<img src=x onerror=alert(9)>.csv")
    assert_nothing_interpreted(at)
    one_label = ["text,label"] + [f"\"Film {i}.\",\"{PAYLOADS[3]}\"" for i in range(30)]
    at = upload(open_train_page(), ("\n".join(one_label) + "\n").encode(), "x.csv")
    assert_nothing_interpreted(at)
    assert any("only one label" in shown(e.value) for e in at.error)


def test_injection_in_a_run_name(hostile_env, capsys):
    from tests.app.test_train_page import configure, open_train_page, toy_csv, upload

    at = configure(upload(open_train_page(), toy_csv()), "<img src=x onerror=alert(1)>", epochs=1)
    at.button(key="start").click().run()
    assert_nothing_interpreted(at)
    assert any("letters, digits" in shown(e.value) for e in at.error)
    cli_fails(["train", "--preset", "tweets-han", "--name", "<script>"], capsys, "letters, digits")


def test_markdown_helpers_escape_everything_markdown_reads():
    for payload in PAYLOADS:
        assert not any(mark in unescaped(md_text(payload)) for mark in RAW_MARKS)
        assert not any(mark in unescaped(md_code(payload)) for mark in RAW_MARKS)
    assert md_code("a`b") == "`aʹb`" and md_text("line\nbreak") == "line break"


def test_no_unsafe_html_is_built_from_user_text():
    """Scan every page and the app package: ``unsafe_allow_html=True`` only with a constant string,
    and ``st.html`` (or a column's ``.html``) only with a constant or the output of a
    ``viz.*_html`` function (each of which escapes user text; tests/viz/test_viz.py checks them),
    called directly or kept with its explanation (``ex.remembered(key, lambda: viz.*_html(...))``)."""

    def built_by_viz(arg) -> bool:
        return isinstance(arg, ast.Call) and bool(re.fullmatch(r"viz\.\w+_html", ast.unparse(arg.func)))

    def kept_viz(arg) -> bool:
        return (isinstance(arg, ast.Call) and ast.unparse(arg.func).endswith(".remembered") and len(arg.args) == 2
                and isinstance(arg.args[1], ast.Lambda) and built_by_viz(arg.args[1].body))

    offenders = []
    for path in [REPO / "app.py", *sorted((REPO / "hierattn" / "app").rglob("*.py")),
                 *sorted((REPO / "pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            unsafe = any(k.arg == "unsafe_allow_html" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                         for k in node.keywords)
            is_html = isinstance(node.func, ast.Attribute) and node.func.attr == "html" and name != "viz.html"
            if unsafe or is_html:  # st.html, and a column's or a container's .html
                arg = node.args[0] if node.args else None
                ok = isinstance(arg, ast.Constant) or ((built_by_viz(arg) or kept_viz(arg)) and not unsafe)
                if not ok:
                    offenders.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not offenders, offenders


def test_html_builders_escape_hostile_text():
    from hierattn import viz

    text = PAYLOADS[0] + " " + PAYLOADS[1]
    built = [viz.plain_text_html(text), viz.word_attention_html(text.split(), [(PAYLOADS[1], [0.5] * 4)], 0),
             viz.document_html(text, [(0, len(text), [(0, 8), (9, 14)])], [[0.5, 0.5]], [1.0]),
             viz.difference_html(text, [(0, len(text), [(0, 8)])], [[0.2]])]
    for body in built:
        assert "<script" not in body and "<img" not in body


# ---- uploads -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,raw,message", [
    ("empty.csv", b"", "no rows"),
    ("header.csv", b"text,label\n", "no rows"),
    ("ragged.csv", b"text,label\nfine,a\ntoo,many,fields\n", "line 3 has 3 fields; the header has 2"),
    ("short.csv", b"text,label\nfine,a\nalone\n", "line 3 has 1 field; the header has 2"),
    ("tabs.tsv", b"text\tlabel\nfine\ta\textra\n", "unquoted tab"),
    ("junk.csv", b"\x89PNG\r\n\x1a\n\x00\x00", "not a text file"),
])
def test_malformed_uploads(name, raw, message, tmp_path, capsys):
    with pytest.raises(DataError, match=re.escape(message)):
        read_rows(raw, name)
    (tmp_path / name).write_bytes(raw)
    cli_fails(["train", "--model", "han", "--file", str(tmp_path / name)], capsys, message)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_uploads_with_or_without_a_byte_order_mark(encoding):
    raw = "text,label\nCafé ☕ is open,a\n".encode(encoding)
    assert read_rows(raw, "x.csv") == [{"text": "Café ☕ is open", "label": "a"}]


def test_a_formula_cell_from_an_upload_is_neutralised_in_a_download():
    import pandas as pd

    frame = pd.DataFrame({"label": [PAYLOADS[5], "+1", "-2", "@SUM(A1)", "\t=x", "fine"]})
    cells = csv_bytes(frame).decode().splitlines()[1:]
    assert cells[0].startswith("\"'=cmd") or cells[0].startswith("'=cmd")
    assert all(not c.lstrip("\"").startswith(("=", "+", "-", "@", "\t")) for c in cells)


def test_an_upload_over_the_limit_from_the_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIERATTN_MAX_UPLOAD_MB", "0.001")
    f = tmp_path / "big.csv"
    f.write_bytes(b"text,label\n" + b"x,a\n" * 1000)
    cli_fails(["train", "--model", "han", "--file", str(f)], capsys, "over the limit of 0.001 MB")


@pytest.mark.parametrize("variable,value,content,message", [
    ("HIERATTN_MAX_ROWS", "50", b"text,label\n" + b"x,a\n" * 51, "the number of rows is more than 50"),
    ("HIERATTN_MAX_UPLOAD_TEXT_MB", "0.01", b"text,label\n" + b"xxxxxxxxxx,a\n" * 4000,
     "the decoded text's size is 0.05 MB, over the limit of 0.01 MB"),
])
def test_an_upload_beyond_its_row_or_text_limit_is_refused(tmp_path, capsys, monkeypatch, variable, value, content,
                                                          message):
    monkeypatch.setenv(variable, value)
    f = tmp_path / "many.csv"
    f.write_bytes(content)
    assert variable in cli_fails(["train", "--model", "han", "--file", str(f)], capsys, message)


# ---- checkpoints ---------------------------------------------------------------------------
class _Exploit:
    """Unpickling this creates a file: proof that a pickle was loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _damage_cases():
    def truncate(p):
        data = (p / "model.safetensors").read_bytes()
        (p / "model.safetensors").write_bytes(data[: len(data) // 2])

    def edit(change):
        def apply(p):
            config = json.loads((p / "config.json").read_text())
            change(config)
            (p / "config.json").write_text(json.dumps(config))
        return apply

    return [
        ("truncated weights", truncate, "model.safetensors is corrupted"),
        ("config does not match the weights", edit(lambda c: c["model_config"].update(d=32)), "has shape"),
        ("unknown model type", edit(lambda c: c.update(model_type="gpt5")), "'gpt5' is neither built in"),
        ("vocabulary of the wrong size", lambda p: (p / "vocab.json").write_text('["<pad>", "<unk>", "x"]'),
         "vocab.json has 3 words"),
        ("weights replaced by a link outside", lambda p: ((p / "model.safetensors").unlink(),
                                                         (p / "model.safetensors").symlink_to("/etc/passwd")),
         "link to a file outside"),
    ]


@pytest.mark.parametrize("what,damage,message", _damage_cases(), ids=[c[0] for c in _damage_cases()])
def test_damaged_checkpoints_in_the_cli_and_the_app(what, damage, message, checkpoint_dir, tmp_path, capsys,
                                                    monkeypatch):
    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir / "tiny-hcan", root / "broken")
    damage(root / "broken")
    with pytest.raises(CheckpointError, match=message):
        load_classifier(root / "broken", device="cpu")
    cli_fails(["explain", "--checkpoint", str(root / "broken"), "--text", "The team won."], capsys, message)
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60).run()
    assert not at.exception
    assert any(message in shown(e.value) for e in at.error), [e.value for e in at.error]


def test_an_extra_pickle_in_a_checkpoint_is_never_loaded(checkpoint_dir, tmp_path, capsys):
    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir / "tiny-hcan", root / "ck")
    marker = tmp_path / "pwned"
    for name in ("model.pt", "pytorch_model.bin", "optimizer.pkl"):
        (root / "ck" / name).write_bytes(pickle.dumps(_Exploit(marker)))
    assert list_checkpoints(root) == [root / "ck"]
    load_classifier(root / "ck", device="cpu")
    assert main(["explain", "--checkpoint", str(root / "ck"), "--text", "The team won."]) == 0
    capsys.readouterr()
    assert not marker.exists()
    pickle.loads((root / "ck" / "model.pt").read_bytes())  # the file really is an exploit
    assert marker.exists()


def test_a_link_leading_out_of_the_checkpoints_folder(checkpoint_dir, tmp_path, capsys):
    outside, root = tmp_path / "elsewhere", tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir / "tiny-hcan", outside / "secret")
    shutil.copytree(checkpoint_dir / "tiny-han", root / "ok")
    (root / "escape").symlink_to(outside / "secret")
    (root / "alias").symlink_to(root / "ok")  # a link inside the folder is fine
    assert [p.name for p in list_checkpoints(root)] == ["alias", "ok"]
    from hierattn.home import linked_out

    assert linked_out(root) == [root / "escape"]  # left out, and said so (the sidebar names it)
    with pytest.raises(CheckpointError, match="outside"):
        load_classifier(root / "escape", device="cpu")
    cli_fails(["explain", "--checkpoint", str(root / "escape"), "--text", "Hi there."], capsys, "outside")


def test_saving_never_replaces_a_folder_that_is_not_a_checkpoint(tmp_path, tiny_vocab, capsys):
    precious = tmp_path / "etc"
    precious.mkdir()
    (precious / "passwd").write_text("root:x:0:0")
    model = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4})
    with pytest.raises(CheckpointError, match="is not a checkpoint directory; refusing to replace it"):
        save_checkpoint(precious, model, "han", tiny_vocab, LABELS, TextConfig(), {})
    assert (precious / "passwd").read_text() == "root:x:0:0"
    cli_fails(["train", "--preset", "tweets-han", "--out", str(precious)], capsys, "refusing to replace it")
    assert (precious / "passwd").read_text() == "root:x:0:0"


@pytest.mark.parametrize("name,message", [
    ("../x", "letters, digits"), ("/etc", "letters, digits"), ("con", "reserved"), ("x" * 300, "1 to 64"),
])
def test_run_names_in_the_cli(name, message, capsys):
    cli_fails(["train", "--preset", "tweets-han", "--name", name], capsys, message)

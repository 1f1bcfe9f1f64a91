"""A folder's tokenizer reads pastes in a child process of bounded memory and time
(``hierattn.data.tokenizer_process``): a component no rule foresaw aborts or stalls the child, and
the paste gets a message, never the server."""
from __future__ import annotations

import json
import time

import pytest

from hierattn.data.tokenizer_process import TokenizerProcess
from hierattn.limits import LimitExceeded
from tests.models.tiny_transformers import FAMILIES, save_tiny

LIVENESS_S = 60  # the bounds below are the limits' (seconds); this only ends a stuck test


@pytest.fixture(scope="module")
def bert_spec(tmp_path_factory) -> dict:
    folder = save_tiny("bert", tmp_path_factory.mktemp("bert"))
    return json.loads((folder / "tokenizer.json").read_text())


@pytest.mark.parametrize("family", FAMILIES)
def test_the_child_encodes_as_the_library_does_in_process(family, tmp_path):
    from tokenizers import Tokenizer

    text = (save_tiny(family, tmp_path / family) / "tokenizer.json").read_text()
    library = Tokenizer.from_str(text)
    child = TokenizerProcess(text)
    try:
        for paste in ("I said hello to the class.", "Ünïcode, emoji 🙂 and  two  spaces.\n\nA new line."):
            ours, theirs = child.encode(paste), library.encode(paste, add_special_tokens=False)
            assert (ours.ids, ours.tokens, ours.offsets) == (theirs.ids, theirs.tokens, theirs.offsets)
    finally:
        child.close()


def test_a_chain_that_asks_for_gigabytes_ends_the_child_not_the_server(bert_spec):
    """Fifteen Replaces of "qq" by sixteen "q" (each within the per-step rule): a 23-character paste
    aborted the server asking for 4 GB."""
    spec = dict(bert_spec, normalizer={"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "qq"}, "content": "q" * 16}] * 15})
    child = TokenizerProcess(json.dumps(spec))
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="the tokenizer stopped while a text of 23 characters .* more than 1024 MB"):
        child.encode("I said qq to the class.")
    assert time.monotonic() - started < LIVENESS_S
    assert len(child.encode("I said hello to the class.").ids) == 7  # a fresh child reads on
    child.close()


def test_a_text_past_the_time_limit_is_stopped(bert_spec, monkeypatch):
    """WordPiece's per-word length raised to 10^9 makes its work cubic in a word's length."""
    monkeypatch.setenv("HIERATTN_TOKENIZER_SECONDS", "1")
    spec = json.loads(json.dumps(bert_spec))
    spec["model"]["max_input_chars_per_word"] = 10 ** 9
    child = TokenizerProcess(json.dumps(spec))
    child.encode("warm")  # the child started: what follows is one text's time
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="did not finish a text of 400,000 characters within 1 s"):
        child.encode("a" * 400_000)
    assert time.monotonic() - started < LIVENESS_S
    assert child._child is None  # ended, not left computing
    child.close()


def test_a_paste_on_a_hostile_folder_gets_a_message_and_the_model_reads_on(tmp_path, monkeypatch):
    """Through the app's own path (``explain``): the tokenizer's refusal is the page's message."""
    from hierattn.analysis.explain import ExplainError, explain
    from hierattn.checkpoint.reading import load_classifier

    folder = save_tiny("bert", tmp_path / "bert")
    classifier = load_classifier(folder, device="cpu")
    monkeypatch.setenv("HIERATTN_TOKENIZER_MB", "300")
    spec = json.loads(classifier.vocab.process.spec)
    spec["normalizer"] = {"type": "Sequence", "normalizers": [  # what no open-time rule saw: 2^30-fold
        {"type": "Replace", "pattern": {"String": "q"}, "content": "qq"}] * 30}
    monkeypatch.setattr(classifier.vocab, "process", TokenizerProcess(json.dumps(spec)))
    with pytest.raises(ExplainError, match="the tokenizer stopped while .* more than 300 MB"):
        explain(classifier, "I said q to the class.")
    assert explain(classifier, "A short note about the lecture.").probabilities  # no q: read as before
    classifier.vocab.process.close()


def test_models_of_one_tokenizer_share_one_child_and_few_are_kept(tmp_path, monkeypatch):
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.data import tokenizer_process

    folder = save_tiny("bert", tmp_path / "bert")
    first, again = load_classifier(folder, device="cpu"), load_classifier(folder, device="cpu")
    assert first.vocab.process is again.vocab.process
    monkeypatch.setattr(tokenizer_process, "_shared", type(tokenizer_process._shared)())
    monkeypatch.setattr(tokenizer_process, "KEPT_CHILDREN", 2)
    kept = [tokenizer_process.shared(json.dumps({"model": {"n": i}})) for i in range(3)]
    assert list(tokenizer_process._shared.values()) == kept[1:]  # the least recently used let go

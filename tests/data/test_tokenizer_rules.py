"""What a tokenizer.json may contain (``hierattn.data.tokenizer_rules``): the components known
families use, refused otherwise before the library reads the file (a backtracking Split regex held
the server's interpreter lock 65 s; a Replace grew "q" into 10,000 characters)."""
from __future__ import annotations

import json
import time

import pytest

from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.tokenizer_rules import tokenizer_problem
from hierattn.home import checkpoint_root
from tests.models.tiny_transformers import FAMILIES, save_tiny


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_we_know_is_read(family, tmp_path):
    folder = save_tiny(family, tmp_path / family)
    assert tokenizer_problem(json.loads((folder / "tokenizer.json").read_text())) is None


def test_the_shipped_tokenizers_are_read():
    for name in ("bbc-news-transformer", "tweets-transformer"):
        spec = json.loads((checkpoint_root() / name / "tokenizer.json").read_text())
        assert tokenizer_problem(spec) is None, name


def _hostile(folder, **changes):
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec.update(changes)
    (folder / "tokenizer.json").write_text(json.dumps(spec))


@pytest.mark.parametrize("changes,message", [
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "[A-Za-z .!?]*\\d"}, "behavior": "Isolated", "invert": False},
        {"type": "BertPreTokenizer"}]}}, "Split: its Regex pattern '\\[A-Za-z .!\\?\\]\\*\\\\\\\\d' is not one"),
    ({"normalizer": {"type": "Replace", "pattern": {"String": "q"}, "content": "q" * 10_000}},
     "Replace: it puts in 10000 characters for each match"),
    ({"normalizer": {"type": "Custom"}}, "normalizer of type 'Custom' is not one hierattn reads"),
])
def test_a_tokenizer_that_could_freeze_the_server_is_refused_before_it_is_read(tmp_path, changes, message):
    folder = save_tiny("bert", tmp_path / "bert")
    _hostile(folder, **changes)
    started = time.thread_time()  # this thread's CPU time: a busy machine does not inflate it
    with pytest.raises(CheckpointError, match=message):
        load_classifier(folder, device="cpu")
    assert time.thread_time() - started < 10


def test_known_regexes_and_short_replacements_are_read(tmp_path):
    folder = save_tiny("roberta", tmp_path / "roberta")
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}, {"type": "NFKC"}]}
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    assert load_classifier(folder, device="cpu").window > 0


def _replace_chain(count: int, pattern: str, content: str) -> dict:
    return {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": pattern}, "content": content} for _ in range(count)]}


@pytest.mark.parametrize("changes,message", [
    # fifteen Replaces within the per-step rule: a 23-character paste asked for 4 GB and aborted the server
    ({"normalizer": _replace_chain(15, "qq", "q" * 16)}, "can make a text 35,184,372,088,832 times longer"),
    ({"normalizer": _replace_chain(8, "qq", "qq" * 8)}, "can make a text 16,777,216 times longer"),
    ({"model": "wordpiece 10**9"}, "WordPiece reads words of up to 1000000000 characters"),
    ({"model": "id beyond"}, "emits token id 5000, outside the model's"),
])
def test_a_tokenizer_that_multiplies_its_work_is_refused_when_its_folder_opens(tmp_path, changes, message):
    folder = save_tiny("bert", tmp_path / "bert")
    spec = json.loads((folder / "tokenizer.json").read_text())
    if changes.get("model") == "wordpiece 10**9":
        spec["model"]["max_input_chars_per_word"] = 10 ** 9
    elif changes.get("model") == "id beyond":
        spec["added_tokens"].append({**spec["added_tokens"][-1], "id": 5000, "content": "[BEYOND]"})
    else:
        spec.update(changes)
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    started = time.thread_time()
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(")):
        load_classifier(folder, device="cpu")
    assert time.thread_time() - started < 10


def test_growth_is_a_product_and_shrinking_steps_do_not_pay_for_growing_ones():
    from hierattn.data.tokenizer_rules import MAX_GROWTH, normalizer_growth

    assert normalizer_growth(_replace_chain(2, "q", "qq")) == 4 <= MAX_GROWTH  # at the bound: read
    assert normalizer_growth(_replace_chain(3, "q", "qq")) == 8 > MAX_GROWTH
    shrink_then_grow = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "qqqq"}, "content": "q"},
        *_replace_chain(3, "q", "qq")["normalizers"]]}
    assert normalizer_growth(shrink_then_grow) == 8  # a shrinking step is counted as 1, never below
    assert normalizer_growth({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}) == 1


def test_every_id_the_shipped_tokenizers_emit_is_within_their_models_rows():
    from hierattn.data.tokenizer_rules import token_ids

    for name in ("bbc-news-transformer", "tweets-transformer", "tweets-minilm"):
        folder = checkpoint_root() / name
        spec = json.loads((folder / "tokenizer.json").read_text())
        vocab_size = json.loads((folder / "config.json").read_text())["vocab_size"]
        ids = token_ids(spec)
        assert max(ids) < vocab_size and tokenizer_problem(spec, vocab_size) is None, name
        assert max(ids) >= vocab_size * 0.9, name  # the ids read are the vocabulary's, not a few specials

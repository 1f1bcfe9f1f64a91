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

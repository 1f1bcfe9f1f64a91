import os

# The suite tests hierattn's own models: a plug-in named in the shell's environment is not loaded
# (the plug-in tests load theirs). Before hierattn.models is imported, which loads them.
os.environ.pop("HIERATTN_PLUGINS", None)

import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

# captum.attr and scipy.stats are imported here, in the main thread, before any test starts a
# background analysis: pytest rewrites the asserts of every imported file named like a test
# (scipy.stats' `_bws_test.py` is one), and a first import inside an app task's thread then compiles
# beside the main thread's, which Python 3.11 can fail at ("AST constructor recursion depth
# mismatch"). Outside pytest nothing is compiled.
import captum.attr  # noqa: E402, F401
import pytest  # noqa: E402
import scipy.stats  # noqa: E402, F401

from hierattn.data.text import Vocab, tokenize
from tests.tiers import (  # noqa: F401  the suite's tiers and their guard, as pytest hooks
    pytest_configure,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from tests.tiny import stand_in_names, write_stand_ins, write_tiny_checkpoints

CORPUS = [
    "The market rallied today. Shares in the bank rose sharply! Investors cheered the results.",
    "The striker scored twice. The team won the cup final on Sunday.",
    "I loved this film. The acting was great, and the story moved me!",
    "Terrible service. I will never go back. Was it really that bad?",
]
# The thread census (hierattn.threads) of the test session is its own: the tests' training
# processes neither make room for, nor take room from, runs that train beside the suite.
os.environ.setdefault("HIERATTN_RUNTIME", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                       f"hierattn-tests-{os.getpid()}", "census"))
# A test that names a checkpoints folder (HIERATTN_CHECKPOINTS) sees its own models alone, not the shipped
# ones beside them; a test without one sees the shipped models.
os.environ["HIERATTN_SHIPPED"] = "0"
# What the app keeps on disk for every worker (the out-of-domain references) goes to the session's own folder.
os.environ.setdefault("HIERATTN_CACHE", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                     f"hierattn-tests-{os.getpid()}", "cache"))
# Pasted documents the app keeps for links (hierattn/app/documents.py) go to the session's own folder.
os.environ.setdefault("HIERATTN_DOCUMENTS", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                         f"hierattn-tests-{os.getpid()}", "documents"))


@pytest.fixture(scope="session")
def tiny_vocab() -> Vocab:
    return Vocab.build([tokenize(t) for t in CORPUS], min_freq=1)


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory, tiny_vocab) -> Path:
    """A checkpoints/ folder with tiny untrained models of every type, a Hugging Face folder among
    them (``tests/tiny.py``): enough for the app's code paths."""
    return write_tiny_checkpoints(tmp_path_factory.mktemp("checkpoints"), tiny_vocab)


@pytest.fixture(scope="session")
def stand_in_checkpoints(tmp_path_factory, tiny_vocab) -> Path:
    """Tiny stand-ins for the shipped checkpoints the Tour names (``tests/tiny.py``): a HAN, an HCAN
    and a SANet of each data set, and the two transformers of the tweets."""
    return write_stand_ins(tmp_path_factory.mktemp("tour"), tiny_vocab, stand_in_names())


@pytest.fixture
def stand_ins(stand_in_checkpoints, monkeypatch) -> Path:
    """The app's checkpoints are the tiny stand-ins, under the shipped checkpoints' names."""
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(stand_in_checkpoints))
    return stand_in_checkpoints


@pytest.fixture
def train_env(checkpoint_dir, tmp_path, monkeypatch):
    """A writable copy of the tiny checkpoints, as the app's checkpoint folder (training adds to it)."""
    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir, root)
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    return root


@pytest.fixture
def app_env(checkpoint_dir, monkeypatch):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
    return checkpoint_dir


REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / "tests" / "corpora"  # one tiny synthetic file per local corpus format


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """A private corpus cache folder (HIERATTN_CACHE) for the test."""
    root = tmp_path / "cache"
    monkeypatch.setenv("HIERATTN_CACHE", str(root))
    return root


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def require_browser(suite: str) -> None:
    """Skip ``suite`` without Playwright or Chromium, saying so; under CI (``CI=true``) fail instead."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "Playwright is not installed"
    else:
        reason = None if Path(CHROMIUM).exists() else f"no Chromium at {CHROMIUM}"
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the {suite} cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"{suite.upper()} SKIPPED: {reason} (pip install playwright; apt-get install -y chromium)")


def edit_config(path: Path, change) -> None:
    """Apply ``change`` to a checkpoint's config.json dict and write it back."""
    import json

    config = json.loads((path / "config.json").read_text())
    change(config)
    (path / "config.json").write_text(json.dumps(config))


def shown(markdown: str) -> str:
    """Roughly what a reader sees of escaped markdown (``viz.md_text``): the backslashes go."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


os.chdir(REPO)

"""The wheel's data files (``setup.py``): the shipped checkpoints by a list, nothing else that
sits in checkpoints/ (built from a working copy, a wheel once carried 275 MB of its trained models)."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess

import pytest

from tests.conftest import REPO


def _setup_module():
    spec = importlib.util.spec_from_file_location("hierattn_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not __main__: setup() does not run
    return module


def test_the_list_is_the_tracked_checkpoints():
    listed = subprocess.run(["git", "ls-files", "checkpoints"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0 or not listed.stdout:
        pytest.skip("needs a git checkout")
    tracked = {line.split("/")[1] for line in listed.stdout.splitlines() if line.count("/") >= 2}
    assert set(_setup_module().SHIPPED_CHECKPOINTS) == tracked


def test_a_model_trained_here_stays_out_of_git():
    """A run of the Train page writes checkpoints/NAME; git leaves it out of `git status`, while
    every shipped checkpoint stays tracked."""
    probe = subprocess.run(["git", "check-ignore", "-q", "checkpoints/a-run-of-the-train-page/config.json"],
                           cwd=REPO, capture_output=True)
    if probe.returncode == 128:
        pytest.skip("needs a git checkout")
    assert probe.returncode == 0  # ignored
    shipped = subprocess.run(["git", "check-ignore", "-q", "checkpoints/tweets-han/config.json"], cwd=REPO,
                             capture_output=True)
    assert shipped.returncode == 1  # tracked: an ignore rule never hides it
    assert subprocess.run(["git", "ls-files", "--error-unmatch", "checkpoints/tweets-han/config.json"], cwd=REPO,
                          capture_output=True).returncode == 0


def test_a_working_copys_own_checkpoints_stay_out_of_the_wheel(tmp_path, monkeypatch):
    setup = _setup_module()
    shutil.copytree(REPO / "checkpoints" / "tweets-han", tmp_path / "checkpoints" / "tweets-han")
    shutil.copytree(REPO / "checkpoints" / "tweets-han", tmp_path / "checkpoints" / "my-own-run")
    (tmp_path / "checkpoints" / "stray.bin").write_bytes(b"x")
    monkeypatch.setattr(setup, "HERE", tmp_path)
    monkeypatch.setattr(setup, "SHIPPED", ("checkpoints",))
    carried = [f for _, files in setup.data_files() for f in files]
    assert carried and all(f.startswith("checkpoints/tweets-han/") for f in carried)

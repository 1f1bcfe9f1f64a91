"""The command line's parsers, each added by its command's module (``hierattn.cli``)."""
from __future__ import annotations

import pytest

from hierattn.cli import main
from hierattn.models import REGISTRY


def _model_help(capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps to the terminal's width, and at hyphens
    with pytest.raises(SystemExit) as exit:
        main(["train", "--help"])
    assert exit.value.code == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("--model MODEL"))
    return line.split("--model MODEL", 1)[1].strip()


def test_train_help_names_every_registered_model_type(capsys, monkeypatch):
    assert _model_help(capsys, monkeypatch) == "model type from the registry: " + ", ".join(REGISTRY)
    assert "transformer" in REGISTRY
    monkeypatch.setitem(REGISTRY, "a-plugins-model", REGISTRY["han"])  # a model registered later is named too
    assert _model_help(capsys, monkeypatch).endswith(", transformer, a-plugins-model")

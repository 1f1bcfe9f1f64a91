"""``fetch``: a Hub repository's safe files only, checked before they are listed. The Hub
is out of reach here: a stand-in serves a local folder as snapshot_download would."""
from __future__ import annotations

import fnmatch
import shutil

import pytest

from hierattn.checkpoint.reading import load_classifier
from tests.models.tiny_transformers import save_tiny


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A repository on a stand-in Hub: a tiny DistilBERT, plus code and a pickle that must not come."""
    import huggingface_hub

    repo = save_tiny("distilbert", tmp_path / "hub" / "someone" / "tiny")
    (repo / "modeling_evil.py").write_text("raise SystemExit('ran')\n")
    (repo / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")

    def snapshot_download(repo_id, revision=None, local_dir=None, allow_patterns=None):
        source = tmp_path / "hub" / repo_id
        for f in source.iterdir():
            if allow_patterns is None or any(fnmatch.fnmatch(f.name, p) for p in allow_patterns):
                shutil.copy(f, local_dir / f.name)
        return str(local_dir)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return repo


def test_fetch_takes_the_safe_files_and_lists_the_model(hub, tmp_path):
    from hierattn.cli import main

    out = tmp_path / "checkpoints" / "tiny"
    assert main(["fetch", "someone/tiny", "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {"config.json", "model.safetensors", "tokenizer.json",
                                               "tokenizer_config.json", "README.md"}
    assert load_classifier(out, device="cpu").display_name == "DistilBERT (2 layers × 2 heads)"


def test_a_repository_of_pickled_weights_is_refused(hub, tmp_path, capsys):
    from hierattn.cli import main

    (hub / "model.safetensors").unlink()
    out = tmp_path / "checkpoints" / "tiny"
    assert main(["fetch", "someone/tiny", "--out", str(out)]) == 2
    assert "has no model.safetensors" in capsys.readouterr().err and not out.exists()
    assert list(out.parent.iterdir()) == []  # no staging folder left behind

"""Where hierattn finds its own files (hierattn/home.py), and the command line's parts of it: a
checkpoint by name, and ``hierattn app``."""
from __future__ import annotations

import os

import pytest

from hierattn.cli import main
from hierattn.home import checkpoint_root, find_checkpoint, home
from tests.conftest import REPO


def test_a_checkout_is_its_own_home_and_holds_the_shipped_checkpoints(monkeypatch):
    monkeypatch.delenv("HIERATTN_HOME", raising=False)
    monkeypatch.delenv("HIERATTN_CHECKPOINTS", raising=False)
    assert home() == REPO
    assert checkpoint_root() == REPO / "checkpoints"


def test_hierattn_home_and_hierattn_checkpoints_name_other_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("HIERATTN_HOME", str(tmp_path))
    monkeypatch.delenv("HIERATTN_CHECKPOINTS", raising=False)
    assert home() == tmp_path and checkpoint_root() == tmp_path / "checkpoints"
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(tmp_path / "mine"))
    assert checkpoint_root() == tmp_path / "mine"


def test_hierattn_checkpoints_adds_a_folder_beside_the_shipped_models(monkeypatch, tmp_path, checkpoint_dir):
    """A folder of one's own is listed with the shipped models, its checkpoints first where names clash;
    HIERATTN_SHIPPED=0 lists it alone (as the suite does); training writes to it either way."""
    import shutil

    from hierattn.home import all_checkpoints, checkpoint_roots

    monkeypatch.delenv("HIERATTN_HOME", raising=False)
    mine = tmp_path / "mine"
    shutil.copytree(checkpoint_dir / "tiny-han", mine / "tiny-han")
    shutil.copytree(checkpoint_dir / "tiny-hcan", mine / "tweets-han")  # a name the shipped models have
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(mine))
    monkeypatch.setenv("HIERATTN_SHIPPED", "1")
    assert checkpoint_roots() == [mine, REPO / "checkpoints"] and checkpoint_root() == mine
    listed = {p.name: p for p in all_checkpoints()}
    assert {"tiny-han", "tweets-hcan", "bbc-news-han"} <= set(listed)
    assert listed["tweets-han"] == mine / "tweets-han" and find_checkpoint("tweets-han") == mine / "tweets-han"
    assert find_checkpoint("bbc-news-han") == REPO / "checkpoints" / "bbc-news-han"
    monkeypatch.setenv("HIERATTN_SHIPPED", "0")
    assert [p.name for p in all_checkpoints()] == ["tiny-han", "tweets-han"]
    monkeypatch.delenv("HIERATTN_CHECKPOINTS")
    assert checkpoint_roots() == [REPO / "checkpoints"]  # nothing to hide them beside


def test_a_checkpoint_is_found_by_path_or_by_name(monkeypatch, tmp_path, checkpoint_dir):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
    monkeypatch.chdir(tmp_path)
    assert find_checkpoint("tiny-han") == checkpoint_dir / "tiny-han"
    (tmp_path / "tiny-han").mkdir()  # a folder of that name here wins: a path is a path
    assert find_checkpoint("tiny-han").resolve() == tmp_path / "tiny-han"
    assert str(find_checkpoint("no-such-model")) == "no-such-model"  # left for the loader to refuse by name
    assert str(find_checkpoint("sub/tiny-han")) == "sub/tiny-han"  # a relative path is never a name


def test_explain_takes_a_checkpoint_by_name(monkeypatch, checkpoint_dir, capsys):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
    assert main(["explain", "--checkpoint", "tiny-hcan", "--text", "The team won.", "--compact"]) == 0
    assert '"checkpoint": "tiny-hcan"' in capsys.readouterr().out


def test_app_without_an_app_py_says_where_it_looked(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HIERATTN_HOME", str(tmp_path))
    assert main(["app", "--server.port", "1"]) == 2
    assert f"no app.py in {tmp_path}" in capsys.readouterr().err


def test_app_carries_the_apps_streamlit_settings_from_any_folder(monkeypatch, tmp_path):
    """Streamlit reads .streamlit/config.toml only from the folder it starts in: started elsewhere
    (an installed package), the app would send usage statistics and show visitors tracebacks."""
    import tomllib

    from streamlit import config

    monkeypatch.chdir(tmp_path)  # no .streamlit here
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "HIERATTN_HOME"))}
    environment["STREAMLIT_SERVER_MAX_UPLOAD_SIZE"] = "7"  # the user's own setting wins
    monkeypatch.setattr(os, "environ", environment)  # what the command sets stays out of this process
    started = {}

    def execv(program, command):
        started.update(command=command, env=dict(os.environ))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execv", execv)
    with pytest.raises(SystemExit):
        main(["app", "--server.port", "1"])
    assert started["command"][-3:] == [str(REPO / "app.py"), "--server.port", "1"]
    shipped = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    for section, options in shipped.items():
        for key, value in options.items():
            name = config._config_options_template[f"{section}.{key}"].env_var  # Streamlit's own name for it
            expected = "7" if key == "maxUploadSize" else str(value).lower() if isinstance(value, bool) else str(value)
            assert started["env"][name] == expected, name
    assert started["env"]["STREAMLIT_CLIENT_SHOW_ERROR_DETAILS"] == "type"
    assert started["env"]["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] == "false"


def test_other_commands_still_refuse_unknown_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["explain", "--checkpoint", "x", "--text", "y", "--server.port", "1"])
    assert "unrecognized arguments: --server.port 1" in capsys.readouterr().err

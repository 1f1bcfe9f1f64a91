"""The installable package, as a user outside the repository meets it: a wheel built from the
tracked files, installed in a fresh virtual environment, used from another folder. The environment
borrows this one's installed dependencies through a ``.pth`` file (no network, no second torch),
so only hierattn itself comes from the wheel, and the checks below would fail if anything still
read the checkout."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def _run(args: list, cwd: Path, env: dict, timeout: int = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _tracked_copy(destination: Path) -> Path:
    """The files a fresh clone would have (tracked, or new and not ignored), copied: the build writes
    beside them, and nothing generated or ignored (runs/, caches) reaches the wheel."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    if not (REPO / ".git").exists():
        pytest.skip("builds the wheel from the checkout's tracked files: needs a git checkout")
    work = tmp_path_factory.mktemp("package")
    source = _tracked_copy(work / "source")
    pip = [sys.executable, "-m", "pip"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIERATTN_") and k != "PYTHONPATH"}
    env["HIERATTN_THREADS"] = "1"
    _run(pip + ["wheel", ".", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", work / "dist"],
         source, env)
    wheel = next((work / "dist").glob("hierattn-*.whl"))

    target = work / "env"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    inner = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], work, env)
                 .stdout.strip())
    (inner / "outer-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run(pip + ["--python", python, "install", "--no-deps", "--no-index", "--quiet", wheel], work, env)
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return {"python": python, "bin": target / "bin", "cwd": elsewhere, "env": env, "wheel": wheel, "work": work}


def test_the_wheel_carries_the_package_the_app_and_every_shipped_checkpoint(installed):
    import zipfile

    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert "hierattn/__main__.py" in names and "hierattn/app/icon.png" in names
    shipped = {p.name for p in (REPO / "checkpoints").iterdir() if (p / "config.json").is_file()}
    in_wheel = {n.split("/")[5] for n in names if "/share/hierattn/checkpoints/" in n}
    assert shipped and in_wheel == shipped
    assert any(n.endswith("/share/hierattn/app.py") for n in names)
    assert any(n.endswith("/share/hierattn/.streamlit/config.toml") for n in names)  # hierattn app applies it
    assert any(n.endswith("/share/hierattn/pages/explore.py") for n in names)
    assert not any(n.startswith(("tests/", "bench/")) for n in names)


def test_hierattn_explain_runs_from_another_folder_on_a_shipped_checkpoint(installed):
    done = _run([installed["bin"] / "hierattn", "explain", "--checkpoint", "tweets-han", "--compact",
                 "--text", "What a lovely day. I am so happy!"], installed["cwd"], installed["env"])
    result = json.loads(done.stdout)
    assert result["checkpoint"] == "tweets-han" and result["label"] == "positive"
    where = _run([installed["python"], "-c", "import hierattn, hierattn.home as h; print(hierattn.__file__); "
                  "print(h.home())"], installed["cwd"], installed["env"]).stdout.split()
    assert where[0].startswith(str(installed["work"] / "env")), "hierattn came from the checkout, not the wheel"
    assert where[1].startswith(str(installed["work"] / "env")) and where[1].endswith("share/hierattn")


def test_the_notebook_api_imports_and_explains_from_the_installed_package(installed):
    script = ("import hierattn.notebook as nb\n"
              "from hierattn.home import checkpoint_root, list_checkpoints\n"
              "print(len(list_checkpoints(checkpoint_root())))\n"
              "model = nb.load('bbc-news-han')\n"
              "print(nb.explain(model, 'The striker scored twice. The team won the cup final.').label)\n")
    count, label = _run([installed["python"], "-c", script], installed["cwd"], installed["env"]).stdout.split()
    assert int(count) == len([p for p in (REPO / "checkpoints").iterdir() if (p / "config.json").is_file()])
    assert label == "sports"


def test_the_example_plug_in_installs_and_registers_through_its_entry_point(installed):
    example = shutil.copytree(REPO / "examples" / "bigru_attention", installed["work"] / "bigru_attention",
                              ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    _run([sys.executable, "-m", "pip", "--python", installed["python"], "install", "--no-deps", "--no-index",
          "--no-build-isolation", "--quiet", example], installed["cwd"], installed["env"])
    done = _run([installed["python"], "-c", "from hierattn.models import REGISTRY, plugin_problems; "
                 "print(REGISTRY['bigru_attention'].name, plugin_problems())"], installed["cwd"], installed["env"])
    assert done.stdout.split()[0] == "bigru_attention" and done.stdout.strip().endswith("[]")


def test_hierattn_app_serves_the_installed_app(installed):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([installed["bin"] / "hierattn", "app", "--server.headless", "true",
                               "--server.port", str(port), "--server.address", "127.0.0.1"],
                              cwd=installed["cwd"], env=installed["env"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline, health = time.time() + 120, ""
        while time.time() < deadline and server.poll() is None and health != "ok":
            time.sleep(1)
            try:
                health = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5).read().decode()
            except OSError:
                continue
        assert health == "ok", f"the installed app did not start: {server.poll()}"
    finally:
        server.terminate()
        server.communicate(timeout=30)

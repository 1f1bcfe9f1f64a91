"""Where hierattn's own files are: the folder holding ``app.py``, ``pages/``, ``checkpoints/``,
``experiments/`` and ``results/``, and the checkpoints folder within it.

In a checkout it is the repository root, beside the ``hierattn`` package. A wheel carries the same
files as data files under ``<prefix>/share/hierattn`` (``setup.py`` lists them), so an installed
package finds its shipped checkpoints, its registry and its app there; ``hierattn app`` serves that
``app.py``. ``HIERATTN_HOME`` names another such folder. Imports nothing of hierattn: every layer may
ask where its files are.
"""
from __future__ import annotations

import os
import site
import sysconfig
from pathlib import Path

# The wheel's data files go here, relative to the install scheme's data folder (setup.py).
INSTALLED = Path("share") / "hierattn"


def inside(path: Path, folder: Path) -> bool:
    """``path`` leads inside ``folder`` once every link is followed."""
    return path.resolve().is_relative_to(folder.resolve())


def list_checkpoints(root: str | Path) -> list[Path]:
    """Checkpoint directories directly under ``root``, sorted by name: hidden temporaries, folders
    without a config.json and links leading out of ``root`` are left out."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (p / "config.json").exists() and not (p.is_symlink() and not inside(p, root)))


def linked_out(root: str | Path) -> list[Path]:
    """The links directly under ``root`` to a checkpoint folder outside it, which ``list_checkpoints``
    leaves out (a folder is read only where it sits): said, not skipped without a word."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_symlink() and p.is_dir() and (p / "config.json").exists()
                  and not inside(p, root))


def is_home(folder: Path) -> bool:
    return (folder / "app.py").is_file() and (folder / "pages").is_dir()


def home() -> Path:
    """``$HIERATTN_HOME``; else the checkout this package sits in; else where the wheel installed its
    data files (the environment's prefix, or the user's base for ``pip install --user``)."""
    if os.environ.get("HIERATTN_HOME"):
        return Path(os.environ["HIERATTN_HOME"]).expanduser()
    checkout = Path(__file__).resolve().parent.parent
    if is_home(checkout):
        return checkout
    candidates = [Path(sysconfig.get_path("data")) / INSTALLED, Path(site.getuserbase()) / INSTALLED]
    return next((c for c in candidates if is_home(c)), candidates[0])


def shipped_root() -> Path:
    """``checkpoints/`` in :func:`home`: the models the app ships."""
    return home() / "checkpoints"


def checkpoint_root() -> Path:
    """Where checkpoints are written (the Train page, ``train``, ``fetch``): ``$HIERATTN_CHECKPOINTS``
    when set (an installed package that trains its own models names a writable folder there), else
    :func:`shipped_root`."""
    return Path(os.environ.get("HIERATTN_CHECKPOINTS") or shipped_root())


def checkpoint_roots() -> list[Path]:
    """The folders whose checkpoints are listed, first found first: ``$HIERATTN_CHECKPOINTS`` adds a
    folder beside the shipped models rather than hiding them; with ``HIERATTN_SHIPPED=0`` it is listed
    alone (the test suite's own tiny models are listed so)."""
    own, shipped = os.environ.get("HIERATTN_CHECKPOINTS"), shipped_root()
    if not own:
        return [shipped]
    alone = os.environ.get("HIERATTN_SHIPPED", "1").strip() == "0"
    return [Path(own)] if alone or Path(own).resolve() == shipped.resolve() else [Path(own), shipped]


def all_checkpoints() -> list[Path]:
    """Every listed checkpoint (:func:`checkpoint_roots`), sorted by name; where two folders hold the
    same name, the first folder's (yours over a shipped one)."""
    found: dict[str, Path] = {}
    for root in checkpoint_roots():
        for path in list_checkpoints(root):
            found.setdefault(path.name, path)
    return [found[name] for name in sorted(found)]


def find_checkpoint(checkpoint: str | Path) -> Path:
    """A checkpoint folder by path, or by name in :func:`checkpoint_roots` (``tweets-han``); the
    path as given when neither is a folder, so that loading it says what is wrong."""
    path = Path(checkpoint)
    if path.is_dir() or path.is_absolute() or len(path.parts) != 1:
        return path
    return next((root / path for root in checkpoint_roots() if (root / path).is_dir()), path)

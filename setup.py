"""The wheel's data files: app.py, its .streamlit/config.toml, pages/, checkpoints/, experiments/ and
results/ under share/hierattn, where hierattn/home.py finds them in an installed package.
pyproject.toml holds everything else; setuptools reads both. A folder is walked here, so a new
shipped checkpoint needs no edit."""
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SHIPPED = ("app.py", ".streamlit/config.toml", "pages", "checkpoints", "experiments", "results")


def data_files() -> list[tuple[str, list[str]]]:
    grouped: dict[str, list[str]] = {}
    for name in SHIPPED:
        top = HERE / name
        files = [top] if top.is_file() else sorted(
            p for p in top.rglob("*") if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith("."))
        for file in files:
            relative = file.relative_to(HERE)
            grouped.setdefault(str(Path("share", "hierattn", relative.parent)), []).append(relative.as_posix())
    return sorted(grouped.items())


setup(data_files=data_files())

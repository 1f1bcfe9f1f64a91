"""The wheel's data files: app.py, its .streamlit/config.toml, pages/, checkpoints/, experiments/ and
results/ under share/hierattn, where hierattn/home.py finds them in an installed package.
pyproject.toml holds everything else; setuptools reads both. checkpoints/ is carried by a list: a
working copy's own models (275 MB of them in one) stay out of a wheel built from it, and a new
shipped checkpoint is added here (``tests/test_setup.py`` holds the list to the tracked folders)."""
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SHIPPED = ("app.py", ".streamlit/config.toml", "pages", "checkpoints", "experiments", "results")
SHIPPED_CHECKPOINTS = ("bbc-news-han", "bbc-news-hcan", "bbc-news-sanet", "bbc-news-transformer", "tweets-halstm",
                       "tweets-han", "tweets-hcan", "tweets-kimcnn", "tweets-mahnn", "tweets-minilm", "tweets-onlstm",
                       "tweets-sanet", "tweets-transformer")


def data_files() -> list[tuple[str, list[str]]]:
    grouped: dict[str, list[str]] = {}
    for name in SHIPPED:
        top = HERE / name
        files = [top] if top.is_file() else sorted(
            p for p in top.rglob("*") if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith("."))
        for file in files:
            relative = file.relative_to(HERE)
            if relative.parts[0] == "checkpoints" and (len(relative.parts) < 3
                                                       or relative.parts[1] not in SHIPPED_CHECKPOINTS):
                continue
            grouped.setdefault(str(Path("share", "hierattn", relative.parent)), []).append(relative.as_posix())
    return sorted(grouped.items())


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it for data_files
    setup(data_files=data_files())

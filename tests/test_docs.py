"""The documentation points at things that exist: every file path, module path and test it names
(README.md, docs/*.md), so a move that forgets the docs fails here."""
from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "examples").glob("*/README.md"))]
ALIASES = {"hostile": "test_hostile_input", "faults": "test_faults"}


def _code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_named_files_exist(doc):
    missing = []
    for span in _code_spans(doc.read_text(encoding="utf-8")):
        for path in re.findall(r"(?:^|[\s(])((?:hierattn|tests|pages|bench|docs|examples)/[\w/.-]*\w)", " " + span):
            if not (REPO / path).exists() and not any((REPO / path).parent.glob((REPO / path).name + "*")):
                missing.append(path)
    assert not missing, f"{doc.name} names paths that do not exist: {sorted(set(missing))}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_named_modules_exist(doc):
    missing = []
    for span in _code_spans(doc.read_text(encoding="utf-8")):
        for dotted in re.findall(r"\bhierattn(?:\.\w+)+", span):
            parts = dotted.split(".")
            # the longest prefix that is a module or package; what follows it must be named in it
            for cut in range(len(parts), 0, -1):
                base = REPO.joinpath(*parts[:cut])
                module = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
                if module.exists():
                    rest = parts[cut:]
                    if rest and not re.search(rf"\b{re.escape(rest[0])}\b", module.read_text(encoding="utf-8")):
                        missing.append(dotted)
                    break
            else:
                missing.append(dotted)
    assert not missing, f"{doc.name} names modules that do not exist: {sorted(set(missing))}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_named_tests_exist(doc):
    missing = []
    for path, name in re.findall(r"`([\w/]+)::(\w+)`", doc.read_text(encoding="utf-8")):
        file = REPO / "tests" / (ALIASES.get(path, path) + ".py")
        if not file.exists() or not re.search(rf"^def {name}\(", file.read_text(encoding="utf-8"), re.M):
            missing.append(f"{path}::{name}")
    assert not missing, f"{doc.name} names tests that do not exist: {missing}"


def test_the_readme_is_set_up_test_train_use_cite_and_links():
    """The README is what a newcomer needs first, as nanoGPT's is: set up and run, test, train, use,
    the models, how to cite, and the links to docs/, where the walkthrough, the pages, the results
    and the science live. It names the Python version and no folder a clone lacks (../shared)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Set up and run", "## Test", "## Train",
                        "## Use it from the command line, a notebook or Python", "## Models and data", "## Cite",
                        "## Documentation"]
    assert "pip install -r requirements.txt\nstreamlit run app.py\n" in text
    assert "pip install -r requirements-test.txt && ruff check . && python -m pytest -q -m" in text
    assert "Python 3.11" in text and "../shared" not in text
    assert "<!-- report:" not in text  # the generated tables live in docs/RESULTS.md
    assert len(text.splitlines()) <= 250
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", text))
    pages = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert linked == pages, f"the README links no docs page of {sorted(pages - linked)}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_linked_images_and_pages_exist(doc):
    text = doc.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if target.startswith(("http://", "https://", "mailto:", "javascript:")):  # the last: a hostile input
            continue
        assert (doc.parent / target).exists(), f"{doc.name} links to {target}, which is not there"


def _anchors(doc) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (outside code blocks): lower case, spaces to
    hyphens, punctuation other than hyphens dropped."""
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.M | re.S)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_ci_runs_the_readmes_test_commands_in_their_order():
    """CI runs what the README tells a contributor to run, both tiers, in the same order: a check left
    out of either command would leave CI."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text[text.index("## Test"):].split("```")[1]
    commands = [part.strip() for line in block.splitlines() for part in line.split("&&") if part.strip()]
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip().startswith(("python -m pytest", "ruff check"))]
    assert [c for c in commands if c.startswith(("python -m pytest", "ruff check"))] == ci
    tiers = [c for c in ci if c.startswith("python -m pytest")]
    assert tiers == ['python -m pytest -q -m "not slow or system" --durations=30',
                     'python -m pytest -q -m "slow and not system" --durations=30']  # together, every test


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_linked_sections_exist(doc):
    text = doc.read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        page = doc.parent / target if target else doc
        assert anchor in _anchors(page), f"{doc.name} links to {target}#{anchor}, a section {page.name} lacks"


def test_no_text_a_user_reads_names_an_issue_number():
    """The app, the package's docstrings and the documents say what is measured and why; the history of
    fixes, by issue number, lives in docs/CHANGES.md. (A third party's issue tracker, cited as such, is
    a reference, not our history.)"""
    pattern = re.compile(r"\bissues? \d+", re.IGNORECASE)
    files = [*REPO.glob("hierattn/**/*.py"), *REPO.glob("pages/*.py"), REPO / "app.py", REPO / "README.md",
             *(p for p in REPO.glob("docs/*.md") if p.name != "CHANGES.md"), REPO / "BENCHMARKS.md"]
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in files
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line) and "streamlit issues" not in line.lower()]
    assert not found, "\n".join(found)
    changes = (REPO / "docs" / "CHANGES.md").read_text(encoding="utf-8")
    assert re.search(r"^## Issues? \d+", changes, re.MULTILINE)  # the history is where the doc says

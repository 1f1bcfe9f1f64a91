"""The architecture of docs/ARCHITECTURE.md, checked on the source: what each layer may import, how
long a module and a page may grow, that no module re-exports names for its callers, and where a
model may be named. Parsed with ``ast``, nothing
imported, so a violation is reported by file and line. Each rule is a function of a source tree;
the last test runs them on a small tree with one violation of each, so none of them passes by
reading nothing."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from hierattn.models import BUILT_IN
from tests.conftest import REPO

# Layer -> the parts of hierattn it may import (a prefix of the dotted module path), bottom up. A
# layer may always import its own modules.
ALLOWED: dict[str, tuple[str, ...]] = {
    "contract": (),
    "threads": (),
    "limits": (),  # what a request, upload, checkpoint or server may spend
    "home": (),  # where app.py, checkpoints/, experiments/ and results/ are: a checkout, or an installed wheel
    "data": ("contract", "limits"),
    # token and vocabulary types (words, subword tokens); never loaders, splits or batches
    "models": ("contract", "limits", "data.text", "data.subwords", "data.tokenizer_rules"),  # a folder bounded
    "card": ("contract", "data", "models"),  # a checkpoint's README.md, from its JSON files
    "budget": ("contract", "limits", "data", "models"),  # a model within the limits, before it is built at size
    "checkpoint": ("contract", "home", "limits", "data", "models", "card", "budget"),
    "analysis": ("contract", "home", "limits", "data", "models", "budget", "card", "checkpoint"),
    "viz": ("contract", "limits", "data", "analysis"),  # limits: a figure sized as an explanation keeps it
    "training": ("contract", "home", "threads", "limits", "data", "models", "budget", "checkpoint", "analysis"),
    "experiments": ("contract", "home", "threads", "limits", "data", "models", "checkpoint", "analysis", "training",
                    "viz.svg"),
    "cli": ("contract", "home", "threads", "limits", "data", "models", "budget", "checkpoint", "analysis", "training",
            "experiments"),
    "app": ("contract", "home", "threads", "limits", "data", "models", "budget", "checkpoint", "analysis", "training",
            "experiments", "viz"),
    "pages": ("app", "viz", "analysis", "data", "home", "checkpoint", "training", "experiments"),
    # the app's views, without Streamlit
    "notebook": ("contract", "home", "data", "models", "checkpoint", "analysis", "viz"),
}
# Modules of an allowed layer that a layer may still not import: viz draws tensors, words, spans and
# labels, never an explanation (where ``Explanation`` and ``explain`` live).
NOT_FROM: dict[str, tuple[str, ...]] = {"viz": ("analysis.explain",)}
# Third-party libraries that belong to some layers only (the bench and the tests may use any).
ONLY_IN = {"streamlit": {"app", "pages", "app.py"}, "plotly": {"viz"}, "playwright": set()}
NEVER = {"viz": {"torch"}, "app": {"torch"}, "pages": {"torch"}, "app.py": {"torch"}, "notebook": {"torch"}}
MAX_MODULE_LINES = 400
MAX_PAGE_LINES = 150


def sources(root: Path) -> list[Path]:
    return sorted((root / "hierattn").rglob("*.py")) + sorted((root / "pages").glob("*.py")) + [root / "app.py"]


def layer_of(root: Path, path: Path) -> str:
    rel = path.relative_to(root)
    if rel.parts[0] in ("pages", "app.py"):
        return rel.parts[0]
    inner = rel.relative_to("hierattn")
    return inner.parts[0].removesuffix(".py") if inner.name not in ("__init__.py", "__main__.py") or len(
        inner.parts) > 1 else "hierattn"


def module_of(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_from(root: Path, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from ... import``, relative ones resolved against ``path``'s package."""
    here = module_of(root, path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    base = package[: len(package) - node.level + 1] if node.level else []
    return ".".join(base + ([node.module] if node.module else []))


def imports(root: Path, path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names imported from it) for every import, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, imported_from(root, path, node), [alias.name for alias in node.names]))
    return found


def string_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def where(root: Path, path: Path, line: int) -> str:
    return f"{path.relative_to(root)}:{line}"


def layer_violations(root: Path) -> list[str]:
    wrong = []
    for path in sources(root):
        layer = layer_of(root, path)
        if layer in ("hierattn", "app.py"):
            continue
        allowed = ALLOWED[layer] + ((layer,) if layer != "pages" else ())
        for line, module, _ in imports(root, path):
            if not module.startswith("hierattn."):
                continue
            inner = module.removeprefix("hierattn.")
            refused = NOT_FROM.get(layer, ())
            if not any(inner == a or inner.startswith(a + ".") for a in allowed) or any(
                    inner == r or inner.startswith(r + ".") for r in refused):
                wrong.append(f"{where(root, path, line)}: {layer} imports {module}")
    return wrong


def library_violations(root: Path) -> list[str]:
    wrong = []
    for path in sources(root):
        layer = layer_of(root, path)
        for line, module, _ in imports(root, path):
            top = module.split(".")[0]
            if top in ONLY_IN and layer not in ONLY_IN[top]:
                wrong.append(f"{where(root, path, line)}: {top} belongs to {sorted(ONLY_IN[top]) or 'bench, tests'}")
            if top in NEVER.get(layer, ()):
                wrong.append(f"{where(root, path, line)}: {layer} imports {top}")
    return wrong


def private_import_violations(root: Path) -> list[str]:
    wrong = []
    for path in sources(root):
        for line, module, names in imports(root, path):
            if module.startswith("hierattn") and module != module_of(root, path):
                wrong += [f"{where(root, path, line)}: {module}.{n}" for n in names if n.startswith("_")]
    return wrong


def size_violations(root: Path) -> list[str]:
    def lines(p: Path) -> int:
        return len(p.read_text(encoding="utf-8").splitlines())

    return ([f"{p.relative_to(root)}: {lines(p)} lines > {MAX_MODULE_LINES}"
             for p in (root / "hierattn").rglob("*.py") if lines(p) > MAX_MODULE_LINES]
            + [f"{p.relative_to(root)}: {lines(p)} lines > {MAX_PAGE_LINES}"
               for p in (root / "pages").glob("*.py") if lines(p) > MAX_PAGE_LINES])


def module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements that run when the module is imported, those inside its ``if``, ``try`` and
    ``with`` blocks included; not those of its functions and classes."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop(0)
        found.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += [n for field in ("body", "orelse", "finalbody", "handlers") for n in getattr(node, field, [])]
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
    return found


def reexport_violations(root: Path) -> list[str]:
    """A name a module imports from hierattn and never uses is there for other modules to import
    from it: a re-export, which hides where the name lives (split a module by meaning, and its
    callers import each name from its home). A package's ``__init__.py`` may gather names; an import
    inside a function binds no module attribute, so only module-level imports count. Used: read as a
    name anywhere in the module (an attribute's base is one), or listed in ``__all__``."""
    wrong = []
    for path in sorted((root / "hierattn").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        for node in tree.body:
            if isinstance(node, ast.Assign) and "__all__" in {t.id for t in node.targets if isinstance(t, ast.Name)}:
                used |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
        for node in module_level(tree):
            if isinstance(node, ast.ImportFrom):
                module = imported_from(root, path, node)
                bound = [(f"{module}.{a.name}", a.asname or a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                module = ""
                bound = [(a.name, a.asname or a.name.split(".")[0]) for a in node.names]
            else:
                continue
            wrong += [f"{where(root, path, node.lineno)}: {name} is imported and never used (a re-export)"
                      for name, binding in bound
                      if (module or name).split(".")[0] == "hierattn" and binding not in used]
    return wrong


def imported_through_violations(root: Path) -> list[str]:
    """The other side of a re-export: a caller that imports a name from a module that only imported
    it (from another module of hierattn) reads it through a shim, even where that module uses the
    name itself. Each name is imported from its home; a package's ``__init__.py`` may gather names."""
    borrowed: dict[Path, dict[str, str]] = {}

    def borrowed_by(module_file: Path) -> dict[str, str]:
        if module_file not in borrowed:
            tree = ast.parse(module_file.read_text(encoding="utf-8"))
            borrowed[module_file] = {a.asname or a.name: imported_from(root, module_file, node)
                                     for node in module_level(tree) if isinstance(node, ast.ImportFrom)
                                     and imported_from(root, module_file, node).startswith("hierattn")
                                     for a in node.names}
        return borrowed[module_file]

    wrong = []
    for path in sources(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = imported_from(root, path, node)
            module_file = root.joinpath(*module.split(".")).with_suffix(".py")
            if not module.startswith("hierattn.") or not module_file.is_file():
                continue  # another library's, or a package's __init__.py
            home = borrowed_by(module_file)
            wrong += [f"{where(root, path, node.lineno)}: {module}.{a.name} lives in {home[a.name]}"
                      for a in node.names if a.name in home]
    return wrong


def model_name_violations(root: Path, names: set[str]) -> list[str]:
    """One registration point per model: only the model's own file and the presets (recipes,
    which are data) name a model type; everything else asks the spec."""
    exempt = {root / "hierattn" / "training" / "presets.py"} | set((root / "hierattn" / "models").glob("*.py"))
    return [f"{where(root, p, line)}: {value!r}" for p in sources(root) if p not in exempt
            for line, value in string_literals(p) if value in names]


def map_name_violations(root: Path) -> list[str]:
    # A map is named "<level>.<what>" (word.maxpool); a page that tests for one knows something
    # about a model that the map's axes should tell it.
    return [f"{where(root, p, line)}: {value!r}" for p in sorted((root / "pages").glob("*.py"))
            for line, value in string_literals(p) if re.fullmatch(r"(word|sentence|document)\.\w+", value)]


def import_cycle_violations(root: Path) -> list[str]:
    """Each circle of hierattn modules that import one another (at any depth, inside functions
    too), once: the shortest through the first of its modules by name. A module imported by a
    ``from package import module`` counts as that module, not as its package."""
    paths = {module_of(root, p): p for p in sorted((root / "hierattn").rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = set()
        for _, module, names in imports(root, path):
            submodules = {f"{module}.{n}" for n in names if f"{module}.{n}" in paths}
            targets |= submodules
            if module in paths and len(submodules) < max(len(names), 1):
                targets.add(module)
        graph[name] = targets - {name}

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reach = {name: reaches(name) for name in graph}
    wrong, reported = [], set()
    for first in sorted(graph):
        circle = {m for m in reach[first] if first in reach[m]} | {first}
        if len(circle) < 2 or circle & reported:
            continue
        reported |= circle
        paths_to = {first: [first]}  # breadth first, within the circle: the shortest way back to ``first``
        todo = [first]
        while todo:
            here = todo.pop(0)
            if first in graph[here]:
                wrong.append(" -> ".join(paths_to[here] + [first]))
                break
            for nxt in sorted(graph[here] & circle):
                if nxt not in paths_to:
                    paths_to[nxt] = paths_to[here] + [nxt]
                    todo.append(nxt)
    return wrong


def unexported_figure_violations(root: Path) -> list[str]:
    """A figure reaches a page only through ``app.downloads.chart``, which puts its Export under
    it: a lecture's every figure can be a slide (the training curve once could not)."""
    exempt = root / "hierattn" / "app" / "downloads.py"
    return [f"{where(root, p, node.lineno)}: plotly_chart" for p in sources(root) if p != exempt
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr == "plotly_chart"]


def test_every_layer_imports_only_the_layers_below_it():
    assert not (wrong := layer_violations(REPO)), "\n".join(wrong)


def test_third_party_libraries_stay_in_their_layer():
    assert not (wrong := library_violations(REPO)), "\n".join(wrong)


def test_no_module_imports_another_modules_private_names():
    assert not (wrong := private_import_violations(REPO)), "\n".join(wrong)


def test_modules_and_pages_stay_small():
    wrong = size_violations(REPO)
    assert not wrong, "split these, or move a page's logic into hierattn.app:\n" + "\n".join(wrong)


def test_no_module_re_exports_names_for_its_callers():
    wrong = reexport_violations(REPO)
    assert not wrong, "import each of these from the module that defines it:\n" + "\n".join(wrong)


def test_callers_import_each_name_from_the_module_that_defines_it():
    assert not (wrong := imported_through_violations(REPO)), "\n".join(wrong)


def test_a_model_is_named_only_in_its_own_file_and_the_presets():
    assert not (wrong := model_name_violations(REPO, set(BUILT_IN))), "\n".join(wrong)


def test_pages_draw_maps_by_their_axes_never_by_their_names():
    assert not (wrong := map_name_violations(REPO)), "\n".join(wrong)


def test_every_figure_on_a_page_has_its_export():
    wrong = unexported_figure_violations(REPO)
    assert not wrong, "draw these with app.downloads.chart:\n" + "\n".join(wrong)


def test_no_two_modules_import_each_other_in_a_circle():
    wrong = import_cycle_violations(REPO)
    assert not wrong, "move what both need into a module one floor down that neither imports:\n" + "\n".join(wrong)


def test_each_rule_finds_its_violation_in_a_small_tree(tmp_path):
    def write(rel: str, text: str) -> None:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")

    write("app.py", "import streamlit as st\n")
    write("hierattn/__init__.py", "")
    write("hierattn/models/__init__.py", "")
    write("hierattn/models/toy.py", "from ..data.dataset import Dataset\nfrom hierattn.data.text import Vocab\n"
                                    "toy = Dataset, Vocab\n")
    write("hierattn/viz/figures.py", "import torch\nimport plotly\n")
    write("hierattn/viz/html.py", "from hierattn.analysis.explain import Explanation\n\nExplanation()\n")
    write("hierattn/analysis/tour.py", "from hierattn.analysis.metrics import _private, public\n"
                                       "import streamlit\nx = _private, public\n" + "x = 1\n" * (MAX_MODULE_LINES - 1))
    write("hierattn/app/loading.py", "from hierattn.cli import main\nrun = main\n")
    # re-exports: checkpoint/writing.py passes on `inside` and `fsync`; the package's __init__.py may
    # gather names, and a name imported inside a function is no module attribute
    write("hierattn/data/files.py", "def fsync(path):\n    pass\n")
    write("hierattn/data/__init__.py", "from hierattn.data.files import fsync\n")
    write("hierattn/checkpoint/__init__.py", '"""A package: its modules are the layer checkpoint."""\n')
    write("hierattn/checkpoint/writing.py", "from hierattn.data.files import fsync\n"
                                            "from hierattn.home import inside\n\n\n"
                                            "def save(path):\n    from hierattn.data.files import fsync as unused\n"
                                            "    fsync(path)\n")
    write("hierattn/checkpoint/reading.py", "from hierattn.analysis import explain\nx = explain\n")
    write("hierattn/training/corpus.py", "from hierattn.checkpoint.writing import fsync\n"
                                         "from hierattn.data import fsync as f\nwritten = fsync, f\n")
    write("pages/explore.py", "import torch\nkind = 'toy'\nif kind == 'word.maxpool':\n    pass\n"
                              "import streamlit as st\nst.plotly_chart(kind)\n")
    write("hierattn/app/tasks.py", "def f():\n    from hierattn.app import visitors\n")  # inside a function
    write("hierattn/app/visitors.py", "from hierattn.app.tasks import f\n\nf()\n")

    assert layer_violations(tmp_path) == ["hierattn/app/loading.py:1: app imports hierattn.cli",
                                          "hierattn/checkpoint/reading.py:1: checkpoint imports hierattn.analysis",
                                          "hierattn/models/toy.py:1: models imports hierattn.data.dataset",
                                          "hierattn/viz/html.py:1: viz imports hierattn.analysis.explain"]
    assert library_violations(tmp_path) == [
        "hierattn/analysis/tour.py:2: streamlit belongs to ['app', 'app.py', 'pages']",
        "hierattn/viz/figures.py:1: viz imports torch",
        "pages/explore.py:1: pages imports torch"]
    assert private_import_violations(tmp_path) == ["hierattn/analysis/tour.py:1: hierattn.analysis.metrics._private"]
    too_long = MAX_MODULE_LINES + 2
    assert size_violations(tmp_path) == [f"hierattn/analysis/tour.py: {too_long} lines > {MAX_MODULE_LINES}"]
    assert reexport_violations(tmp_path) == [
        "hierattn/checkpoint/writing.py:2: hierattn.home.inside is imported and never used (a re-export)"]
    assert imported_through_violations(tmp_path) == [
        "hierattn/training/corpus.py:1: hierattn.checkpoint.writing.fsync lives in hierattn.data.files"]
    assert model_name_violations(tmp_path, {"toy"}) == ["pages/explore.py:2: 'toy'"]
    assert map_name_violations(tmp_path) == ["pages/explore.py:3: 'word.maxpool'"]
    assert unexported_figure_violations(tmp_path) == ["pages/explore.py:6: plotly_chart"]
    assert import_cycle_violations(tmp_path) == ["hierattn.app.tasks -> hierattn.app.visitors -> hierattn.app.tasks"]


def test_a_layer_that_is_a_package_is_every_module_in_it():
    """hierattn/checkpoint/ is one layer, its __init__.py and each of its modules alike; a module at
    the top of hierattn is its own layer, and hierattn's own __init__.py and __main__.py none."""
    root = Path("/repo")
    assert [layer_of(root, root / "hierattn" / p) for p in (
        "checkpoint/__init__.py", "checkpoint/reading.py", "checkpoint/writing.py", "analysis/tour/rates.py",
        "budget.py", "__init__.py", "__main__.py")] == [
        "checkpoint", "checkpoint", "checkpoint", "analysis", "budget", "hierattn", "hierattn"]
    assert layer_of(root, root / "pages" / "explore.py") == "pages"


def test_no_page_file_shadows_a_standard_library_module():
    """Streamlit puts a page's folder on sys.path while the page runs (AppTest of a page file), so
    pages/1_statistics.py once replaced the standard library's statistics for everything imported then."""
    import sys

    root = Path(__file__).resolve().parent.parent
    clashes = [p.name for p in (root / "pages").glob("*.py") if p.stem in sys.stdlib_module_names]
    assert not clashes, f"rename these pages (keep their URL with a '1_' prefix, which Streamlit strips): {clashes}"

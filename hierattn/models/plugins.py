"""Model types from outside the package: plug-ins.

A plug-in provides what a built-in model file provides, a ``ModelSpec`` (class, config dataclass,
paper name, knobs), from one of two places:

- an installed package that declares an entry point in the group ``hierattn.models``
  (``[project.entry-points."hierattn.models"] my_model = "my_package.my_model:SPEC"``; the value
  may name a ``ModelSpec``, a list of them, or a module with a ``SPEC``);
- a ``.py`` file, for a quick try: ``HIERATTN_PLUGINS=path/to/my_model.py`` (several separated by
  ``os.pathsep``) or ``--plugin path/to/my_model.py`` on the command line. The file defines
  ``SPEC`` (or ``SPECS``, a list).

Code runs only from where the person running hierattn said: installed packages and named files.
A checkpoint never causes an import: its config.json records which plug-in wrote it
(``checkpoint_record``), and a checkpoint whose model type is not registered gets a message that
names that plug-in (``unregistered_message``). A plug-in that fails to import or declares a bad
spec is left out with one message (``PROBLEMS``); the built-in models and every other plug-in
keep working. A file loaded in this process is added to ``HIERATTN_PLUGINS``, so the processes
it starts (the Train page's runs, torchrun's workers) load it too.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import traceback
import types
from collections.abc import Iterable
from pathlib import Path

from torch import nn

from hierattn.models.spec import ModelSpec

GROUP = "hierattn.models"
ENVIRONMENT = "HIERATTN_PLUGINS"
NAME = re.compile(r"[a-z][a-z0-9_]*")

PROBLEMS: dict[str, str] = {}  # a plug-in that was not loaded (its file or entry point) -> why, in a sentence
_TRIED: set[str] = set()  # files and entry points tried in this process, loaded or not


class PluginError(ValueError):
    """A plug-in cannot be loaded; the message names it and says why."""


def check_spec(spec, where: str) -> ModelSpec:
    """``spec`` if it is a model type the registry can build, else PluginError saying what is wrong."""
    if not isinstance(spec, ModelSpec):
        raise PluginError(f"{where}: SPEC is a {type(spec).__name__}, not a hierattn.models.spec.ModelSpec")
    if not NAME.fullmatch(spec.name):
        raise PluginError(f"{where}: model type {spec.name!r} is not a lower-case name (letters, digits, _)")
    if not (isinstance(spec.model, type) and issubclass(spec.model, nn.Module)):
        raise PluginError(f"{where}: {spec.name}'s model is not a torch.nn.Module class")
    if not dataclasses.is_dataclass(spec.config):
        raise PluginError(f"{where}: {spec.name}'s config is not a dataclass")
    fields = {f.name for f in dataclasses.fields(spec.config)}
    missing = {"vocab_size", "num_classes"} - fields
    if missing:
        raise PluginError(f"{where}: {spec.name}'s config has no {' or '.join(sorted(missing))} field (the "
                          "checkpoint's vocabulary and labels set them)")
    unknown = [k.name for k in spec.knobs if k.name not in fields]
    if unknown:
        raise PluginError(f"{where}: {spec.name}'s knobs name fields its config lacks: {', '.join(unknown)}")
    return spec


def _specs_of(value, where: str) -> list[ModelSpec]:
    """The checked specs a plug-in module (its ``SPECS`` or ``SPEC``) or an entry point's value declares."""
    if isinstance(value, types.ModuleType):
        found = getattr(value, "SPECS", None) or getattr(value, "SPEC", None)
        if found is None:
            raise PluginError(f"{where}: defines no SPEC (a hierattn.models.spec.ModelSpec)")
        value = found
    return [check_spec(s, where) for s in (value if isinstance(value, (list, tuple)) else [value])]


def _failure(where: str, exc: BaseException, path: Path | None = None) -> PluginError:
    """One line: the error and the line of the plug-in that raised it (its file's last frame, or
    for an entry point the last frame outside importlib and hierattn)."""
    if isinstance(exc, SyntaxError):
        return PluginError(f"{where} failed to import: SyntaxError at line {exc.lineno}: {exc.msg}")
    frames = traceback.extract_tb(exc.__traceback__)
    if path is not None:
        frames = [f for f in frames if Path(f.filename) == path]
    else:
        frames = [f for f in frames if "importlib" not in f.filename
                  and not f.filename.startswith(str(Path(__file__).parent))]
    line = f" (line {frames[-1].lineno} of {Path(frames[-1].filename).name})" if frames else ""
    return PluginError(f"{where} failed to import: {type(exc).__name__}: {exc}{line}")


def _module_name(path: Path) -> str:
    stem = re.sub(r"\W", "_", path.stem)
    return f"hierattn_plugin_{stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"


def specs_in_file(path: str | Path) -> list[ModelSpec]:
    """Import a plug-in file (under a name of its own, once per process) and return its checked
    specs, each recording the file it came from; PluginError when it cannot."""
    path = Path(path).expanduser().resolve()
    where = f"plug-in {path}"
    if path.suffix != ".py" or not path.is_file():
        raise PluginError(f"{where}: no such .py file")
    name = _module_name(path)
    module = sys.modules.get(name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module  # dataclasses and typing look a class's module up here
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001  whatever the file raises is the plug-in's problem, named
            del sys.modules[name]
            raise _failure(where, exc, path) from None
    origin = {"file": path.name, "path": str(path)}
    return [dataclasses.replace(s, plugin=origin) for s in _specs_of(module, where)]


def specs_in_entry_point(entry: importlib.metadata.EntryPoint) -> list[ModelSpec]:
    package = entry.dist.name if entry.dist else None
    version = entry.dist.version if entry.dist else None
    where = f"plug-in {entry.name!r} ({entry.value}" + (f", package {package}" if package else "") + ")"
    try:
        value = entry.load()
    except Exception as exc:  # noqa: BLE001
        raise _failure(where, exc) from None
    origin = {"entry_point": entry.name, "value": entry.value, "package": package, "version": version}
    return [dataclasses.replace(s, plugin=origin) for s in _specs_of(value, where)]


def environment_paths() -> list[str]:
    return [p for p in os.environ.get(ENVIRONMENT, "").split(os.pathsep) if p.strip()]


def _remember_in_environment(path: Path) -> None:
    paths = environment_paths()
    if str(path) not in [str(Path(p).expanduser().resolve()) for p in paths]:
        os.environ[ENVIRONMENT] = os.pathsep.join(paths + [str(path)])


def load(registry: dict[str, ModelSpec], files: Iterable[str | Path] = ()) -> list[str]:
    """Register the model types of the installed entry points, of ``HIERATTN_PLUGINS`` and of
    ``files`` into ``registry``; each is tried once per process. Returns the messages of the
    plug-ins that were not loaded this time (also kept in ``PROBLEMS``)."""
    problems = []

    def attempt(key: str, get) -> None:
        if key in _TRIED:
            return
        _TRIED.add(key)
        try:
            for spec in get():
                owner = registry.get(spec.name)
                if owner is not None and owner.plugin != spec.plugin:
                    where = ("a built-in model type" if owner.plugin is None
                             else f"already provided by {describe(owner)}")
                    raise PluginError(f"{describe(spec)} declares model type {spec.name!r}, {where}; not loaded")
                registry[spec.name] = spec
        except PluginError as exc:
            PROBLEMS[key] = str(exc)
            problems.append(str(exc))

    try:
        entries = importlib.metadata.entry_points(group=GROUP)
    except Exception:  # noqa: BLE001  a broken installed distribution must not stop the app
        entries = []
    for entry in entries:
        attempt(f"entry point {entry.name} = {entry.value}", lambda entry=entry: specs_in_entry_point(entry))
    for raw in [*environment_paths(), *files]:
        path = Path(raw).expanduser().resolve()
        attempt(str(path), lambda path=path: specs_in_file(path))
        if path.is_file() and str(path) not in PROBLEMS:
            _remember_in_environment(path)
    ordered = sorted(registry.items(), key=lambda kv: (kv[1].listed, kv[0]))
    registry.clear()
    registry.update(ordered)
    return problems


def describe(spec: ModelSpec) -> str:
    """Where a model type comes from, for a reader: "hierattn", "plug-in file x.py", "plug-in 'x' of package y"."""
    origin = spec.plugin
    if origin is None:
        return "hierattn"
    if "file" in origin:
        return f"plug-in file {origin['file']}"
    return f"plug-in {origin.get('entry_point')!r}" + (f" of package {origin['package']}" if origin.get("package")
                                                         else "")


def checkpoint_record(spec: ModelSpec) -> dict | None:
    """What config.json records of the plug-in that provides a model type (None for a built-in):
    enough to name it when a machine without it opens the checkpoint. Never used to import."""
    return None if spec.plugin is None else dict(spec.plugin)


# What a checkpoint may name of its plug-in, as it is shown: a package name (PEP 508), a version
# (PEP 440 characters), an entry point's name, a plug-in file's name. Anything else (an install
# command with options, a URL) is not relayed.
_RECORD_FIELDS = {
    "package": re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"),
    "version": re.compile(r"[0-9A-Za-z.+!_-]{1,40}"),
    "entry_point": re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}"),
    "file": re.compile(r"[\w.-]{1,100}\.py"),
    "path": re.compile(r"[^\x00-\x1f\x7f]{1,400}"),
}


def valid_record(record) -> dict | None:
    """A checkpoint's plug-in record with only the fields that are what they claim to be (None when
    it is not a record): never relay a checkpoint's text as an install command."""
    if not isinstance(record, dict):
        return None
    kept = {k: v for k, v in record.items()
            if k in _RECORD_FIELDS and isinstance(v, str) and _RECORD_FIELDS[k].fullmatch(v)}
    return kept if kept.get("package") or kept.get("file") else None


def unregistered_message(model_type: str, record: dict | None, known: Iterable[str]) -> str:
    """Why a checkpoint of ``model_type`` cannot be loaded here, and what to install or point at."""
    named = record.get("package") or record.get("file") if isinstance(record, dict) else None
    record = valid_record(record)
    if named and record is None:
        return (f"its model type {str(model_type)[:64]!r} comes from a plug-in whose name in config.json is not a "
                "package or file name; it is not shown. Nothing from a checkpoint folder is ever imported.")
    hint = ("start the app with HIERATTN_PLUGINS set to that file (HIERATTN_PLUGINS=FILE.py streamlit run app.py), "
            "or pass --plugin FILE.py to the command line")
    if isinstance(record, dict) and record.get("file"):
        where = f" on the machine that saved it: {record['path']}" if record.get("path") else ""
        what = (f"its model type {model_type!r} comes from the plug-in file {record['file']}{where}. To open it, "
                f"{hint}")
    elif isinstance(record, dict) and record.get("package"):
        what = (f"its model type {model_type!r} comes from the plug-in {record.get('entry_point')!r} of the package "
                f"{record['package']}{' ' + str(record['version']) if record.get('version') else ''}. To open it, "
                f"install that package (pip install {record['package']})")
    else:
        what = (f"its model type {model_type!r} is neither built in ({', '.join(known)}) nor provided by a loaded "
                f"plug-in. If a plug-in defines it, install the plug-in's package or {hint}")
    failed = [m for m in PROBLEMS.values() if isinstance(record, dict) and record.get("file")
              and record["file"] in m]
    tail = f" (A plug-in of that name was set but not loaded: {failed[0]})" if failed else ""
    return f"{what}. Nothing from a checkpoint folder is ever imported.{tail}"

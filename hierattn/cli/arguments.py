"""What several commands share: a checkpoint read on a split, ``--plugin`` (a plug-in model file),
and loading the plug-ins it and ``HIERATTN_PLUGINS`` name before a command runs."""
from __future__ import annotations

import os
import sys


def checkpoint_split_arguments(parser) -> None:
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--dataset", help="built-in data set: bbc-news or tweets (default: the checkpoint's)")
    parser.add_argument("--split", default="test", choices=["train", "validation", "test"])


def plugin_argument(parser) -> None:
    parser.add_argument("--plugin", action="append", metavar="FILE.py",
                        help="a plug-in model file (defines SPEC, a hierattn.models.spec.ModelSpec); repeat for "
                             "several. Also read from HIERATTN_PLUGINS; installed plug-ins load by themselves")


def load_plugins(args) -> None:
    """Register the plug-ins of --plugin, HIERATTN_PLUGINS and installed packages; one warning line
    for each that cannot be loaded (the built-in models, and commands that do not need it, go on)."""
    if not (getattr(args, "plugin", None) or os.environ.get("HIERATTN_PLUGINS")):
        return  # installed entry points load with the registry, and report through the same list
    from hierattn.models import load_plugins as load
    from hierattn.models import plugin_problems

    load(args.plugin or ())
    for problem in plugin_problems():
        print(f"warning: {problem}", file=sys.stderr)

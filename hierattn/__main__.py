"""python -m hierattn, and the ``hierattn`` command an installed package puts on the PATH: the
command line (``hierattn.cli``)."""
import sys

from hierattn.threads import prepare_environment


def run() -> int:
    prepare_environment()  # before torch is imported: OpenMP reads it once, at its start
    from hierattn.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(run())

"""python -m hierattn: the command line (``hierattn.cli``)."""
import sys

from hierattn.threads import prepare_environment

prepare_environment()  # before torch is imported: OpenMP reads it once, at its start

from hierattn.cli import main  # noqa: E402

sys.exit(main())

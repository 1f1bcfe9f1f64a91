"""python -m hierattn: the command line (``hierattn.cli``)."""
import sys

from hierattn.cli import main

sys.exit(main())

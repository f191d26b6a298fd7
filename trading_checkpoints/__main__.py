"""``python -m trading_checkpoints`` runs the ``checkpoints`` command, in this process."""

import sys

from .warm.command import run

sys.exit(run(sys.argv[1:]))

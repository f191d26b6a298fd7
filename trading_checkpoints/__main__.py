"""``python -m trading_checkpoints`` runs the ``checkpoints`` command."""

from .cli import main

main()

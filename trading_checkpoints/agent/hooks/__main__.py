"""``python -m trading_checkpoints.agent.hooks``: the hook command (see ``process.py``)."""

import sys

from .process import main

sys.exit(main())

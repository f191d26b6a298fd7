"""The terminal browser (``checkpoints browse``): a timeline of a desk's checkpoints, what each
one changed, and restore and undo from there.

``timeline`` holds the history as the browser shows it (loaded a page at a time, grouped into
runs of one turn), ``views`` turns checkpoints, diffs and plans into text, ``dialogs`` holds
the confirmation and search screens, and ``app`` the Textual application itself. Textual is an
optional extra, imported by ``app`` and ``dialogs`` only: :func:`load` says how to install it
when it is missing.

May import: the facade (``checkpoints``, ``workspace``), ``ops`` and the layers below; the
command line imports this package only when ``browse`` runs.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import CheckpointError

INSTALL_HINT = (
    "checkpoints browse needs the optional 'ui' extra: pip install 'trading-checkpoints[ui]'"
)


def load() -> ModuleType:
    """The ``app`` module; a ``CheckpointError`` saying how to install Textual without it."""
    try:
        from . import app
    except ModuleNotFoundError as error:
        if (error.name or '').partition('.')[0] not in ('textual', 'rich'):
            raise
        raise CheckpointError(INSTALL_HINT) from error
    return app

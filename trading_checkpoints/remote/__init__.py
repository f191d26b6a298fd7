"""Off-machine backup: push a desk's checkpoints to any git server, pull and clone them back.

Remotes live in the shadow repository's config (``[remote "NAME"] url = ...``). Transfers go
through dulwich's clients (``store.transport`` holds everything that touches dulwich), so local
paths, ``file://``, ``http(s)://`` (smart HTTP) and ``ssh://`` all work without a git binary.
The remote's branch ``main`` mirrors the desk's; push and pull are fast-forward only. The work
is done in:

- :mod:`.urls`: URLs shown without user info, secrets masked, the client for a URL;
- :mod:`.credentials`: credentials kept out of the repository, in a file only its owner reads;
- :mod:`.config`: the remotes in the config (add, list, get, remove);
- :mod:`.transfer`: what push, pull and clone share;
- :mod:`.heads`: remote heads this desk has seen, shallow boundaries after a prune;
- :mod:`.push`, :mod:`.pull`, :mod:`.clone`: the verbs.

May import: ``ops``, ``store``, ``core`` and ``errors``; never dulwich.
"""

from __future__ import annotations

from ..ops.listing import CLONING
from ..store.transport import ZERO, repair_shallow
from .clone import clone
from .config import Remote, add_remote, check_name, get_remote, list_remotes, remove_remote
from .heads import KNOWN_HEADS
from .pull import fetch_head, pull, pull_desk
from .push import PRUNED_REF_PREFIX, push
from .transfer import Progress, TransferResult
from .urls import PASSWORD_ENV, SSH_COMMAND_ENV, USERNAME_ENV, redact

__all__ = [
    'CLONING',
    'KNOWN_HEADS',
    'PASSWORD_ENV',
    'PRUNED_REF_PREFIX',
    'SSH_COMMAND_ENV',
    'USERNAME_ENV',
    'ZERO',
    'Progress',
    'Remote',
    'TransferResult',
    'add_remote',
    'check_name',
    'clone',
    'fetch_head',
    'get_remote',
    'list_remotes',
    'pull',
    'pull_desk',
    'push',
    'redact',
    'remove_remote',
    'repair_shallow',
]

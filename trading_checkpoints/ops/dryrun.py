"""A dry run's refusals: where the real run would stop with an error, its dry run stops with the
same error (the same kind and fields, so the same exit status and hint), its message saying
that the run would refuse. The decision itself is made once, by the code both runs go through.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from ..errors import CheckpointError

_Error = TypeVar('_Error', bound=CheckpointError)


def refusing(dry_run: bool) -> str:
    """How a refusal's message begins: ``refusing to`` (``would refuse to`` in a dry run)."""
    return 'would refuse to' if dry_run else 'refusing to'


def would(error: _Error) -> _Error:
    """``error`` as a dry run reports it: the same kind and fields, the message prefixed
    ``would refuse:``."""
    planned = copy.copy(error)
    planned.args = (f'would refuse: {error}',)
    return planned


@contextmanager
def refusals(dry_run: bool) -> Iterator[None]:
    """Within: an error raised is, in a dry run, raised again as :func:`would` words it."""
    try:
        yield
    except CheckpointError as error:
        if not dry_run:
            raise
        raise would(error) from None

"""What dulwich raises when it reads a damaged object, pack, ref or ``packed-refs`` file, and
:func:`naming_damage`, which turns it into a ``CorruptRepositoryError`` naming the damaged file.

The tuples are built on first use, so that importing the store (as ``status`` of an unchanged
desk and a cold ``list`` do) does not import dulwich; an ``except`` clause evaluates them only
when an exception is being matched.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import CheckpointError, CorruptRepositoryError, FileAccessError


@functools.cache
def object_damage() -> tuple[type[BaseException], ...]:
    """Errors of a damaged object, pack or index (truncated, bit-flipped, missing base)."""
    from dulwich.errors import (
        ApplyDeltaError,
        ChecksumMismatch,
        FileFormatException,
        ObjectFormatException,
        WrongObjectException,
    )

    return (
        OSError,
        ValueError,
        AssertionError,
        IndexError,
        zlib.error,
        FileFormatException,
        ChecksumMismatch,
        ApplyDeltaError,
        WrongObjectException,
        ObjectFormatException,
        TypeError,  # from parsing some truncated loose objects
        struct.error,  # a truncated pack index
    )


@functools.cache
def ref_damage() -> tuple[type[BaseException], ...]:
    """Errors of a damaged ref: a malformed packed-refs line (PackedRefsException, a
    FileFormatException), an empty packed-refs file (StopIteration), a symbolic ref to a name
    outside refs/ (RefFormatError)."""
    from dulwich.errors import FileFormatException, RefFormatError

    return (OSError, ValueError, FileFormatException, RefFormatError, StopIteration)


@functools.cache
def pack_replaced() -> tuple[type[BaseException], ...]:
    """Errors of a read that found a pack it had listed gone (another process replaced it:
    a snapshot rewrote the tail pack, a prune consolidated): dulwich's PackFileDisappeared,
    or the file itself missing, or the object not found in the packs left."""
    from dulwich.pack import PackFileDisappeared

    return (PackFileDisappeared, FileNotFoundError, KeyError)


def blame(repository: Path, error: BaseException) -> tuple[Path | None, str]:
    """The damaged pack or index behind a read error (found by checksum, ``pack/verify.py``)
    and what is wrong with it; ``(None, <the error's kind>)`` when every one holds together.
    Never dulwich's words: they may quote bytes of the file."""
    from .pack.verify import find_damaged

    found = find_damaged(repository)
    if found is None:
        return None, type(error).__name__
    return found


@contextmanager
def naming_damage(repository: Path, what: str, action: str = 'read') -> Iterator[None]:
    """Turns dulwich's errors over a damaged pack or index (a checksum mismatch, an assertion
    on a header, a zlib error, a short read) into a ``CorruptRepositoryError`` whose ``path``
    is the damaged file, without dulwich's words.

    ``what`` says what was being done (``prune``). An ``OSError`` with no damaged file to
    blame is the system's refusal: a ``FileAccessError`` (with ``action``).
    """
    try:
        yield
    except CheckpointError:
        raise
    except object_damage() as error:
        path, problem = blame(repository, error)
        if path is not None:
            raise CorruptRepositoryError(
                f'cannot {what}: {path} is damaged ({problem}); restore it from a backup, '
                'or remove it and lose the checkpoints only it held',
                path=path,
            ) from error
        if isinstance(error, OSError):
            raise FileAccessError(
                f'cannot {what} in {repository}: {error.strerror or problem}',
                path=repository,
                action=action,
            ) from error
        raise CorruptRepositoryError(
            f'cannot {what}: the objects of {repository} are damaged ({problem})',
            path=Path(repository) / 'objects',
        ) from error

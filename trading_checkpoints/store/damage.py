"""What dulwich raises when it reads a damaged object, pack, ref or ``packed-refs`` file.

Built on first use, so that importing the store (as ``status`` of an unchanged desk and a cold
``list`` do) does not import dulwich; an ``except`` clause evaluates them only when an exception
is being matched.
"""

from __future__ import annotations

import functools
import zlib


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
    )


@functools.cache
def ref_damage() -> tuple[type[BaseException], ...]:
    """Errors of a damaged ref: a malformed packed-refs line (PackedRefsException, a
    FileFormatException), an empty packed-refs file (StopIteration), a symbolic ref to a name
    outside refs/ (RefFormatError)."""
    from dulwich.errors import FileFormatException, RefFormatError

    return (OSError, ValueError, FileFormatException, RefFormatError, StopIteration)

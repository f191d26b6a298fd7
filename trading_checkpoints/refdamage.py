"""What dulwich raises when it reads a damaged ref, ``packed-refs`` file or symbolic ref."""

from __future__ import annotations

from dulwich.errors import FileFormatException, RefFormatError

# A malformed packed-refs line (PackedRefsException, a FileFormatException), an empty
# packed-refs file (StopIteration), a symbolic ref to a name outside refs/ (RefFormatError).
REF_DAMAGE: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    FileFormatException,
    RefFormatError,
    StopIteration,
)

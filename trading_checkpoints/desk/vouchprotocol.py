"""What a snapshot and the desk's watcher say to each other: typed messages, one line each.

Both ends use this module alone to build and read what crosses the socket (``desk/vouch.py``
asks and reports, ``agent/vouchwatch.py`` answers), so a message has one spelling. A line is
a JSON object with the protocol's :data:`VERSION`, the message's type and its fields, as
:func:`encode` writes it; :func:`decode` gives back the typed message, or raises ``ValueError``
for anything else: another version, an unknown type, a field missing, extra or of the wrong
type. A caller that gets ``ValueError`` treats it as no answer (the snapshot walks, the watcher
drops the request), whatever the cause: it carries no message.

The messages:

- :class:`Ask` (the snapshot): the tracked paths it uses.
- :class:`Reply` (the watcher): a :class:`Token` naming this moment of the watcher, the
  multiply-linked tracked files it knows of, and either the record of the last clean walk
  (``clean``: no change to a tracked path reached it since) or that record and the folders
  changed since (``changed``), or neither.
- :class:`Report` (a walk begun after a token): the record of what it found, under the token.

A token is the watcher's random instance id and its generation: a watcher started again (a
new process) never takes a report made under another instance's token, whatever its
generation, as git's fsmonitor gives a token of another instance only a trivial answer.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import _socket as socket  # a socket.socket is one too

VERSION = 2  # 2: a report is answered (Kept)
MAX_LINE = 1 << 22  # bytes; a longer line is no message


@dataclass(frozen=True)
class Token:
    """A moment of one watcher process: its random ``instance`` id and its ``generation``
    (moved on by every change to a tracked path it reads)."""

    instance: str
    generation: int


@dataclass(frozen=True)
class State:
    """What a no-op snapshot's answer depends on besides the desk's files, as one process read
    it (``ops/vouched.py``).

    Attributes:
        head: The branch head (hex).
        seal: The seal (hex), or None.
        config: A digest of the repository's config.
        cache: The stat cache file's identity (device, inode, size, mtime, ctime), or None.
        entries: The tracked paths.
        limit: The size limit.
        desk: The stat cache's context (the desk's real path and the tracked paths).
        mounts: The mount table's lines for the desk, the folders above it and anything
            mounted inside it (None: no mount table).
        linked: The multiply-linked tracked files the watcher named, each with its stat numbers
            (None: absent).
    """

    head: str
    seal: str | None
    config: str
    cache: tuple[int, int, int, int, int] | None
    entries: tuple[str, ...]
    limit: int
    desk: str
    mounts: tuple[str, ...] | None
    linked: tuple[tuple[str, tuple[int, int, int, int, int] | None], ...]


@dataclass(frozen=True)
class Answer:
    """What a no-op snapshot answers: the paths changed outside the agent, the basis of that
    attribution, and the files left out with why."""

    external: tuple[str, ...]
    basis: str
    skipped: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Record:
    """A walk that found the desk equal to the newest checkpoint: what it depended on, and
    what it answered."""

    state: State
    answer: Answer


@dataclass(frozen=True)
class Changed:
    """The record of the last clean walk, and the folders in which a tracked entry was made,
    changed, removed or moved since."""

    record: Record
    folders: tuple[str, ...]


@dataclass(frozen=True)
class Ask:
    """Whether the desk changed, for a snapshot that tracks ``entries``."""

    entries: tuple[str, ...]


@dataclass(frozen=True)
class Reply:
    """The watcher's answer to :class:`Ask` (see the module notes)."""

    token: Token
    linked: tuple[str, ...]
    clean: Record | None = None
    changed: Changed | None = None


@dataclass(frozen=True)
class Report:
    """A walk begun after ``token`` found the desk as ``record`` says."""

    token: Token
    record: Record


@dataclass(frozen=True)
class Kept:
    """The watcher's answer to :class:`Report`, once it decided: whether it keeps the record
    (a change made after the answer arrives is counted after the record)."""

    kept: bool


Message = Ask | Reply | Report | Kept
MESSAGES: dict[str, type[Any]] = {kind.__name__: kind for kind in (Ask, Reply, Report, Kept)}


def encode(message: Message) -> bytes:
    """One line: the version, the message's type and its fields."""
    body = {'version': VERSION, 'type': type(message).__name__, **dataclasses.asdict(message)}
    return json.dumps(body).encode() + b'\n'


def decode(line: bytes) -> Message:
    """The message a line holds (``ValueError`` when it is not one of this version)."""
    try:
        body = json.loads(line)
    except (UnicodeDecodeError, RecursionError) as error:
        raise ValueError from error
    if not isinstance(body, dict) or body.pop('version', None) != VERSION:
        raise ValueError
    kind = MESSAGES.get(body.pop('type', None))
    if kind is None:
        raise ValueError
    message: Message = _build(kind, body)
    return message


def read_line(connection: socket.socket, deadline: float) -> bytes:
    """One line from the connection, whole by ``deadline`` (a ``time.monotonic()`` value),
    else ``TimeoutError``; ``ValueError`` when the other end stops early or sends too much."""
    data = b''
    while not data.endswith(b'\n'):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        connection.settimeout(left)
        chunk = connection.recv(65536)
        if not chunk or len(data) + len(chunk) > MAX_LINE:
            raise ValueError
        data += chunk
    return data


def _build(kind: Any, value: object) -> Any:
    """``value`` (as JSON gives it) as an instance of ``kind``, checked all the way down."""
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        fields = _hints(kind)
        if not isinstance(value, dict) or set(value) != set(fields):
            raise ValueError
        return kind(**{name: _build(fields[name], item) for name, item in value.items()})
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in arguments:
            return None
        [inner] = [argument for argument in arguments if argument is not type(None)]
        return _build(inner, value)
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError
        if Ellipsis in arguments:
            return tuple(_build(arguments[0], item) for item in value)
        # A list of another length raises ValueError too.
        return tuple(_build(inner, item) for inner, item in zip(arguments, value, strict=True))
    if type(value) is not kind:  # bool is not an int here, nor an int a str
        raise ValueError
    return value


@functools.cache
def _hints(kind: type[Any]) -> dict[str, Any]:
    """The field types of a message class (the annotations are strings here)."""
    return typing.get_type_hints(kind)

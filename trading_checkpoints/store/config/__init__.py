"""The shadow repository's config file: its one reader and its one writer.

``<repo>/config`` may be written by anyone, so it is read only through :func:`load`, which
never follows includes and refuses unsupported formats. The work is done in:

- :mod:`.syntax`: the text (the fast plain-form reader and git's full syntax);
- :mod:`.reader`: reading and vetting (:func:`load`, :class:`RepoConfig`);
- :mod:`.writer`: line-by-line edits and the config of a new repository;
- :mod:`..dulwichrepo`: dulwich's ``Repo``, opened with the vetted config instead of its own.
"""

from __future__ import annotations

from ..dulwichrepo import open_dulwich
from .reader import (
    CHECKPOINTS,
    MAX_BYTES,
    NAME,
    SUPPORTED_EXTENSIONS,
    SUPPORTED_FORMAT_VERSIONS,
    TRACKED,
    RepoConfig,
    check_format,
    forget,
    load,
    parse,
    read_bytes,
)
from .syntax import Setting
from .writer import format_value, initial, remove_section, set_tracked, set_values

__all__ = [
    'CHECKPOINTS',
    'MAX_BYTES',
    'NAME',
    'SUPPORTED_EXTENSIONS',
    'SUPPORTED_FORMAT_VERSIONS',
    'TRACKED',
    'RepoConfig',
    'Setting',
    'check_format',
    'forget',
    'format_value',
    'initial',
    'load',
    'open_dulwich',
    'parse',
    'read_bytes',
    'remove_section',
    'set_tracked',
    'set_values',
]

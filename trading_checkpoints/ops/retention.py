"""Retention: drop old checkpoints without changing the id of any checkpoint that is kept.

History is never rewritten. The reflog is rewritten to mention only kept checkpoints, then
the oldest kept checkpoint becomes a *shallow boundary* (listed in the repository's ``shallow``
file, exactly as ``git clone --depth`` records one), so git and this library stop walking
there; everything no longer reachable is dropped by repacking what is (see
:mod:`trading_checkpoints.store.storage`), which first drops the reflog entries naming what it
drops. A prune killed between any two of these steps leaves a repository ``git fsck``
accepts. dulwich's own ``gc``/``prune`` are not used for this: they follow neither the
shallow boundary nor the reflog the way git does, so they would keep the old history.

What is never pruned:

- the newest checkpoint (at least one is always kept);
- the chain of a kept restore, undo or redo: the snapshot it took just before, and every
  commit between (the desk as found, saved by a completion from its journal, and the restored
  commit of a run killed before it removed its journal), so the restore stays undoable and an
  undo redoable (see ``_chain_end``);
- anything at all while a restore journal (``checkpoints/restore-journal*``) exists: an
  interrupted restore may still need any checkpoint, so prune refuses until it is finished.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..core import repofiles
from ..core.ids import short_id
from ..desk import statcache
from ..errors import (
    CheckpointError,
    InvalidArgumentError,
    InvalidSettingError,
    UnfinishedRestoreError,
)
from ..store import config as repo_config
from ..store import gitfiles, metadata, prunedlog, storage
from ..store.commitinfo import CommitInfo
from ..store.damage import naming_damage
from ..store.repo import PRIVATE_DIR, ShadowRepo
from ..store.repofolder import is_initialized
from .dryrun import would
from .results import PruneResult

ZERO = b'0' * 40
# Commits that record a restored state; each keeps its chain down to its pre-snapshot.
RESTORING_ACTIONS = frozenset({'restore', 'undo', 'redo'})
JOURNAL_GLOB = 'restore-journal*'
# Limits enforced after each write drop a checkpoint or two at a time: the storage is rewritten
# (removing what they alone held) once this many were dropped since the last rewrite.
COMPACT_AFTER = 32

# Config keys (``git config checkpoints.keep 200``) applied by Checkpoints.open and the CLI.
CONFIG_KEEP = b'keep'
CONFIG_OLDER_THAN = b'retention'
CONFIG_MAX_SIZE = b'maxsize'


# -- parsing limits ------------------------------------------------------------------------

_DURATION = re.compile(r'\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*', re.IGNORECASE)
_SIZE = re.compile(r'\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*', re.IGNORECASE)
_SECONDS = {'': 86400, 's': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}
_BYTES = {'': 1, 'k': 1024, 'm': 1024**2, 'g': 1024**3, 't': 1024**4}


def parse_duration(text: str | float | int) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``2w`` or a plain number of days."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if text < 0:
            raise InvalidArgumentError(
                f'a retention period cannot be negative: {text!r}', name='older_than', value=text
            )
        return float(text)
    match = _DURATION.fullmatch(str(text))
    if not match:
        raise InvalidArgumentError(
            f'{text!r} is not a period; write it like 30d, 12h, 90m, 45s or 2w',
            name='older_than',
            value=text,
        )
    return float(match.group(1)) * _SECONDS[match.group(2).lower()]


def parse_size(text: str | int) -> int:
    """Bytes in ``500M``, ``2G``, ``800k``, ``1.5GiB`` or a plain number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise InvalidArgumentError(
                f'a size cannot be negative: {text!r}', name='max_size', value=text
            )
        return text
    match = _SIZE.fullmatch(str(text))
    if not match:
        raise InvalidArgumentError(
            f'{text!r} is not a size; write it like 500M, 2G or 800k', name='max_size', value=text
        )
    return int(float(match.group(1)) * _BYTES[match.group(2).lower()])


# -- choosing what to keep -----------------------------------------------------------------


def _timestamp(info: CommitInfo) -> float:
    return datetime.fromisoformat(info.created_at).timestamp()


def journal_present(repository: Path) -> Path | None:
    private = Path(repository) / PRIVATE_DIR
    try:
        return next(iter(sorted(private.glob(JOURNAL_GLOB))), None)
    except OSError:
        return None


def choose_kept(
    history: list[CommitInfo],
    keep: int | None,
    older_than: float | None,
    now: float,
) -> int:
    """How many of ``history`` (newest first) to keep for the count and age limits."""
    count = len(history)
    if keep is not None:
        count = min(count, max(keep, 1))
    if older_than is not None:
        cutoff = now - older_than
        young = 0
        for info in history:
            if _timestamp(info) < cutoff:
                break
            young += 1
        count = min(count, max(young, 1))
    return max(min(count, len(history)), 1) if history else 0


def _protect_restores(history: list[CommitInfo], count: int) -> int:
    """Extends the kept range so every kept restore keeps its whole chain (see
    :func:`_chain_end`), and the restores that extension keeps, theirs."""
    index = 0
    while index < count and count < len(history):
        if metadata.action_of(history[index].message) in RESTORING_ACTIONS:
            count = max(count, _chain_end(history, index) + 1)
        index += 1
    return min(count, len(history))


def _chain_end(history: list[CommitInfo], index: int) -> int:
    """The position of the oldest commit of the chain of the restore at ``index``.

    The chain is what the restore must keep to stay undoable: the commit just below it (its
    pre-snapshot, or the newest checkpoint when the desk needed none), and every commit below
    that down to the lowest pre-snapshot (a ``before-...`` commit) of an unbroken run of
    pre-snapshots and commits of this same restore (its very message). A restore completed
    from its journal commits the desk as found (``before-...``) on top of what the
    interrupted run left, which may already hold the restored commit (killed after committing
    it, before removing its record); its undo point is the lowest pre-snapshot. An aborted
    restore may leave a pre-snapshot under the next one's, which is kept too (never one commit
    too few).
    """
    restore = history[index].message
    end = index + 1
    below = index + 1
    while below < len(history):
        info = history[below]
        if _is_pre_snapshot(info):
            end = below
        elif info.message != restore:
            break
        below += 1
    return min(end, len(history) - 1)


def _is_pre_snapshot(info: CommitInfo) -> bool:
    action = metadata.action_of(info.message)
    return action is not None and action.startswith('before-')


def _estimated_bytes(repo: ShadowRepo, history: list[CommitInfo], count: int) -> int:
    """A quick estimate of the packed size of the newest ``count`` checkpoints."""
    store = storage.object_store(repo)
    kept_heads = [info.sha.encode() for info in history[:count]]
    boundary = {history[count - 1].sha.encode()}
    objects = storage.reachable(store, kept_heads[:1], boundary | storage.read_shallow(repo.path))
    sizes = storage.packed_sizes(store)
    total = 0
    for sha in objects:
        total += sizes.get(sha, 0) or _loose_size(repo.path, sha)
    # As one pack and its index would take on disk (whole 4 KiB blocks, like objects_size).
    index = 1072 + 28 * len(objects) + 40
    return _blocks(total + 32) + _blocks(index)


def _blocks(size: int, block: int = 4096) -> int:
    return -(-size // block) * block


def _loose_size(repository: Path, sha: bytes) -> int:
    text = sha.decode()
    try:
        return os.path.getsize(Path(repository) / 'objects' / text[:2] / text[2:])
    except OSError:
        return 0


# -- pruning -------------------------------------------------------------------------------


def prune_or_compact(
    repo: ShadowRepo,
    *,
    keep: int | None = None,
    older_than: float | str | None = None,
    max_bytes: int | str | None = None,
    dry_run: bool = False,
) -> PruneResult:
    """Prunes to the limits given; with none, only compacts the storage into one pack."""
    if keep is None and older_than is None and max_bytes is None and not dry_run:
        before = len(list(repo.history()))
        stats = storage.consolidate(repo)
        return PruneResult(before, before, stats.bytes_before, stats.bytes_after)
    return prune(repo, keep=keep, older_than=older_than, max_bytes=max_bytes, dry_run=dry_run)


def prune(
    repo: ShadowRepo,
    *,
    keep: int | None = None,
    older_than: float | str | None = None,
    max_bytes: int | str | None = None,
    dry_run: bool = False,
    now: float | None = None,
    compact: bool = True,
) -> PruneResult:
    """Drops the checkpoints beyond the limits. Must run under the repository's lock.

    The dropped ones are recorded (see ``prunedlog``). With ``compact`` the storage is
    rewritten at once, removing their objects; without, that waits until enough were
    dropped (see :func:`enforce`).
    """
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise InvalidArgumentError(
            f'keep must be a whole number of at least 1, not {keep!r}', name='keep', value=keep
        )
    age = parse_duration(older_than) if older_than is not None else None
    budget = parse_size(max_bytes) if max_bytes is not None else None
    journal = journal_present(repo.path)
    if journal is not None:
        unfinished = UnfinishedRestoreError(
            f'a restore is in progress or was interrupted ({journal}); finish it (run the '
            'restore again) before pruning, so the checkpoints it needs stay',
            record=journal,
        )
        raise would(unfinished) if dry_run else unfinished  # a dry run refuses as the run
    now = time.time() if now is None else now
    with naming_damage(repo.path, 'prune', 'update'):
        return _prune(repo, keep, age, budget, dry_run, now, compact)


def _prune(
    repo: ShadowRepo,
    keep: int | None,
    age: float | None,
    budget: int | None,
    dry_run: bool,
    now: float,
    compact: bool,
) -> PruneResult:
    history = list(repo.history())
    bytes_before = storage.objects_size(repo.path)
    count = _protect_restores(history, choose_kept(history, keep, age, now))
    if budget is not None and count > 1:
        count = _fit_budget(repo, history, count, budget)
    count = _protect_restores(history, count)
    kept, dropped = history[:count], history[count:]
    oldest = short_id(kept[-1].sha) if kept else None
    if dry_run or not dropped:
        estimate = _estimated_bytes(repo, history, count) if dropped else bytes_before
        return PruneResult(
            len(history),
            count,
            bytes_before,
            estimate if dry_run else bytes_before,
            tuple(info.short_id for info in dropped),
            oldest,
            dry_run,
        )
    _cut(repo, kept)
    prunedlog.record(repo.path, [(info.sha, info.created_at) for info in dropped], now)
    if compact or prunedlog.since_compaction(repo.path) >= COMPACT_AFTER:
        storage.consolidate(repo)
        prunedlog.record_compaction(repo.path, now)
        _forget_stat_cache(repo)
    after = list(repo.history())
    if [info.sha for info in after] != [info.sha for info in kept]:
        raise CheckpointError(f'pruning {repo.path} kept the wrong checkpoints; please report')
    return PruneResult(
        len(history),
        len(after),
        bytes_before,
        storage.objects_size(repo.path),
        tuple(info.short_id for info in dropped),
        oldest,
        False,
    )


def _fit_budget(repo: ShadowRepo, history: list[CommitInfo], count: int, budget: int) -> int:
    """The largest count (at least 1) whose estimated size fits ``budget``; binary search."""
    if _estimated_bytes(repo, history, count) <= budget:
        return count
    low, high = 1, count  # invariant: high does not fit
    while high - low > 1:
        middle = (low + high) // 2
        if _estimated_bytes(repo, history, middle) <= budget:
            low = middle
        else:
            high = middle
    return low


def _cut(repo: ShadowRepo, kept: list[CommitInfo]) -> None:
    """Rewrites the reflogs to name only kept checkpoints, then makes the oldest kept one a
    shallow boundary.

    In this order a kill between any two steps leaves a repository ``git fsck`` accepts: a
    reflog naming fewer commits than the history holds is fine, one naming commits beyond the
    boundary is not once they are dropped (and every compaction reconciles the reflogs with
    what it keeps, ``consolidation.py``, should one have been written otherwise).
    """
    kept_shas = {info.sha.encode() for info in kept}
    boundary = kept[-1]
    shallow = {sha for sha in storage.read_shallow(repo.path) if sha in kept_shas}
    if boundary.parents:
        shallow.add(boundary.sha.encode())
    gitfiles.rewrite_reflogs(repo.path, kept_shas)
    gitfiles.write_shallow(repo.path, shallow)


def _forget_stat_cache(repo: ShadowRepo) -> None:
    """The stat cache may name trees that are gone now; the next snapshot rebuilds it."""
    try:
        repofiles.remove(statcache.file_in(repo.path))
    except CheckpointError:
        pass


# -- configured limits ---------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    keep: int | None = None
    older_than: str | None = None
    max_size: str | None = None

    @property
    def empty(self) -> bool:
        return self.keep is None and self.older_than is None and self.max_size is None


def read_limits(repository: Path) -> Limits:
    """The limits stored in the repository's config (``checkpoints.keep`` and friends).

    Read through the one config reader (never following includes); a value that is not a
    number, a period or a size is an error naming the key and the line, not quoting it.
    """
    config = repo_config.load(repository, missing_ok=True)

    def get(key: bytes, check) -> str | None:
        setting = config.get(b'checkpoints', key)
        if setting is None:
            return None
        value = (setting.value or b'').decode('utf-8', 'replace').strip()
        try:
            check(value)
        except (CheckpointError, ValueError):
            raise InvalidSettingError(
                f'checkpoints.{key.decode()} in {config.where(setting)} is not {check.__doc__}',
                setting=f'checkpoints.{key.decode()}',
                source=config.where(setting),
            ) from None
        return value

    keep = get(CONFIG_KEEP, _whole_number)
    return Limits(
        int(keep) if keep is not None else None,
        get(CONFIG_OLDER_THAN, _period),
        get(CONFIG_MAX_SIZE, _size),
    )


def held_to(
    repository: Path,
    keep: int | None,
    older_than: str | float | None,
    max_bytes: int | str | None,
) -> Limits:
    """The limits ``Checkpoints.open`` holds a desk to: the ones given, else the ones stored
    in its repository's config."""
    stored = read_limits(repository)
    keep = stored.keep if keep is None else keep
    older_than = stored.older_than if older_than is None else older_than
    max_bytes = stored.max_size if max_bytes is None else max_bytes
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise InvalidArgumentError(
            f'keep must be a whole number of at least 1, not {keep!r}', name='keep', value=keep
        )
    return Limits(keep, older_than, max_bytes)  # type: ignore[arg-type]


def due_at_start(repository: Path, limits: Limits) -> bool:
    """Whether ``Checkpoints.open`` prunes to ``limits`` at once: some are set and the
    repository exists (an unfinished restore may need any checkpoint: it prunes later, and
    never blocks start-up)."""
    return is_initialized(repository) and not limits.empty and journal_present(repository) is None


def _whole_number(text: str) -> None:
    """a whole number of at least 1"""
    if not text.isdigit() or int(text) < 1:
        raise ValueError(text)


def _period(text: str) -> None:
    """a period (like 30d, 12h or 2w)"""
    parse_duration(text)


def _size(text: str) -> None:
    """a size (like 500M or 2G)"""
    parse_size(text)


def write_limits(repository: Path, limits: Limits) -> None:
    for key, value in (
        (CONFIG_KEEP, limits.keep),
        (CONFIG_OLDER_THAN, limits.older_than),
        (CONFIG_MAX_SIZE, limits.max_size),
    ):
        if value is None:
            continue
        repo_config.set_values(repository, b'checkpoints', key, [str(value).encode()])


def enforce(repo: ShadowRepo, limits: Limits) -> PruneResult | None:
    """After a write: prunes to the limits (the given ones, else the repository's config), so
    ``keep=N`` means N checkpoints after every write. Cheap when nothing is due: a count
    limit reads only N + 1 commits, an age limit first looks at the oldest kept one."""
    if limits.empty:
        limits = read_limits(repo.path)
        if limits.empty:
            return None
    if journal_present(repo.path) is not None:
        return None  # an unfinished restore may need any checkpoint
    due = False
    if limits.keep is not None:
        due = len(list(repo.history(limits.keep + 1))) > limits.keep
    if not due and limits.older_than is not None:
        oldest = _oldest_kept(repo)
        due = oldest is not None and _timestamp(oldest) < time.time() - parse_duration(
            limits.older_than
        )
    if not due and limits.max_size is not None:
        due = storage.objects_size(repo.path) > parse_size(limits.max_size)
    if not due:
        return None
    return prune(
        repo,
        keep=limits.keep,
        older_than=limits.older_than,
        max_bytes=limits.max_size,
        compact=False,
    )


def _oldest_kept(repo: ShadowRepo) -> CommitInfo | None:
    """The oldest checkpoint kept: the shallow boundary when there is one, else the root."""
    boundaries = [
        repo.commit_info(sha) for sha in storage.read_shallow(repo.path) if repo.contains(sha)
    ]
    if boundaries:
        return min(boundaries, key=_timestamp)
    oldest = None
    for info in repo.history():
        oldest = info
    return oldest

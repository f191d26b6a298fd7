"""The one restore pipeline: plan -> vet -> journal -> apply (guarded) -> commit -> record.

Restore, partial restore, undo, redo, restore_turn, the completion of an interrupted restore
and clone's first checkout are all this pipeline with different requests:

1. **plan**: read and vet the target tree (unsafe names refused, names that are not UTF-8
   left out and reported), scan the desk, compose the desired state (the whole target, the
   target under some paths, or the desk with a journal's entries put back) and diff it.
2. **vet**: everything the plan writes is read first: each blob must exist and be writable as
   its mode says, every name must fit the file system, and nothing untracked may be in the way;
   the seal's ref must be writable (stage 6 writes it once the desk is changed).
3. **pre-snapshot**: the desk as found is committed, so everything the restore overwrites or
   deletes stays in a checkpoint (files over the size limit that it reverts included); each
   of those files is read once more to make sure (the stat cache lives in the repository).
4. **journal**: the intent record is written and flushed; from here on a crash is completed by
   the next operation (``recovery.py``).
5. **apply**: writes and deletes through the desk's folder descriptors, each checked just
   before it happens to still be what the scan saw (else ``DeskChangedError``).
6. **commit** the restored state with its action and target trailers, **record** the stat of
   what was written in the stat cache, remove the journal, and seal the state.

:func:`restore` is the entry point. It runs the pipeline (:func:`run`) and, when another writer
changed a planned file during the writes, completes the restore through its journal
(``recovery.recover``, handed this pipeline), as the next operation would after a crash.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..core.ids import short_id
from ..core.trees import (
    BLOB_MODES,
    SYMLINK_MODE,
    TREE_MODE,
    FileEntry,
    RawObject,
    blob_id,
    build_trees,
)
from ..desk import safety
from ..desk.checkout import Plan, midway, plan
from ..desk.scan import Scan, entry_now
from ..errors import (
    ConcurrentChangeError,
    DeskChangedError,
    ExternalChangesError,
    FileAccessError,
    InvalidArgumentError,
    MissingDeskError,
    NoCheckpointsError,
    NotInCheckpointError,
    OverSizeLimitError,
)
from ..store import changestats, metadata
from ..store.objectio import as_objects
from ..store.repo import ShadowRepo
from . import calls, dryrun, external, history, journal, policy, recovery, snapshot
from .request import (
    CONFLICTS,
    OVERWRITE,
    REFUSE,
    RESTORE,
    TARGET,
    UNDO,
    UNDO_OF,
    Outcome,
    Request,
    compose,
)
from .results import RestoreResult
from .session import OUTSIDE, LockedSession, ReadSession

TOO_LARGE_UNHELD = 'it is over the maximum file size and the checkpoint does not hold it'
CHANGED_OUTSIDE = 'changed outside the agent'


@dataclass
class _Desired:
    files: dict[str, FileEntry]
    trees: dict[str, bytes]
    tree: bytes
    built: list[RawObject]
    governed: set[str] | None  # paths the target decides (None: every tracked path)

    def decides(self, path: str) -> bool:
        return self.governed is None or path in self.governed


class _Unheld(Exception):
    """A file the restore would replace or delete holds bytes no checkpoint holds."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def to_checkpoint(
    session: LockedSession,
    checkpoint_id: str | None,
    paths: Sequence[str] | None,
    *,
    dry_run: bool,
    on_external: str,
) -> RestoreResult:
    """Restores a checkpoint (None: the newest): the whole desk, or only ``paths`` (files or
    folders, desk-relative). Its commits name the target by its short id, whatever prefix
    (or full id) the caller typed."""
    target, _ = session.target(checkpoint_id)
    label = short_id(target)
    selection: tuple[str, ...] = ()
    if paths is not None:
        if isinstance(paths, str):
            paths = (paths,)
        selection = tuple(history.normalize_path(p, session.allowlist) for p in paths)
        if not selection:
            raise InvalidArgumentError('no paths given to restore', name='paths', value=paths)
    request = Request(target, label, selection=selection, dry_run=dry_run, on_external=on_external)
    return restore(session, request)


def restore(session: LockedSession, request: Request) -> RestoreResult:
    """Runs a restore; when another writer changed a planned file meanwhile, saves the desk as
    found and completes the restore through its record. The result also says what completing
    an interrupted restore did when the lock was taken (``session.recovery``)."""
    try:
        result = run(session, request).result
    except DeskChangedError as change:
        cause = f'a restore during which {change.path} was changed by another writer'
        completed = recovery.recover(session, run, cause=cause)
        session.recovery = completed
        if completed is None:
            raise
        return RestoreResult(
            before_id=completed.before_id,
            target_id=completed.target_id,
            restored_id=completed.restored_id,
            written=completed.written,
            deleted=completed.deleted,
            action=request.action,
            recovered=str(completed),
        )
    if session.recovery is not None and result.recovered is None:
        return replace(result, recovered=str(session.recovery))
    return result


def run(session: LockedSession, request: Request) -> Outcome:
    """Runs the pipeline; raises ``DeskChangedError`` (journal kept) when another writer
    changed a planned file during the writes: :func:`restore` completes it through the journal.

    When a file it would replace or delete turns out to hold bytes the pre-snapshot does not
    (the stat cache, which lives in the repository, described it wrongly, or it changed just
    then), nothing has been touched yet: the stat cache is dropped and the restore starts
    again from a scan that reads every file.
    """
    try:
        return _run(session, request)
    except _Unheld:
        session.forget_cache()
    try:
        return _run(session, request)
    except _Unheld as unheld:
        raise ConcurrentChangeError(
            f'cannot {request.action}: {unheld.path} keeps changing while the desk is saved '
            'first, and would be lost; nothing was changed',
            path=unheld.path,
        ) from None


def _run(session: LockedSession, request: Request) -> Outcome:
    repo = session.repo
    target_info = repo.commit_info(request.target)
    tree_skipped: list[tuple[str, str]] = []
    target_files, target_trees = session.flatten(target_info.tree, tree_skipped)
    whole = not any(why == OUTSIDE for _, why in tree_skipped)
    target_tree = target_info.tree if whole else None  # else built from the files it keeps
    if not request.dry_run:
        _make_desk(session)
    scan, cache = session.scan(record=not request.dry_run)
    desired = _compose(request, scan, target_files, target_trees, target_tree)
    revert = {path for path in scan.oversize if path in desired.files and desired.decides(path)}
    if revert and not request.dry_run:
        # Reverted although over the size limit: the pre-snapshot keeps their bytes.
        scan, cache = session.scan(record=True, exempt=revert)
        desired = _compose(request, scan, target_files, target_trees, target_tree)
    kept = list(tree_skipped)
    held_back = {path for path in scan.oversize - revert if desired.decides(path)}
    kept += [(path, TOO_LARGE_UNHELD) for path in sorted(held_back)]
    current = {p: e for p, e in scan.files.items() if p not in held_back}
    attribution = external.attribute(session, current, session.known_tree(scan, cache))
    decision = _decide_external(request, desired, current, attribution)
    kept += [(path, CHANGED_OUTSIDE) for path in decision.keep]
    wanted = {p: e for p, e in desired.files.items() if p not in held_back}
    the_plan = plan(current, wanted)
    if request.dry_run:
        the_plan.write = sorted(set(the_plan.write) | revert)
    the_plan.kept = sorted(kept)
    if session.config.for_agent and request.expected is None:  # not a journal's completion
        policy.refuse(repo.config, [*the_plan.write, *the_plan.delete], request.action)
    head = repo.head()
    if head is None:
        raise NoCheckpointsError(f'no checkpoints yet in {repo.path}', repository=repo.path)
    result = _Result(request, the_plan, current, decision.overwritten, attribution.basis)
    # The decision, dry or not: a dry run refuses where the run would.
    decision.raise_if_refused(request)
    with dryrun.refusals(request.dry_run):
        # A dry run did not read the files over the size limit it reverts: the run does.
        _vet(session, the_plan, scan, current, exempt=revert if request.dry_run else set())
        read_blob = safety.vet_blobs(the_plan.write, wanted, repo.read_blob, SYMLINK_MODE)
        repo.check_ref_settable(external.SEAL_REF)  # the last stage writes it: refused now
    if request.dry_run:
        return Outcome(result.make(head, None, True))
    saved = None
    if _worth_saving(session, request, scan):
        # Who wrote what it saves, the calls on record first, as a snapshot credits them.
        credit = snapshot.writes(session, attribution, '', calls.load(repo.path))
        saved = session.commit(scan, cache, _before_message(request), credit)
    head = repo.head()
    assert head is not None
    repo.require_commit(head)  # the restored state is committed on it: it must be readable
    _check_held(session, request, the_plan, current, scan, head)
    head_tree = repo.commit_info(head).tree  # read before the desk is touched
    message = request.message or _message(request, head)
    if not metadata.trailer_values(message).get(changestats.KEY):
        pairs = [(current.get(p), wanted.get(p)) for p in (*the_plan.write, *the_plan.delete)]
        at_hand = {**scan.new_blobs}
        stats = changestats.count(pairs, lambda sha: at_hand.get(sha) or read_blob.held(sha))
        message = metadata.with_trailer(message, changestats.KEY, stats.trailer())
    unchanged = safety.unchanged_since(scan)
    changed: set[str] = set()  # paths whose write or delete has begun

    def guard(path: str, st: os.stat_result | None) -> None:
        unchanged(path, st)  # called just before each change: it is one
        changed.add(path)

    try:
        journal.begin(
            repo.path,
            request.label,
            request.target,
            head,
            the_plan,
            current,
            wanted,
            message,
            request.pids,
        )
        written = session.checkout(the_plan, wanted, read_blob, guard)
        restored: bytes | None = None
        if head_tree != desired.tree:
            restored = session.commit_tree(desired.tree, desired.built, message)
        session.remember_checkout(
            cache, scan, desired.files, desired.trees, written, restored or head
        )
        journal.finish(repo.path)
    except KeyboardInterrupt as interrupt:
        recovery.interrupted(session, request, the_plan, changed, head, interrupt)
        raise
    _seal(session, request, the_plan, desired.files, attribution)
    return Outcome(result.make(saved or head, restored, False), saved, the_plan)


def _seal(
    session: LockedSession,
    request: Request,
    the_plan: Plan,
    files: dict[str, FileEntry],
    attribution: external.Attribution,
) -> None:
    """Seals the restored state as the state the product left. Unless everything was
    overwritten, the files changed outside the agent that the restore did not write stay
    counted as changed outside it (the seal holds them as the agent had left them)."""
    touched = set(the_plan.write) | set(the_plan.delete)
    untouched = [path for path in attribution.external if path not in touched]
    if request.on_external == OVERWRITE or not untouched:
        external.mark_sealed(session)
    else:
        external.seal_files(session, _as_left_by_the_agent(files, untouched, attribution))


def _as_left_by_the_agent(
    files: dict[str, FileEntry], paths: list[str], attribution: external.Attribution
) -> dict[str, FileEntry]:
    """The restored state with each of ``paths`` as the agent had left it."""
    agent = dict(files)
    for path in paths:
        entry = attribution.left.get(path)
        if entry is None:
            agent.pop(path, None)
        else:
            agent[path] = entry
    return agent


@dataclass
class _Decision:
    """What a restore does with paths changed outside the agent."""

    keep: list[str] = field(default_factory=list)  # left as they are
    overwritten: list[str] = field(default_factory=list)  # put back to the target anyway
    conflicts: list[str] = field(default_factory=list)  # refused (undo, redo)
    refused: list[str] = field(default_factory=list)  # refused (all or nothing)

    def raise_if_refused(self, request: Request) -> None:
        """Refuses as the request's policy says (worded for a dry run in one)."""
        refusing = dryrun.refusing(request.dry_run)
        if self.refused:
            raise ExternalChangesError(
                f'{refusing} {request.action}: it would overwrite {len(self.refused)} file(s) '
                f'changed outside the agent: {_some(self.refused)} (keep them, or force it '
                'to overwrite them; they are kept in the pre-snapshot)',
                tuple(self.refused),
            )
        if self.conflicts:
            raise ExternalChangesError(
                f"{refusing} {request.action}: the agent's last step changed "
                f'{_some(self.conflicts)}, and so did someone else since; nothing was changed '
                '(force it to put back the older version, or keep the outside changes)',
                tuple(self.conflicts),
            )


def _decide_external(
    request: Request,
    desired: _Desired,
    current: dict[str, FileEntry],
    attribution: external.Attribution,
) -> _Decision:
    """Applies the request's policy to the paths changed outside the agent, and to the ones
    the request says someone else changed (see ``Request``).

    Paths it keeps get their current entry in ``desired`` (whose trees are rebuilt).
    """
    decision = _Decision()
    policy = request.on_external
    for path in sorted(request.others.union(attribution.external)):
        if not desired.decides(path) or current.get(path) == desired.files.get(path):
            continue  # the restore does not touch it
        if policy == OVERWRITE:
            decision.overwritten.append(path)
        elif policy == REFUSE:
            decision.refused.append(path)
        elif policy == CONFLICTS and desired.files.get(path) != attribution.left.get(path):
            decision.conflicts.append(path)  # the agent's step changed it, and so did someone
            decision.overwritten.append(path)
        else:
            decision.keep.append(path)
    if decision.keep:
        for path in decision.keep:
            entry = current.get(path)
            if entry is None:
                desired.files.pop(path, None)
            else:
                desired.files[path] = entry
        desired.trees, desired.built = build_trees(desired.files, set(), {})
        desired.tree = desired.trees['']
    return decision


def _some(paths: list[str]) -> str:
    return ', '.join(paths[:5]) + (' ...' if len(paths) > 5 else '')


def _worth_saving(session: ReadSession, request: Request, scan: Scan) -> bool:
    """Whether the desk as found holds something no checkpoint holds yet.

    Completing a journal, a path holding neither its entry before nor after the restore is
    someone else's edit, unless it is what the restore's own rewrite left part way (see
    ``checkout.midway``): its bytes are all in the two checkpoints.
    """
    if not request.record_before and not scan.files:
        return False
    if request.expected is None:
        return True
    found = scan.files
    return any(
        found.get(path) not in pair and not _left_midway(session, path, pair, found.get(path))
        for path, pair in request.expected.items()
    )


def _left_midway(
    session: ReadSession,
    path: str,
    pair: tuple[FileEntry | None, FileEntry | None],
    found: FileEntry | None,
) -> bool:
    """Whether the desk file at ``path`` is the restore's in-place rewrite from ``pair[0]``
    to ``pair[1]`` stopped part way (its mode either one's)."""
    before, after = pair
    if found is None or after is None or found[0] == SYMLINK_MODE or after[0] == SYMLINK_MODE:
        return False
    if before is not None and before[0] == SYMLINK_MODE:
        return False
    if found[0] not in {after[0], before[0] if before else after[0]}:
        return False
    data = session.desk.folders.read_bytes(path)
    if data is None or blob_id(data) != found[1]:
        return False
    repo = session.repo
    old = repo.read_blob(before[1]) if before is not None else None
    return midway(data, old, repo.read_blob(after[1]))


def _check_held(
    session: LockedSession,
    request: Request,
    the_plan: Plan,
    current: dict[str, FileEntry],
    scan: Scan,
    head: bytes,
) -> None:
    """Makes sure every file the plan replaces or deletes is held byte for byte by the newest
    checkpoint (the pre-snapshot) or, completing a journal, by the commits it names; raises
    ``_Unheld`` for the first that is not.

    The scan takes a file's blob id from the stat cache while its stat is unchanged, and the
    cache lives in the repository, where anyone may write: one naming a blob the store lacks,
    another file's blob, or trees the desk does not have would leave bytes out of the
    pre-snapshot that the restore then destroys. So each such file whose id came from the cache
    is read once more here; a blob the pre-snapshot names but the store lacks is stored when
    this scan read it.
    """
    repo = session.repo
    root = repo.commit_info(head).tree
    trees: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}
    for path in (*the_plan.write, *the_plan.delete):
        if path not in current or path in scan.carried:
            continue  # nothing there, or changed while read (the checkout's guard stops it)
        # A file this scan read itself is known as it was then; a later change fails the
        # checkout's guard. One whose id the cache gave is read again.
        found = current[path] if path in scan.hashed else entry_now(session.desk.folders, path)
        if found is None:
            continue  # gone: nothing to lose
        held = {_entry_at(repo, root, path, trees)}
        pair = None if request.expected is None else request.expected.get(path)
        if pair is not None:
            held.update(pair)
        if found not in held and not (pair and _left_midway(session, path, pair, found)):
            raise _Unheld(path)
        if not repo.contains(found[1]):
            data = scan.new_blobs.get(found[1])
            if data is None:
                raise _Unheld(path)  # taken from the cache: read afresh on the next try
            repo.write_objects(as_objects([(found[1], b'blob', data)]))


def _entry_at(
    repo: ShadowRepo, tree: bytes, path: str, trees: dict[bytes, dict[bytes, tuple[int, bytes]]]
) -> FileEntry | None:
    """The entry a tree holds at ``path`` (None when none), reading each tree once."""
    names = path.encode('utf-8', 'surrogateescape').split(b'/')
    sha, mode = tree, TREE_MODE
    for name in names:
        if mode != TREE_MODE:
            return None
        listing = trees.get(sha)
        if listing is None:
            entries = repo.tree_entries(sha)
            listing = trees[sha] = {entry: (mode, child) for entry, mode, child in entries}
        try:
            mode, sha = listing[name]
        except KeyError:
            return None
    return (mode, sha) if mode in BLOB_MODES else None


def _make_desk(session: LockedSession) -> None:
    path = session.config.desk
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as error:
        raise MissingDeskError(f'the desk {path} is not a folder', desk=path) from error
    except OSError as error:
        raise FileAccessError(
            f'cannot create the desk {path}: {error.strerror}', path=path, action='create'
        ) from error


def _compose(
    request: Request,
    scan: Scan,
    target_files: dict[str, FileEntry],
    target_trees: dict[str, bytes],
    target_tree: bytes | None,
) -> _Desired:
    """The tracked state the restore makes: the target's, or the desk with some paths put back.

    ``target_tree`` is None when the target holds paths outside the tracked paths: the state
    is then built from the files it keeps, so the commit recording it holds what the desk does.
    """
    if request.overlay is None and not request.selection:
        if target_tree is not None:
            return _Desired(target_files, target_trees, target_tree, [], None)
        trees, built = build_trees(dict(target_files), set(), {})
        return _Desired(dict(target_files), trees, trees[''], built, None)
    files = dict(scan.files)
    if request.overlay is not None:
        governed = set(request.overlay)
        for path, entry in request.overlay.items():
            if entry is None:
                files.pop(path, None)
            else:
                files[path] = entry
    else:
        selection = request.selection
        for path in selection:
            if not any(history.under(name, (path,)) for name in (*target_files, *scan.files)):
                raise NotInCheckpointError(
                    f'{path!r} is neither in checkpoint {request.label} nor in the desk',
                    path=path,
                    checkpoint=request.label,
                )
        governed = {p for p in (*target_files, *scan.files) if history.under(p, selection)}
        files = {p: e for p, e in files.items() if not history.under(p, selection)}
        files.update((p, e) for p, e in target_files.items() if history.under(p, selection))
    trees, built = build_trees(files, set(), {})
    return _Desired(files, trees, trees[''], built, governed)


def _vet(
    session: ReadSession,
    the_plan: Plan,
    scan: Scan,
    current: dict[str, FileEntry],
    exempt: set[str],
) -> None:
    """Refuses, before the first write, a plan that could not finish or would lose bytes;
    ``exempt``: files over the size limit a dry run reverts, which the run reads (and saves
    first) before it vets them."""
    for path in the_plan.write:
        if path in scan.oversize and path not in exempt:
            raise OverSizeLimitError(
                f'cannot restore {path}: the file in the desk is over the maximum file size '
                'and was not saved first; nothing was changed',
                path=path,
                limit=session.desk.max_file_size,
            )
    if exempt:
        the_plan = Plan([p for p in the_plan.write if p not in exempt], the_plan.delete)
    session.desk.check_plan(the_plan, current)


def _before_message(request: Request) -> str:
    if request.before_subject is not None:
        subject = request.before_subject
    elif request.action == RESTORE:
        subject = f'before restoring {request.label}'
    else:
        subject = f'before {request.action}'
    return compose(subject, [(metadata.ACTION, f'before-{request.action}')])


def _message(request: Request, head: bytes) -> str:
    pairs = [(metadata.ACTION, request.action), (TARGET, request.target.decode())]
    pairs += [(metadata.PATH, path) for path in request.selection]
    if request.action == UNDO:
        pairs.append((UNDO_OF, head.decode()))
    pairs += list(request.trailers)
    return compose(request.subject or f'restored {request.label}', pairs)


@dataclass
class _Result:
    request: Request
    plan: Plan
    current: dict[str, FileEntry]
    overwritten: list[str]
    basis: str

    def make(self, before: bytes, restored: bytes | None, dry_run: bool) -> RestoreResult:
        the_plan = self.plan
        return RestoreResult(
            before_id=short_id(before),
            target_id=short_id(self.request.target),
            restored_id=short_id(restored),
            written=tuple(the_plan.write),
            deleted=tuple(the_plan.delete),
            created=tuple(path for path in the_plan.write if path not in self.current),
            external=tuple(sorted(self.overwritten)),
            dry_run=dry_run,
            action=self.request.action,
            kept=tuple(the_plan.kept),
            attribution=self.basis,
        )

"""dulwich's side of the transfers to and from a remote; ``remote/`` decides what moves and when.

- :func:`connect`: dulwich's client for a URL (smart HTTP, ssh, git), as a :class:`Connection`
  that lists the remote's refs, fetches a branch into a shadow repository and sends one;
- :class:`PathRepository`: a repository on a path (a local remote), opened like our own;
- :func:`copy_objects`: what one repository lacks of a history, copied from another as a pack;
- :func:`pack_for_push`: the pack a push sends, read whole before anything is sent;
- :func:`repair_shallow`: the shallow boundaries a fetch of a pruned history needs;
- :func:`failure_kind`: what a transport error means (credentials refused, no repository,
  the server hung up).

dulwich is imported when one of them runs, never when this module is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import gitfiles
from .dulwichadapter import object_id, object_ids, ref_name

if TYPE_CHECKING:
    from dulwich.client import GitClient
    from dulwich.object_store import ObjectStoreGraphWalker
    from dulwich.objects import ObjectID
    from dulwich.pack import UnpackedObject
    from dulwich.refs import Ref
    from dulwich.repo import BaseRepo, Repo

    from .repo import ShadowRepo

ZERO = b'0' * 40  # the id git sends for a ref that does not exist
ProgressText = Callable[[str], None]
ProgressBytes = Callable[[bytes], None]


class Failure(Enum):
    """What a failed transfer ran into, when it is one of the cases worth explaining."""

    UNAUTHORIZED = 'the server refused the credentials'
    NOT_A_REPOSITORY = 'not a git repository'
    HUNG_UP = 'the server hung up'


def failure_kind(error: BaseException) -> Failure | None:
    """The kind of a transport error dulwich raised, or None for any other error."""
    from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized
    from dulwich.errors import HangupException, NotGitRepository

    if isinstance(error, (HTTPUnauthorized, HTTPProxyUnauthorized)):
        return Failure.UNAUTHORIZED
    if isinstance(error, NotGitRepository):
        return Failure.NOT_A_REPOSITORY
    if isinstance(error, HangupException):
        return Failure.HUNG_UP
    return None


# -- a remote reached through a client -----------------------------------------------------


@dataclass(frozen=True)
class PushPack:
    """The pack a push sends: its object count and its records, read whole."""

    count: int
    records: list[UnpackedObject]


@dataclass(frozen=True)
class Connection:
    """dulwich's client for one remote, and the repository's path on the server."""

    client: GitClient
    path: str

    def refs(self) -> dict[bytes, bytes]:
        """The remote's refs (name to id), asked of the server now."""
        refs = self.client.get_refs(self.path.encode()).refs
        return {name: sha for name, sha in refs.items() if sha is not None}

    def fetch_branch(
        self,
        repo: ShadowRepo,
        branch: bytes,
        needed: Callable[[bytes], bool],
        progress: ProgressBytes | None = None,
    ) -> bytes | None:
        """Fetches the objects of the remote's ``branch`` into ``repo``, unless ``needed`` says
        its id is not; returns that id, or None when the remote has no such branch."""
        seen: list[bytes] = []

        def determine_wants(
            refs: Mapping[Ref, ObjectID], depth: int | None = None
        ) -> list[ObjectID]:
            sha = refs.get(ref_name(branch))
            if sha is None or sha == ZERO:
                return []
            seen.append(sha)
            return [sha] if needed(sha) else []

        self.client.fetch(
            self.path.encode(),
            _QuietShallow.around(repo.dulwich_repo, repo.path),
            determine_wants=determine_wants,
            progress=progress,
        )
        return seen[0] if seen else None

    def send_branch(
        self,
        branch: bytes,
        new: bytes,
        check: Callable[[bytes | None], None],
        pack: PushPack,
        progress: ProgressBytes | None = None,
    ) -> str | None:
        """Sends ``pack`` and moves the remote's ``branch`` to ``new``; ``check`` is given where
        the branch is on the server first (it raises to stop the push). Returns the server's
        complaint about the branch, or None when it took the update."""
        name = ref_name(branch)

        def update_refs(refs: dict[Ref, ObjectID]) -> dict[Ref, ObjectID]:
            check(refs.get(name))
            updated = dict(refs)
            updated[name] = object_id(new)
            return updated

        def generate(
            have: Set[ObjectID],
            want: Set[ObjectID],
            *,
            ofs_delta: bool = False,
            progress: ProgressBytes | None = None,
        ) -> tuple[int, Iterator[UnpackedObject]]:
            return pack.count, iter(pack.records)

        result = self.client.send_pack(self.path.encode(), update_refs, generate, progress=progress)
        return (result.ref_status or {}).get(branch)


def connect(
    address: str, *, username: str | None, password: str | None, ssh_command: str | None
) -> Connection:
    """dulwich's client for a URL (without user info); ``ValueError`` or ``KeyError`` when
    dulwich does not know how to reach it."""
    from dulwich.client import get_transport_and_path

    client, path = get_transport_and_path(
        address, username=username, password=password, ssh_command=ssh_command
    )
    return Connection(client, path)


class _QuietShallow:
    """A fetch's target repository, minus announcing our shallow boundaries to the server.

    dulwich's client sends ``shallow`` lines for a pruned repository, which dulwich's server
    rejects unless a ``deepen`` follows. Our boundaries only hide history older than what
    we have, so the server need not know: the walker simply stops at them. Everything but the
    graph walker is the repository's own.
    """

    def __init__(self, repo: Repo, path: Path) -> None:
        self._repo = repo
        self._path = path

    @classmethod
    def around(cls, repo: Repo, path: Path) -> BaseRepo:
        """The repository as dulwich's client sees it: it reads everything else through it."""
        return cast('BaseRepo', cls(repo, path))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repo, name)

    def get_graph_walker(self, heads: list[ObjectID] | None = None) -> ObjectStoreGraphWalker:
        from dulwich.object_store import ObjectStoreGraphWalker
        from dulwich.objects import Commit

        from .pack.reachability import read_shallow

        shallow = read_shallow(self._path)
        store = self._repo.object_store
        if heads is None:
            gitfiles.check_refs(self._path, 'refs/heads/main')
            branches = self._repo.refs.as_dict(ref_name(b'refs/heads'))
            heads = [sha for sha in branches.values() if sha in store]

        def parents(sha: ObjectID) -> list[ObjectID]:
            if sha in shallow:
                return []
            commit = store[sha]
            return list(commit.parents) if isinstance(commit, Commit) else []

        return ObjectStoreGraphWalker(heads, parents)


# -- a remote on a path --------------------------------------------------------------------


class PathRepository:
    """A repository on a path (a local remote), opened like our own: its config vetted, no
    include, ``.git`` or ``commondir`` file followed."""

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self.path = Path(repo.controldir())

    @classmethod
    def open(cls, control: Path) -> PathRepository:
        """The repository whose control folder is ``control`` (``CorruptRepositoryError`` when
        it is none)."""
        from . import config as repo_config

        return cls(repo_config.open_dulwich(control, repo_config.load(control, missing_ok=True)))

    @classmethod
    def create(cls, path: Path) -> PathRepository:
        """A new empty bare repository in the (existing, empty) folder ``path``."""
        from dulwich.repo import Repo

        return cls(Repo.init_bare(str(path)))

    def read_ref(self, name: bytes) -> bytes | None:
        """What a ref holds (an id, or ``ref: ...`` for a symbolic one), or None."""
        gitfiles.check_refs(self.path, name.decode('utf-8', 'replace'))
        return self._repo.refs.read_ref(ref_name(name))

    def add_ref(self, name: bytes, sha: bytes, message: bytes | None = None) -> bool:
        """Creates a ref at ``sha``; False when it exists already."""
        gitfiles.check_refs(self.path, name.decode('utf-8', 'replace'))
        return self._repo.refs.add_if_new(ref_name(name), object_id(sha), message=message)

    def move_ref(self, name: bytes, old: bytes, new: bytes, message: bytes | None = None) -> bool:
        """Moves a ref from ``old`` to ``new``; False when it was not at ``old``."""
        gitfiles.check_refs(self.path, name.decode('utf-8', 'replace'))
        return self._repo.refs.set_if_equals(
            ref_name(name), object_id(old), object_id(new), message=message
        )

    def point_head_at(self, branch: bytes) -> None:
        """Makes ``HEAD`` name ``branch`` when the branch it names does not exist."""
        gitfiles.check_refs(self.path, 'HEAD')
        refs = self._repo.refs
        value = refs.read_ref(ref_name(b'HEAD')) or b''
        if value.startswith(b'ref: ') and value[5:].strip() not in set(refs.allkeys()):
            refs.set_symbolic_ref(ref_name(b'HEAD'), ref_name(branch))

    def close(self) -> None:
        self._repo.close()


# -- objects -------------------------------------------------------------------------------


def _dulwich(repo: ShadowRepo | PathRepository) -> tuple[Repo, Path]:
    if isinstance(repo, PathRepository):
        return repo._repo, repo.path
    return repo.dulwich_repo, repo.path


def copy_objects(
    source: ShadowRepo | PathRepository,
    target: ShadowRepo | PathRepository,
    head: bytes,
    progress: ProgressText | None = None,
) -> int:
    """Copies what ``target`` lacks of the history below ``head`` as one pack with deltas;
    returns how many objects it wrote."""
    from . import storage
    from .pack.reachability import read_shallow

    source_repo, source_path = _dulwich(source)
    target_repo, _ = _dulwich(target)
    source_store = source_repo.object_store
    target_store = target_repo.object_store
    missing = storage.reachable(
        source_store,
        [head],
        read_shallow(source_path),
        enter_commit=lambda sha: object_id(sha) not in target_store,
    )
    objects = [
        (source_store[object_id(sha)], path)
        for sha, path in missing.items()
        if object_id(sha) not in target_store
    ]
    storage.write_pack(target_store, objects, progress=progress)
    return len(objects)


def pack_for_push(
    repo: ShadowRepo, have: Set[bytes], want: Set[bytes], progress: ProgressText | None = None
) -> PushPack:
    """The pack that brings a remote holding ``have`` up to ``want``, read whole now (while
    no packing can remove what its records come from)."""
    from .pack.reachability import read_shallow

    count, records = repo.dulwich_repo.object_store.generate_pack_data(
        object_ids(have),
        object_ids(want),
        shallow=object_ids(read_shallow(repo.path)),
        progress=progress,
        ofs_delta=True,
    )
    return PushPack(count, list(records))


def repair_shallow(repo: ShadowRepo | PathRepository, head: bytes) -> list[bytes]:
    """Marks as shallow every commit (from ``head`` down) whose parents are missing, so a
    history fetched from a pruned remote stays readable; returns the commits marked."""
    from dulwich.objects import Commit

    from .pack.reachability import read_shallow

    dulwich_repo, path = _dulwich(repo)
    store = dulwich_repo.object_store
    shallow = read_shallow(path)
    marked: list[bytes] = []
    seen: set[bytes] = set()
    pending = [head]
    while pending:
        sha = pending.pop()
        if sha in seen or sha in shallow:
            continue
        seen.add(sha)
        commit = store[object_id(sha)]
        if not isinstance(commit, Commit):
            break
        missing = [parent for parent in commit.parents if parent not in store]
        if missing:
            marked.append(sha)
            continue
        pending.extend(commit.parents)
    if marked:
        gitfiles.write_shallow(path, shallow | set(marked))
    return marked

"""Off-machine backup: push a desk's checkpoints to any git server, pull and clone them back.

Remotes live in the shadow repository's config (``[remote "NAME"] url = ...``). Transfers go
through dulwich's clients, so local paths, ``file://``, ``http(s)://`` (smart HTTP) and
``ssh://`` all work without a git binary. The remote's branch ``main`` mirrors the desk's.

- Push and pull are fast-forward only; a history that diverged is an error naming both ends.
- Credentials never enter the repository and are never printed. A URL given with user info
  (``https://user:secret@host/...``, ``https://TOKEN@host/...``) is stored without it, and the
  user name and password go to a credential file outside the repository (see
  :mod:`credentials`); ``$CHECKPOINTS_REMOTE_USERNAME`` / ``$CHECKPOINTS_REMOTE_PASSWORD`` take
  precedence over that file. Every URL shown (results, errors, the reflog) has its user info
  removed, and error messages have any secret masked. Percent-encoded user names and passwords
  are decoded (RFC 3986) before they are sent.
- A pruned (shallow) history pushed to an empty remote would leave it holding commits whose
  parents it lacks: git cannot read such a repository, although dulwich reports success. For
  a remote on a path or ``file://`` the push marks the remote shallow too, so it stays
  readable; over http or ssh (where the remote's ``shallow`` file cannot be written) the push
  is refused before anything is sent, with an explanation.
- After a fetch, any commit whose parent did not arrive (the remote was itself pruned) is
  recorded as a shallow boundary, so the local repository stays readable as well.
- A prune may drop the checkpoint a remote is at. Every head this desk pushed, pulled or
  cloned is remembered (``checkpoints/remote-heads``): such a head was on this desk's branch,
  so it is an ancestor of the kept history, and a pull finds the remote behind (fetching
  nothing back). When the prune also dropped checkpoints that were never pushed, the kept
  history has a gap the remote cannot fill: a path or ``file://`` remote takes the push, is
  marked shallow at the oldest kept checkpoint and keeps its older history reachable under
  ``refs/checkpoints/pruned/<id>``; over http or ssh (where the remote cannot be marked
  shallow, and would then fail every clone) the push is refused before anything is sent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from . import config as repo_config
from . import credentials, engine, journal
from .commitinfo import SHORT_ID_LENGTH
from .durability import write_atomically
from .errors import CheckpointError, CorruptRepositoryError
from .fs import read_file
from .repo import BRANCH, PRIVATE_DIR, ShadowRepo, is_initialized
from .session import DeskConfig, Session

ZERO = b'0' * 40
USERNAME_ENV = 'CHECKPOINTS_REMOTE_USERNAME'
PASSWORD_ENV = 'CHECKPOINTS_REMOTE_PASSWORD'
SSH_COMMAND_ENV = 'CHECKPOINTS_SSH_COMMAND'  # else $GIT_SSH_COMMAND, else ssh
_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,63}')
_HEX_SHA = re.compile(rb'[0-9a-f]{40}')
KNOWN_HEADS = 'remote-heads'  # in the repository's private folder, see _remember_head
PRUNED_REF_PREFIX = b'refs/checkpoints/pruned/'
_HTTP = ('http', 'https')

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Remote:
    name: str
    url: str = field(repr=False)  # as stored; may hold user info in a config written before

    def __repr__(self) -> str:
        return f'Remote(name={self.name!r}, url={self.display_url!r})'

    @property
    def display_url(self) -> str:
        return redact(self.url)


@dataclass(frozen=True)
class TransferResult:
    """What a push, pull or clone did."""

    remote: str
    url: str  # without user info
    old: str | None  # the branch before (remote's for push, local's for pull), short id
    new: str | None  # the branch after
    up_to_date: bool
    marked_shallow: tuple[str, ...] = ()


# -- URLs and secrets ----------------------------------------------------------------------


def redact(url: str) -> str:
    """The URL without its user info (user name and password: either may be a token).

    Control characters (and undecodable bytes) are shown as ``?``, so a URL never moves the
    cursor, adds a line or fails to print.
    """
    span = _userinfo_span(url)
    shown = url if span is None else url[: span[0]] + url[span[1] + 1 :]
    return ''.join('?' if _unprintable(c) else c for c in shown)


def _userinfo_span(url: str) -> tuple[int, int] | None:
    """Where the user info of a URL lies (its start, the index of its ``@``), or None.

    Taken conservatively, up to the last ``@``: a secret holding an unencoded ``/``, ``?`` or
    ``#`` must not show up in part because a parser ends the host part early.
    """
    scheme_end = url.find('://')
    if scheme_end < 0 or '@' not in url[scheme_end + 3 :]:
        return None
    return scheme_end + 3, url.rindex('@')


def _unprintable(character: str) -> bool:
    code = ord(character)
    return code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF


def _secrets(url: str) -> list[str]:
    """Every secret that could show up in a message about ``url``, longest first."""
    found: list[str] = []
    raw: list[str | None] = []
    span = _userinfo_span(url)
    if span is not None:
        userinfo = url[span[0] : span[1]]
        raw = [userinfo, *userinfo.split(':', 1)]
    try:
        address, given = credentials.split(url)
        stored = credentials.lookup(address) if given.empty else credentials.NONE
    except CheckpointError:
        given = stored = credentials.NONE
    candidates = [
        *raw,
        given.username,
        given.password,
        stored.username,
        stored.password,
        os.environ.get(USERNAME_ENV),
        os.environ.get(PASSWORD_ENV),
    ]
    for secret in candidates:
        if secret and len(secret) >= 3 and secret not in found:
            found.append(secret)
    return sorted(found, key=len, reverse=True)


def _scrub(text: str, url: str) -> str:
    for secret in _secrets(url):
        text = text.replace(secret, '***')
    return text


def _is_local(url: str) -> bool:
    return '://' not in url or url.startswith('file://')


def _local_path(url: str) -> Path:
    if url.startswith('file://'):
        return Path(urlsplit(url).path)
    return Path(url)


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CheckpointError(
            f'{name!r} is not a remote name (letters, digits, ".", "_" and "-", like "backup")'
        )
    return name


# -- the config ----------------------------------------------------------------------------


def list_remotes(repository: Path) -> list[Remote]:
    config = repo_config.load(repository)
    remotes = []
    for subsection in config.subsections(b'remote'):
        url = config.value(b'remote', b'url', subsection)
        name = subsection.decode('utf-8', 'replace')
        if url is None or not _NAME.fullmatch(name):
            continue  # not a remote our verbs could name
        remotes.append(Remote(name, url.decode('utf-8', 'surrogateescape')))
    return sorted(remotes, key=lambda remote: remote.name)


def get_remote(repository: Path, name: str | None) -> Remote:
    remotes = list_remotes(repository)
    if name is None:
        if len(remotes) == 1:
            return remotes[0]
        for remote in remotes:
            if remote.name == 'origin':
                return remote
        if not remotes:
            raise CheckpointError(
                f'no remote configured in {repository}; add one with '
                '`checkpoints remote add NAME URL`'
            )
        raise CheckpointError(
            'several remotes are configured ('
            + ', '.join(r.name for r in remotes)
            + '); name the one to use'
        )
    for remote in remotes:
        if remote.name == name:
            return remote
    raise CheckpointError(f'no remote named {name!r} in {repository}')


def add_remote(repository: Path, name: str, url: str) -> Remote:
    """Remembers a remote; credentials in the URL go to the credential file, not the config."""
    check_name(name)
    if not isinstance(url, str) or not url.strip() or not _storable_text(url.strip()):
        raise CheckpointError(f'{redact(str(url))!r} is not a remote URL or path')
    url = url.strip()
    if _is_local(url) and not url.startswith('file://'):
        url = os.path.abspath(url)  # relative to where the command ran, not to the repository
    _client_for(url)  # fails early on an unsupported URL
    if any(remote.name == name for remote in list_remotes(repository)):
        raise CheckpointError(f'a remote named {name!r} already exists; remove it first')
    stored, given = _storable(url)
    if not given.empty:
        credentials.save(stored, given, Path(repository))
    repo_config.set_values(
        repository,
        b'remote',
        b'url',
        [stored.encode('utf-8', 'surrogateescape')],
        subsection=name.encode(),
    )
    return Remote(name, stored)


def _storable_text(url: str) -> bool:
    """No control character, and bytes for every character (undecodable bytes included)."""
    try:
        url.encode('utf-8', 'surrogateescape')
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in url)


def _storable(url: str) -> tuple[str, credentials.Credentials]:
    """The URL to keep in the config, and the credentials to keep in the credential file."""
    if _is_local(url):
        return url, credentials.NONE
    address, given = credentials.split(url)
    if _userinfo_span(address) is not None:
        raise CheckpointError(
            f'{redact(url)}: the URL has an "@" after its host part; percent-encode "/", "?", '
            '"#" and "@" in a user name or password (%2F, %3F, %23, %40)'
        )
    if urlsplit(address).scheme.lower() in _HTTP:
        return address, given
    if given.password is not None:
        raise CheckpointError(
            f'{redact(url)}: a password in an ssh URL is not supported; use an ssh key or agent'
        )
    return url, credentials.NONE  # an ssh user name is part of the address, not a secret


def remove_remote(repository: Path, name: str) -> None:
    """Forgets a remote (its stored credentials stay: other desks may use the same URL)."""
    get_remote(repository, name)
    repo_config.remove_section(repository, b'remote', name.encode())


# -- clients -------------------------------------------------------------------------------


def _client_for(url: str):  # -> (GitClient, path)
    from dulwich.client import get_transport_and_path

    if _is_local(url):
        path = _local_path(url)
        return None, str(path)
    address, given = credentials.split(url)
    scheme = urlsplit(address).scheme.lower()
    chosen = given
    if chosen.empty and scheme in _HTTP:
        from_env = credentials.Credentials(
            os.environ.get(USERNAME_ENV) or None, os.environ.get(PASSWORD_ENV) or None
        )
        chosen = from_env if not from_env.empty else credentials.lookup(address)
    elif chosen.empty:
        chosen = credentials.Credentials(os.environ.get(USERNAME_ENV) or None, None)
    ssh_command = os.environ.get(SSH_COMMAND_ENV) or os.environ.get('GIT_SSH_COMMAND') or None
    try:
        return get_transport_and_path(
            address,
            username=chosen.username,
            password=chosen.password if scheme in _HTTP else None,
            ssh_command=ssh_command,
        )
    except (ValueError, KeyError) as error:
        raise CheckpointError(
            f'unsupported remote URL {redact(url)}: {_scrub(str(error), url)}'
        ) from error


def _transport_error(error: BaseException, remote: Remote, action: str) -> CheckpointError:
    from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized
    from dulwich.errors import HangupException, NotGitRepository

    where = remote.display_url
    if isinstance(error, (HTTPUnauthorized, HTTPProxyUnauthorized)):
        return CheckpointError(
            f'{action} {remote.name} ({where}) failed: the server refused the credentials '
            f'(check the user name and password: in the URL, in ${USERNAME_ENV}/${PASSWORD_ENV}, '
            f'or in the credential file {credentials.store_path()})'
        )
    if isinstance(error, NotGitRepository):
        return CheckpointError(f'{action} {remote.name} failed: {where} is not a git repository')
    if isinstance(error, HangupException):
        return CheckpointError(f'{action} {remote.name} ({where}) failed: the server hung up')
    message = _scrub(str(error) or type(error).__name__, remote.url)
    return CheckpointError(f'{action} {remote.name} ({where}) failed: {message}')


def _remote_refs(client, path: str) -> dict[bytes, bytes]:
    result = client.get_refs(path.encode() if isinstance(path, str) else path)
    refs = getattr(result, 'refs', result)
    return {name: sha for name, sha in refs.items() if sha is not None}


def _open_local_remote(remote: Remote, create: bool):  # -> dulwich Repo
    """The repository of a path remote, opened like our own (its config vetted, no include)."""
    from dulwich.repo import Repo

    path = _local_path(remote.url)
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        if not create:
            raise CheckpointError(f'{remote.name}: no repository at {path}')
        try:
            path.mkdir(parents=True, exist_ok=True)
            return Repo.init_bare(str(path))
        except OSError as error:
            raise CheckpointError(f'{remote.name}: cannot create {path}: {error}') from error
    control = path / '.git' if (path / '.git').is_dir() else path
    try:
        return repo_config.open_dulwich(control, repo_config.load(control, missing_ok=True))
    except CorruptRepositoryError as error:
        raise CheckpointError(f'{remote.name}: {error}') from error


# -- history helpers -----------------------------------------------------------------------


def _ancestors(repo: ShadowRepo, head: bytes | None) -> list[bytes]:
    return [info.sha.encode() for info in repo.history()] if head else []


def _short(sha: bytes | None) -> str | None:
    return sha.decode()[:SHORT_ID_LENGTH] if sha else None


def _known_heads(repo: ShadowRepo) -> set[bytes]:
    """Heads this desk pushed, pulled or cloned: each was on its branch, so is an ancestor.

    The branch only ever moves forward (snapshots, restores and fast-forward pulls add on top),
    so a commit that was its head once stays an ancestor of every later head, even after a
    prune dropped it. Malformed lines are ignored.
    """
    try:
        data = read_file(os.path.join(repo.path, PRIVATE_DIR, KNOWN_HEADS), 64 * 1024)
    except OSError:
        return set()
    return {line for line in data.split(b'\n') if _HEX_SHA.fullmatch(line)}


def _remember_head(repo: ShadowRepo, sha: bytes) -> None:
    """Adds ``sha`` (the branch's head now) to the known heads. Call under the lock."""
    path = os.path.join(repo.path, PRIVATE_DIR, KNOWN_HEADS)
    try:
        data = read_file(path, 64 * 1024)
    except OSError:
        data = b''
    lines = [line for line in data.split(b'\n') if _HEX_SHA.fullmatch(line) and line != sha]
    lines = [*lines[-255:], sha]
    write_atomically(Path(path), b''.join(line + b'\n' for line in lines))


def _behind(repo: ShadowRepo) -> set[bytes]:
    """Commits known to be ancestors of the branch that it may no longer hold (pruned)."""
    return _known_heads(repo) | _shallow_parents(repo)


def _shallow_parents(repo: ShadowRepo) -> set[bytes]:
    """Parents of the shallow boundary commits: what a pruned history leaves out."""
    from .storage import read_shallow

    parents: set[bytes] = set()
    for sha in read_shallow(repo.path):
        if repo.contains(sha):
            parents.update(repo.commit_info(sha).parents)
    return parents


def repair_shallow(dulwich_repo, path: Path, head: bytes) -> list[bytes]:
    """Marks as shallow every commit (from ``head`` down) whose parents are missing."""
    from dulwich.objects import Commit

    from .storage import read_shallow

    store = dulwich_repo.object_store
    shallow = read_shallow(path)
    marked: list[bytes] = []
    sha: bytes | None = head
    seen: set[bytes] = set()
    pending = [head]
    while pending:
        sha = pending.pop()
        if sha in seen or sha in shallow:
            continue
        seen.add(sha)
        commit = store[sha]
        if not isinstance(commit, Commit):
            break
        missing = [parent for parent in commit.parents if parent not in store]
        if missing:
            marked.append(sha)
            continue
        pending.extend(commit.parents)
    if marked:
        data = b''.join(s + b'\n' for s in sorted(shallow | set(marked)))
        write_atomically(Path(path) / 'shallow', data)
    return marked


def _progress_bytes(progress: Progress | None) -> Callable[[bytes], None] | None:
    if progress is None:
        return None

    def report(data: bytes) -> None:
        for piece in re.split(rb'[\r\n]+', data):
            text = piece.decode('utf-8', 'replace').strip()
            if text:
                progress(text)

    return report


def _progress_text(progress: Progress | None) -> Callable[..., None] | None:
    if progress is None:
        return None

    def report(message: str | bytes) -> None:
        if isinstance(message, bytes):
            message = message.decode('utf-8', 'replace')
        text = message.strip()
        if text:
            progress(text)

    return report


# -- push ----------------------------------------------------------------------------------


def push(config: DeskConfig, name: str | None, progress: Progress | None = None) -> TransferResult:
    """Pushes ``main`` to the remote's ``main``, fast-forward only.

    The desk's lock is held only while reading the repository: the remote's refs are asked
    for first, then (locked) the push is checked and its pack built in memory, then
    (unlocked, so snapshots go on) the pack is sent. The remote's branch moves only if it
    still is where it was when checked.
    """
    from .storage import read_shallow

    remote = get_remote(config.repository, name)
    client, path = _client_for(remote.url)
    if client is None:
        with engine.locked(config) as session:
            head = _head_to_push(session.repo)
            return _push_local(session.repo, remote, head, progress)
    try:
        remote_head = _remote_refs(client, path).get(BRANCH)
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001 - dulwich transport errors vary by transport
        raise _transport_error(error, remote, 'push to') from error
    with engine.locked(config) as session:
        repo = session.repo
        head = _head_to_push(repo)
        _check_push(repo, remote, head, remote_head, local=False)
        if remote_head == head:
            return TransferResult(remote.name, remote.display_url, _short(head), _short(head), True)
        _remember_head(repo, head)
        have = {remote_head} if remote_head is not None and repo.contains(remote_head) else set()
        count, records = repo.dulwich_repo.object_store.generate_pack_data(
            have,
            {head},
            shallow=read_shallow(repo.path),
            progress=_progress_text(progress),
            ofs_delta=True,
        )
        records = list(records)  # read now, while no packing can remove what they come from

    def update_refs(refs: dict[bytes, bytes]) -> dict[bytes, bytes]:
        current = refs.get(BRANCH)
        if current not in (None, ZERO) and current != remote_head:
            raise CheckpointError(
                f'the remote {remote.name} moved while pushing (now {_short(current)}); '
                'pull and push again'
            )
        new = dict(refs)
        new[BRANCH] = head
        return new

    def generate(have_ids, want_ids, *, ofs_delta=False, progress=None):
        return count, iter(records)

    try:
        result = client.send_pack(
            path.encode(), update_refs, generate, progress=_progress_bytes(progress)
        )
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001
        raise _transport_error(error, remote, 'push to') from error
    status = (getattr(result, 'ref_status', None) or {}).get(BRANCH)
    if status:
        raise CheckpointError(
            f'the remote {remote.name} refused the push: {_scrub(str(status), remote.url)}'
        )
    return TransferResult(remote.name, remote.display_url, _short(remote_head), _short(head), False)


def _head_to_push(repo: ShadowRepo) -> bytes:
    head = repo.head()
    if head is None:
        raise CheckpointError('nothing to push: this desk has no checkpoints yet')
    return head


def _check_push(
    repo: ShadowRepo, remote: Remote, head: bytes, remote_head: bytes | None, local: bool
) -> bool:
    """Refuses a push that is not a fast-forward or would leave the remote unreadable.

    Returns whether the push goes over a gap: the remote is at a checkpoint this desk pushed
    (or pulled) once and pruned since, with others after it that were never pushed.
    """
    from .storage import read_shallow

    if remote_head is None or remote_head == head:
        if remote_head is None and read_shallow(repo.path) and not local:
            raise CheckpointError(
                f"this desk's history was pruned, and the remote {remote.name} "
                f'({remote.display_url}) is empty: it would receive checkpoints whose parents '
                'it lacks, which git cannot read. Push to a path or file:// remote (it is then '
                'marked shallow like this desk), or push before pruning'
            )
        return False
    if remote_head in set(_ancestors(repo, head)) or remote_head in _shallow_parents(repo):
        return False
    if remote_head in _known_heads(repo):
        # Pruned here since it was pushed, so an ancestor of the branch; but the checkpoints
        # between it and the oldest kept one were pruned too, without being pushed: they
        # exist nowhere, and the remote would hold a history with a gap.
        if local:
            return True  # the push marks the remote shallow, so it stays readable
        raise CheckpointError(
            f'the remote {remote.name} ({remote.display_url}) is at {_short(remote_head)}, a '
            'checkpoint this desk has pruned together with later ones that were never pushed: '
            'the remote would receive checkpoints whose parent it lacks and could no longer '
            'be cloned (a server cannot be told to treat them as a shallow boundary). Nothing '
            'was pushed; the remote keeps its history. Push to a path or file:// remote (it '
            'is marked shallow and keeps its older history), and push before pruning'
        )
    raise CheckpointError(
        f'the remote {remote.name} ({remote.display_url}) is at {_short(remote_head)}, which '
        "is not in this desk's history: the histories diverged (or the remote is older than "
        'the oldest kept checkpoint and was not pushed from here); nothing was pushed. Pull '
        'first, or push to a new remote'
    )


def _copy_objects(
    source_repo, source_path: Path, target_repo, head: bytes, progress: Progress | None = None
) -> int:
    """Copies what ``target`` lacks of the history below ``head`` as one pack with deltas."""
    from . import storage

    source = source_repo.object_store
    target = target_repo.object_store
    missing = storage.reachable(
        source,
        [head],
        storage.read_shallow(source_path),
        enter_commit=lambda sha: sha not in target,
    )
    objects = [(source[sha], path) for sha, path in missing.items() if sha not in target]
    storage.write_pack(target, objects, progress=_progress_text(progress))
    return len(objects)


def _point_head_at_main(target) -> None:
    """A remote whose HEAD names a branch that does not exist (``master``) gets ``main``."""
    value = target.refs.read_ref(b'HEAD') or b''
    if value.startswith(b'ref: ') and value[5:].strip() not in set(target.refs.allkeys()):
        target.refs.set_symbolic_ref(b'HEAD', BRANCH)


def _push_local(
    repo: ShadowRepo, remote: Remote, head: bytes, progress: Progress | None = None
) -> TransferResult:
    """Push to a repository on a path: objects copied directly, ref moved by compare-and-swap."""
    target = _open_local_remote(remote, create=True)
    try:
        remote_head = target.refs.read_ref(BRANCH)
        if remote_head == head:
            return TransferResult(remote.name, remote.display_url, _short(head), _short(head), True)
        over_gap = _check_push(repo, remote, head, remote_head, local=True)
        _remember_head(repo, head)
        _copy_objects(repo.dulwich_repo, repo.path, target, head, progress)
        marked = repair_shallow(target, Path(target.controldir()), head)
        if over_gap and remote_head is not None:
            # The remote's older history stays reachable (and so survives a gc there).
            target.refs.add_if_new(PRUNED_REF_PREFIX + remote_head, remote_head)
        if remote_head is None:
            done = target.refs.add_if_new(BRANCH, head, message=b'push: from trading_checkpoints')
        else:
            done = target.refs.set_if_equals(
                BRANCH, remote_head, head, message=b'push: from trading_checkpoints'
            )
        if not done:
            raise CheckpointError(f'the remote {remote.name} moved while pushing; try again')
        _point_head_at_main(target)
    finally:
        target.close()
    return TransferResult(
        remote.name,
        remote.display_url,
        _short(remote_head),
        _short(head),
        False,
        tuple(_short(s) or '' for s in marked),
    )


# -- pull ----------------------------------------------------------------------------------


def fetch_head(
    repo: ShadowRepo,
    remote: Remote,
    progress: Progress | None = None,
    skip: Collection[bytes] = (),
) -> bytes | None:
    """Fetches the remote's ``main`` (objects only) and returns its sha, or None if empty.

    Nothing is fetched when the remote's head is in ``skip`` (known to be behind).
    """
    client, path = _client_for(remote.url)
    if client is None:
        source = _open_local_remote(remote, create=False)
        try:
            remote_head = source.refs.read_ref(BRANCH)
            if remote_head is not None and remote_head not in skip:
                if not repo.contains(remote_head):
                    source_path = Path(source.controldir())
                    _copy_objects(source, source_path, repo.dulwich_repo, remote_head, progress)
        finally:
            source.close()
        return remote_head
    wanted: list[bytes] = []

    def determine_wants(refs, depth=None):
        sha = refs.get(BRANCH)
        if sha is None or sha == ZERO:
            return []
        wanted.append(sha)
        return [] if sha in skip or repo.contains(sha) else [sha]

    try:
        client.fetch(
            path.encode(),
            _QuietShallow(repo.dulwich_repo, repo.path),
            determine_wants=determine_wants,
            progress=_progress_bytes(progress),
        )
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001
        raise _transport_error(error, remote, 'fetch from') from error
    return wanted[0] if wanted else None


class _QuietShallow:
    """The fetch target, minus announcing our shallow boundaries to the server.

    dulwich's client sends ``shallow`` lines for a pruned repository, which dulwich's server
    rejects unless a ``deepen`` follows. Our boundaries only hide history older than what
    we have, so the server need not know: the walker simply stops at them.
    """

    def __init__(self, repo, path: Path) -> None:
        self._repo = repo
        self._path = path

    def __getattr__(self, name: str):
        return getattr(self._repo, name)

    def get_graph_walker(self, heads=None):
        from dulwich.object_store import ObjectStoreGraphWalker

        from .storage import read_shallow

        shallow = read_shallow(self._path)
        store = self._repo.object_store
        if heads is None:
            heads = [sha for sha in self._repo.refs.as_dict(b'refs/heads').values() if sha in store]

        def parents(sha: bytes) -> list[bytes]:
            return [] if sha in shallow else list(store[sha].parents)

        return ObjectStoreGraphWalker(heads, parents)


def pull(repo: ShadowRepo, remote: Remote, progress: Progress | None = None) -> TransferResult:
    """Fast-forwards ``main`` to the remote's. Runs under the lock. The desk is not touched."""
    head = repo.head()
    behind = _behind(repo) if head is not None else set()
    remote_head = fetch_head(repo, remote, progress, skip=behind)
    if remote_head is None:
        raise CheckpointError(f'the remote {remote.name} ({remote.display_url}) has no checkpoints')
    if remote_head == head or remote_head in behind:
        # Up to date, or behind with checkpoints this desk has since pruned: nothing to bring.
        return TransferResult(remote.name, remote.display_url, _short(head), _short(head), True)
    marked = repair_shallow(repo.dulwich_repo, repo.path, remote_head)
    if head is not None:
        incoming = _walk_to(repo, remote_head, head)
        if not incoming:
            if head is not None and remote_head in set(_ancestors(repo, head)):
                return TransferResult(
                    remote.name, remote.display_url, _short(head), _short(head), True
                )
            raise CheckpointError(
                f'the remote {remote.name} ({remote.display_url}) is at {_short(remote_head)} '
                f'and this desk at {_short(head)}: the histories diverged; nothing was changed '
                '(push to a new remote, or clone the remote onto another desk)'
            )
    repo.update_branch(head, remote_head, f'pull: fast-forward from {remote.name}')
    _remember_head(repo, remote_head)
    return TransferResult(
        remote.name,
        remote.display_url,
        _short(head),
        _short(remote_head),
        False,
        tuple(_short(s) or '' for s in marked),
    )


def _walk_to(repo: ShadowRepo, start: bytes, goal: bytes) -> bool:
    """Whether ``goal`` is a first-parent ancestor of ``start`` (within what we have)."""
    from .storage import read_shallow

    shallow = read_shallow(repo.path)
    sha: bytes | None = start
    while sha is not None:
        if sha == goal:
            return True
        if sha in shallow or not repo.contains(sha):
            return False
        parents = repo.commit_info(sha).parents
        sha = parents[0] if parents else None
    return False


# -- clone ---------------------------------------------------------------------------------


CLONING = 'cloning'  # in the private folder while a clone is unfinished


def clone(
    config: DeskConfig,
    url: str,
    *,
    name: str = 'origin',
    restore: bool = True,
    progress: Progress | None = None,
):  # -> (TransferResult, restored paths or None)
    """Brings a remote's checkpoints into a new repository for a desk.

    The repository must not exist yet (or be empty, or be an unfinished clone, which is
    resumed). When ``restore`` is true and the desk has no tracked files, the newest checkpoint
    is written into it through the restore pipeline, without adding commits.
    """
    repository = Path(config.repository)
    marker = repository / PRIVATE_DIR / CLONING
    if is_initialized(repository) and not marker.exists():
        raise CheckpointError(
            f'the desk already has a checkpoint repository ({repository}); clone onto a new '
            'desk, or add the URL as a remote and pull'
        )
    remote = Remote(name, url.strip())
    check_name(name)
    _client_for(remote.url)
    created = not repository.exists()
    try:
        with engine.locked(config) as session:
            repo = session.repo
            write_atomically(marker, b'')
            remote_head = fetch_head(repo, remote, progress)
            if remote_head is None:
                raise CheckpointError(
                    f'the remote {remote.display_url} has no checkpoints (no branch main)'
                )
            marked = repair_shallow(repo.dulwich_repo, repo.path, remote_head)
            if repo.head() is None:
                repo.update_branch(None, remote_head, f'clone: from {remote.display_url}')
            _remember_head(repo, remote_head)
            if not any(r.name == name for r in list_remotes(repo.path)):
                add_remote(repo.path, name, remote.url)
            written = None
            if restore:
                written = _first_checkout(session)
            marker.unlink()
    except BaseException:
        # Removed unless the desk was being written: then its journal lets a new clone (or
        # any command) finish the checkout.
        if created and not journal.pending(repository):
            import shutil

            shutil.rmtree(repository, ignore_errors=True)
        raise
    result = TransferResult(
        name,
        remote.display_url,
        None,
        _short(remote_head),
        False,
        tuple(_short(s) or '' for s in marked),
    )
    return result, written


def _first_checkout(session: Session) -> tuple[str, ...] | None:
    """Writes the newest checkpoint into a desk with no tracked files; None if it has some."""
    from .restore import Request, run

    head = session.repo.head()
    assert head is not None
    config = session.config
    config.desk.mkdir(parents=True, exist_ok=True)
    result, _ = session.scan()
    if result.files:
        return None
    request = Request(head, head.decode()[:SHORT_ID_LENGTH], record_before=False)
    try:
        outcome = run(session, request)
    except CorruptRepositoryError as error:
        raise CorruptRepositoryError(
            f'{error}; if the desk was created with other tracked paths, clone '
            'with them (`clone --track PATH ...` or tracked_paths=...)'
        ) from error
    return outcome.result.written

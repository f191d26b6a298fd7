"""The MCP server's first exchange, answered before the SDK is imported.

Importing the MCP SDK takes most of a second (its protocol types are pydantic models built at
import, and its server package brings the HTTP transports along), and a client waits for the
answers to ``initialize`` and ``tools/list`` before its model may use a tool. Those answers
depend only on the code and on what the client asks. So the lines the SDK writes for them are
kept, and the next server started for the same client, code and default desk writes those
lines itself; then it imports the SDK and hands it the connection as if the SDK had read it all:

- the SDK is given the client's ``initialize`` request and ``notifications/initialized`` again
  (its answer to that ``initialize``, sent already, is dropped), then every later message;
- nothing is answered before the SDK but those two requests and the other listings
  (``prompts/list``, ``resources/list``, ``resources/templates/list``), each only when the SDK
  has answered the very same request before, in the same order of the handshake: anything else
  (a tool call, a ping, other ``initialize`` parameters, a message that is no plain request)
  hands the connection over first, itself included;
- a kept answer is the SDK's own line, byte for byte, with the request's id put in, and is used
  only by the same installation, for the same default desk and package version: the kept
  answers carry the list of every module file the server that learnt them had imported (this
  package, the SDK, pydantic and the rest) and their fingerprint (``core/installation.py``:
  the interpreter, the import path, and each file's path, size, modification time and inode),
  and a server uses them only when those files still have that fingerprint. The SDK is asked
  again for each listing answered from the kept lines (the connection handed over, its answers
  dropped), and what it answers replaces what was kept if the two differ.

A server with nothing kept for its installation imports the SDK first, as before, and learns the
answers from the exchange. The lines are kept in ``$XDG_CACHE_HOME/trading-checkpoints`` (else
``~/.cache/trading-checkpoints``), used only when it is a real folder of this user that nobody
else may enter (mode ``0700``): what is written there reaches a client as the server's own. They
are written whole or not at all (``core/durability.write_atomically``), and not while a module
file was written too recently for its status to stand for what was imported.

After the handshake, once no request has come for :data:`IDLE` seconds, the SDK is imported
while the client is idle, so the first tool call finds it ready.
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..core import installation
from ..core.durability import write_atomically
from ..errors import CheckpointError

FOLDER = 'trading-checkpoints'
LISTINGS = frozenset({'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'})
IDLE = 0.05
KEPT_CLIENTS = 8
FORMAT = 2
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = b'{"jsonrpc":"2.0","id":'
CHECK_ID = 'trading-checkpoints-check-'

Message = dict[str, Any]


# -- what is kept ----------------------------------------------------------------------------


def cache_folder(create: bool) -> str | None:
    """The user's folder for the kept answers, or None when there is no safe one."""
    base = os.environ.get('XDG_CACHE_HOME')
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser('~'), '.cache')
    folder = os.path.join(base, FOLDER)
    if create:
        try:
            os.makedirs(folder, 0o700, exist_ok=True)
        except OSError:
            return None
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    private = stat.S_IMODE(info.st_mode) & 0o077 == 0 and info.st_uid == os.getuid()
    return folder if stat.S_ISDIR(info.st_mode) and private else None


class Answers:
    """The kept answers of one installation and context: per client (its ``initialize``
    request), request -> the SDK's answer line after its id."""

    def __init__(self, path: str, context: str, clients: dict[str, dict[str, str]]) -> None:
        self.path = path
        self.context = context
        self.clients = clients
        self.files: list[str] | None = None  # what the answers come from, once learnt
        self.lock = threading.Lock()

    @classmethod
    def load(cls, context: str, create: bool = False) -> Answers | None:
        """The answers kept for ``context`` by this installation (empty when none are), or None
        without a folder."""
        folder = cache_folder(create)
        if folder is None:
            return None
        name = installation.digest('\0'.join([installation.interpreter(), *sys.path, context]))
        path = os.path.join(folder, f'mcp-{name}.json')
        clients: dict[str, dict[str, str]] = {}
        try:
            with open(path, encoding='utf-8') as file:
                kept = json.load(file)
            files = [str(item) for item in kept['files']]
            if (
                kept['format'] == FORMAT
                and kept['context'] == context
                and kept['fingerprint'] == installation.fingerprint(files, context)
            ):
                clients = {
                    str(client): {str(k): str(v) for k, v in answers.items()}
                    for client, answers in kept['clients'].items()
                }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            clients = {}
        return cls(path, context, clients)

    def answer(self, client: str, request: str) -> str | None:
        return self.clients.get(client, {}).get(request)

    def keep(self, client: str, request: str, rest: str) -> None:
        """Keeps an answer (the newest client first, at most :data:`KEPT_CLIENTS`)."""
        with self.lock:
            answers = self.clients.pop(client, {})
            answers[request] = rest
            self.clients = dict(list({client: answers, **self.clients}.items())[:KEPT_CLIENTS])
            self._save()

    def forget(self, client: str) -> None:
        """Forgets every answer kept for a client."""
        with self.lock:
            if self.clients.pop(client, None) is not None:
                self._save()

    def _save(self) -> None:
        """Writes the answers with the files they come from: the modules imported by now (the
        SDK answered), unless one was written too recently to be told from a later write."""
        if self.files is None:
            self.files = installation.loaded_files()
        if not installation.settled(self.files):
            return
        kept = {
            'format': FORMAT,
            'context': self.context,
            'files': self.files,
            'fingerprint': installation.fingerprint(self.files, self.context),
            'clients': self.clients,
        }
        folder = cache_folder(create=True)
        if folder is None or os.path.dirname(self.path) != folder:
            return
        # ASCII, escapes included: a path's byte that is no UTF-8 (a lone surrogate) reads back.
        data = json.dumps(kept).encode()
        try:
            write_atomically(self.path, data, durable=False)  # a cache: lost, it is learnt again
        except CheckpointError:
            pass  # nothing kept this time; the next server learns again


# -- messages ------------------------------------------------------------------------------


def parse(line: bytes) -> Message | None:
    """A JSON-RPC message object, or None for anything else (a batch, not JSON)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) and message.get('jsonrpc') == '2.0' else None


def id_token(value: object) -> bytes | None:
    """An id as the SDK writes it, for the ids written the same by any JSON writer: integers
    and printable ASCII strings (None for any other)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    if isinstance(value, str) and not (value.isascii() and value.isprintable()):
        return None
    return json.dumps(value).encode()


def request_key(message: Message) -> str | None:
    """What identifies a request's answer: its method and parameters (None for a message
    that is no request with a plain id)."""
    method = message.get('method')
    if not isinstance(method, str) or id_token(message.get('id')) is None:
        return None
    params = json.dumps(message.get('params'), sort_keys=True, separators=(',', ':'))
    return f'{method} {params}'


def answer_rest(line: bytes, request_id: object) -> str | None:
    """A successful answer line after its id (what is kept), or None for any other line."""
    token = id_token(request_id)
    head = PREFIX + (token or b'') + b',"result":'
    if token is None or not line.startswith(head):
        return None
    try:
        return line[len(PREFIX) + len(token) + 1 :].rstrip(b'\r\n').decode('utf-8')
    except UnicodeDecodeError:
        return None


def answer_line(rest: str, request_id: object) -> bytes:
    return PREFIX + (id_token(request_id) or b'null') + b',' + rest.encode('utf-8') + b'\n'


# -- the handshake before the SDK ------------------------------------------------------------


class Wire:
    """The client's side of stdio: lines read from fd 0 (with what was read beyond them),
    lines written to fd 1."""

    def __init__(self) -> None:
        self.pending = b''
        self.closed = False

    def line(self, timeout: float | None = None) -> bytes | None:
        """The next line (None at the end of input); raises TimeoutError after ``timeout``."""
        while b'\n' not in self.pending:
            if self.closed:
                if not self.pending:
                    return None
                break
            if timeout is not None and not select.select([0], [], [], timeout)[0]:
                raise TimeoutError
            chunk = os.read(0, 65536)
            if chunk:
                self.pending += chunk
            else:
                self.closed = True
        line, newline, self.pending = self.pending.partition(b'\n')
        return line + newline

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]


class Handover:
    """What the SDK is handed: the lines it must read first and the bytes read beyond them,
    the id of the ``initialize`` already answered (the SDK's answer to it is dropped) and the
    listing requests answered from the kept lines."""

    def __init__(
        self,
        replay: list[bytes],
        rest: bytes = b'',
        answered: object = None,
        listed: list[Message] | None = None,
    ) -> None:
        self.replay = replay
        self.rest = rest
        self.answered = answered
        self.listed = listed or []


def handshake(wire: Wire, answers: Answers) -> Handover | None:
    """Answers what it can of the handshake (see the module notes); None when the client
    left before anything needed the SDK."""
    line = wire.line()
    if line is None:
        return None
    message = parse(line)
    client = request_key(message) if message is not None else None
    if message is None or client is None or message['method'] != 'initialize':
        return Handover([line], wire.pending)
    kept = answers.answer(client, client)
    if kept is None:
        return Handover([line], wire.pending)
    wire.write(answer_line(kept, message['id']))
    replay, answered, initialized = [line], message['id'], False
    listed: list[Message] = []
    while True:
        try:
            line = wire.line(IDLE if listed else None)
        except TimeoutError:
            return Handover(replay, wire.pending, answered, listed)
        if line is None:
            return None
        message = parse(line)
        if message is None:
            break
        if not initialized and message.get('method') == 'notifications/initialized':
            if 'id' in message:
                break
            replay.append(line)
            initialized = True
            continue
        key = request_key(message)
        kept = answers.answer(client, key) if key else None
        if not initialized or message.get('method') not in LISTINGS or kept is None:
            break
        wire.write(answer_line(kept, message['id']))
        listed.append(message)
    replay.append(line)
    return Handover(replay, wire.pending, answered, listed)


# -- the connection handed to the SDK --------------------------------------------------------


class Relay:
    """The SDK reads and writes its stdio through two pipes (fds 0 and 1 point at them while it
    runs); two threads carry the client's lines to it and its lines to the client, learning
    the handshake's answers on the way (see the module notes)."""

    def __init__(self, answers: Answers, handover: Handover) -> None:
        self.answers = answers
        self.handover = handover
        self.client = ''
        self.phase = 'start'
        # id as written -> (request key, the answer kept for it, whether the client asked)
        self.expected: dict[bytes, tuple[str, str | None, bool]] = {}
        self.drop = id_token(handover.answered)
        self.end = b'\0end %s\n' % os.urandom(8).hex().encode()

    def run(self, server: Any) -> None:
        """Runs ``server.run()`` (the SDK on stdio) with the pipes in place of fds 0 and 1."""
        sys.stdout.flush()
        wire_in, wire_out = _dup_above(0), _dup_above(1)
        sdk_in, feed = os.pipe()
        drain, sdk_out = os.pipe()
        os.dup2(sdk_in, 0)
        os.dup2(sdk_out, 1)
        os.close(sdk_in)
        reader = threading.Thread(target=self._to_sdk, args=(wire_in, feed), daemon=True)
        writer = threading.Thread(target=self._to_client, args=(drain, wire_out), daemon=True)
        reader.start()
        writer.start()
        try:
            server.run()
        finally:
            sys.stdout.flush()
            _write_all(sdk_out, self.end)  # the SDK may keep a copy of fd 1 open: no end of file
            os.close(sdk_out)
            writer.join(timeout=10)
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
            os.close(wire_in)
            os.close(wire_out)

    # -- the client -> the SDK ---------------------------------------------------------------

    def _to_sdk(self, wire_in: int, feed: int) -> None:
        pending = b''
        chunk = b''.join(self.handover.replay) + self.handover.rest
        try:
            while True:
                pending += chunk
                while self.phase != 'done':
                    line, newline, rest = pending.partition(b'\n')
                    if not newline:
                        break
                    pending = rest
                    _write_all(feed, line + newline + self._look_in(line))
                if self.phase == 'done':
                    _write_all(feed, pending)
                    pending = b''
                chunk = os.read(wire_in, 65536)
                if not chunk:
                    break
            _write_all(feed, pending)
        except OSError:
            pass  # the SDK is gone
        finally:
            os.close(feed)

    def _look_in(self, line: bytes) -> bytes:
        """Follows the handshake in the client's lines, to know which answers to learn; the
        requests to send the SDK after this line (checking the answers given for it)."""
        message = parse(line)
        key = request_key(message) if message is not None else None
        method = message.get('method') if message is not None else None
        token = id_token(message.get('id')) if message is not None else None
        if self.phase == 'start' and key is not None and token and method == 'initialize':
            self.client, self.phase = key, 'initialize'
            if self.drop is None:
                self.expected[token] = (key, None, True)
        elif self.phase == 'initialize' and method == 'notifications/initialized' and not key:
            self.phase = 'ready'
            return self._checks()
        elif self.phase == 'ready' and key is not None and token and method in LISTINGS:
            self.expected[token] = (key, self.answers.answer(self.client, key), True)
        else:
            self.phase = 'done'
        return b''

    def _checks(self) -> bytes:
        """The listing requests answered from the kept lines, asked of the SDK again."""
        out = []
        for number, asked in enumerate(self.handover.listed):
            key = request_key(asked) or ''
            check = {'jsonrpc': '2.0', 'id': f'{CHECK_ID}{number}', 'method': asked['method']}
            if 'params' in asked:
                check['params'] = asked['params']
            token = id_token(check['id']) or b''
            self.expected[token] = (key, self.answers.answer(self.client, key), False)
            out.append(json.dumps(check).encode() + b'\n')
        return b''.join(out)

    # -- the SDK -> the client ---------------------------------------------------------------

    def _to_client(self, drain: int, wire_out: int) -> None:
        pending = b''
        try:
            while chunk := os.read(drain, 65536):
                pending += chunk
                *lines, pending = pending.split(b'\n')
                out: list[bytes] = []
                for line in lines:
                    if line + b'\n' == self.end:
                        _write_all(wire_out, b''.join(out))
                        return
                    if self._look_out(line):
                        out.append(line + b'\n')
                try:
                    _write_all(wire_out, b''.join(out))
                except OSError:
                    pass  # the client is gone: its end of input stops the SDK
        except OSError:
            pass
        finally:
            os.close(drain)

    def _look_out(self, line: bytes) -> bool:
        """Learns the answers expected; whether the line goes on to the client."""
        if self.drop is not None and line.startswith(PREFIX + self.drop + b','):
            self.drop = None
            self._learn(self.client, self.answers.answer(self.client, self.client), line)
            return False
        if not self.expected or not line.startswith(PREFIX):
            return True
        message = parse(line)
        token = id_token(message.get('id')) if message is not None else None
        found = self.expected.pop(token, None) if token is not None else None
        if found is None or message is None or 'method' in message:
            return True
        key, kept, asked = found
        self._learn(key, kept, line)
        return asked

    def _learn(self, key: str, kept: str | None, line: bytes) -> None:
        """Keeps the SDK's answer to ``key`` when it differs from ``kept``; forgets the kept
        ones when the SDK did not answer the request with a result."""
        message = parse(line)
        rest = answer_rest(line, message.get('id')) if message is not None else None
        if rest is None:
            if kept is not None:
                self.answers.forget(self.client)
        elif rest != kept:
            self.answers.keep(self.client, key, rest)


def _dup_above(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def serve(build: Callable[[], Any], context: str) -> None:
    """Serves the MCP server ``build()`` makes over stdio, answering the handshake first when
    its answers are kept (see the module notes)."""
    answers = None
    if os.name == 'posix':
        answers = Answers.load(f'{PACKAGE}\0{context}', create=True)
    if answers is None:
        build().run()
        return
    if not answers.clients:
        server = build()  # nothing kept: the SDK answers, as before, and its answers are learnt
        Relay(answers, Handover([])).run(server)
        return
    handover = handshake(Wire(), answers)
    if handover is None:
        return
    Relay(answers, handover).run(build())

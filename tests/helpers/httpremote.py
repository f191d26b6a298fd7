"""A smart-HTTP git server on 127.0.0.1 behind basic auth (dulwich's WSGI server, threaded).

``served`` makes a bare repository and serves it for the duration of a ``with`` block; a
``Gate`` holds receive-pack requests, to catch a push in the middle of its upload.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

USER, PASSWORD = 'desk-bot', 's3cret-pa55'


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass


class _ThreadedServer(WSGIServer):
    daemon_threads = True


def _with_basic_auth(app, user: str, password: str):
    expected = 'Basic ' + base64.b64encode(f'{user}:{password}'.encode()).decode()

    def guarded(environ, start_response):
        if environ.get('HTTP_AUTHORIZATION') != expected:
            start_response(
                '401 Unauthorized',
                [('WWW-Authenticate', 'Basic realm="checkpoints"'), ('Content-Type', 'text/plain')],
            )
            return [b'authentication required\n']
        return app(environ, start_response)

    return guarded


class Gate:
    """Holds receive-pack requests until opened, to catch a push in the middle of its upload."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()
        self.opened.set()

    def wrap(self, app):
        def gated(environ, start_response):
            if environ.get('PATH_INFO', '').endswith('/git-receive-pack'):
                self.reached.set()
                self.opened.wait(30)
            return app(environ, start_response)

        return gated


@contextlib.contextmanager
def served(
    bare: Path, user: str = USER, password: str = PASSWORD, gate: Gate | None = None
) -> Iterator[str]:
    """A new bare repository at ``bare`` (its HEAD on main) served over smart HTTP behind
    basic auth; yields its address without scheme or credentials, ``127.0.0.1:PORT/desk.git``."""
    from dulwich.repo import Repo
    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    bare.mkdir()
    repo = Repo.init_bare(str(bare))
    repo.refs.set_symbolic_ref(b'HEAD', b'refs/heads/main')
    app = make_wsgi_chain(DictBackend({'/desk.git': repo}))
    if gate is not None:
        app = gate.wrap(app)
    server = make_server(
        '127.0.0.1',
        0,
        _with_basic_auth(app, user, password),
        server_class=_ThreadedServer,
        handler_class=_QuietHandler,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f'127.0.0.1:{server.server_port}/desk.git'
    finally:
        server.shutdown()
        server.server_close()
        repo.close()


def with_credentials(url: str, user: str = USER, password: str = PASSWORD) -> str:
    return url.replace('http://', f'http://{user}:{password}@')

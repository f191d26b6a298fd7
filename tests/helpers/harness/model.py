"""A scripted stand-in for a model's API on 127.0.0.1: what a harness is told to do, and what it
sent.

A script is a list of model replies, played in order, one per request of the agent's
conversation (a request that offers tools): a reply is a list of :class:`Call` (tool calls made
together, in one reply) or a string (final text, which ends the agent's turn). Once the script is
played, every further request gets the text ``done``. Requests outside the conversation (a
title, a check of who speaks next, a token count) get a short answer of their own and take no
reply from the script.

Every request is recorded (:class:`Request`: path and JSON body), so a test can assert what the
model was sent next: the tool results, a hook's denial reason, the prompt.

``AnthropicModel`` speaks the streaming Messages API (``POST /v1/messages``, server-sent
events) as Claude Code expects; ``GeminiModel`` the Gemini API's ``streamGenerateContent``
(``?alt=sse``) and ``generateContent`` as Gemini CLI expects. Both answer in a thread of the
test process; use them as context managers.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """A tool call the model makes: the tool's name and its input."""

    tool: str
    input: dict[str, Any]


Reply = Sequence[Call] | str
DONE = 'done'


@dataclass(frozen=True)
class Request:
    """One request a harness made: its path (with the query), its JSON body, when it came."""

    path: str
    body: Any
    time: float = field(default_factory=time.time)

    @property
    def in_conversation(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get('tools'))


@dataclass
class _Script:
    replies: list[Reply]
    played: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> Reply:
        with self.lock:
            if self.played < len(self.replies):
                self.played += 1
                return self.replies[self.played - 1]
            return DONE


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: FakeModel


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = 'HTTP/1.1'

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.server.model.record(self.path, None)
        self.send_json(*self.server.model.answer_get(self.path))

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib name
        self.send_response(200)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors='replace')
        request = self.server.model.record(self.path, body)
        model = self.server.model
        if model.streams(request):
            events = model.stream(request)
            self.send_response(200)
            self.send_header('Content-Type', 'text/event-stream')
            self.send_header('Cache-Control', 'no-cache')
            self.send_header('Connection', 'close')
            self.end_headers()
            for event in events:
                self.wfile.write(event.encode())
                self.wfile.flush()
            self.close_connection = True
        else:
            self.send_json(*model.answer(request))

    def send_json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class FakeModel:
    """The common part: the loopback server, the script, the record of requests."""

    def __init__(self, script: Sequence[Reply] = ()) -> None:
        self._script = _Script(list(script))
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._prefix = secrets.token_hex(6)
        self._server = _Server(('127.0.0.1', 0), _Handler)
        self._server.model = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.on_request: Callable[[Request], None] | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f'http://{host}:{port}'

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def record(self, path: str, body: Any) -> Request:
        request = Request(path, body)
        with self._lock:
            self.requests.append(request)
        if self.on_request is not None:
            self.on_request(request)
        return request

    def next_reply(self) -> Reply:
        return self._script.next()

    def new_id(self) -> str:
        """An id no other model server gives (as the real APIs' are: two sessions never share
        a ``tool_use_id``)."""
        return f'{self._prefix}{next(self._ids):04d}'

    @property
    def played(self) -> int:
        """How many replies of the script were served."""
        return self._script.played

    def conversation(self) -> list[Request]:
        """The requests of the agent's conversation, in order."""
        with self._lock:
            return [request for request in self.requests if request.in_conversation]

    # What each API overrides.
    def streams(self, request: Request) -> bool:
        raise NotImplementedError

    def stream(self, request: Request) -> list[str]:
        raise NotImplementedError

    def answer(self, request: Request) -> tuple[int, Any]:
        return 404, {'error': {'message': f'no such endpoint: {request.path}'}}

    def answer_get(self, path: str) -> tuple[int, Any]:
        return 404, {'error': {'message': f'no such endpoint: {path}'}}


def _sse(event: str | None, data: Any) -> str:
    head = f'event: {event}\n' if event else ''
    return f'{head}data: {json.dumps(data)}\n\n'


class AnthropicModel(FakeModel):
    """The Messages API: ``POST /v1/messages`` (streamed or not), ``count_tokens``."""

    def streams(self, request: Request) -> bool:
        return (
            request.path.split('?')[0] == '/v1/messages'
            and isinstance(request.body, dict)
            and bool(request.body.get('stream'))
        )

    def _reply_for(self, request: Request) -> Reply:
        return self.next_reply() if request.in_conversation else 'ok'

    def stream(self, request: Request) -> list[str]:
        reply = self._reply_for(request)
        model = request.body.get('model', 'claude-fake')
        message = {
            'id': f'msg_{self.new_id()}',
            'type': 'message',
            'role': 'assistant',
            'model': model,
            'content': [],
            'stop_reason': None,
            'stop_sequence': None,
            'usage': {'input_tokens': 10, 'output_tokens': 1},
        }
        events = [_sse('message_start', {'type': 'message_start', 'message': message})]
        for index, block in enumerate(self._blocks(reply)):
            if block['type'] == 'text':
                events.append(
                    _sse(
                        'content_block_start',
                        {
                            'type': 'content_block_start',
                            'index': index,
                            'content_block': {'type': 'text', 'text': ''},
                        },
                    )
                )
                delta = {'type': 'text_delta', 'text': block['text']}
            else:
                start = {**block, 'input': {}}
                events.append(
                    _sse(
                        'content_block_start',
                        {'type': 'content_block_start', 'index': index, 'content_block': start},
                    )
                )
                delta = {'type': 'input_json_delta', 'partial_json': json.dumps(block['input'])}
            events.append(
                _sse(
                    'content_block_delta',
                    {'type': 'content_block_delta', 'index': index, 'delta': delta},
                )
            )
            events.append(
                _sse('content_block_stop', {'type': 'content_block_stop', 'index': index})
            )
        stop = 'end_turn' if isinstance(reply, str) else 'tool_use'
        events.append(
            _sse(
                'message_delta',
                {
                    'type': 'message_delta',
                    'delta': {'stop_reason': stop, 'stop_sequence': None},
                    'usage': {'output_tokens': 5},
                },
            )
        )
        events.append(_sse('message_stop', {'type': 'message_stop'}))
        return events

    def _blocks(self, reply: Reply) -> list[dict[str, Any]]:
        if isinstance(reply, str):
            return [{'type': 'text', 'text': reply}]
        return [
            {
                'type': 'tool_use',
                'id': f'toolu_{self.new_id()}',
                'name': call.tool,
                'input': call.input,
            }
            for call in reply
        ]

    def answer(self, request: Request) -> tuple[int, Any]:
        path = request.path.split('?')[0]
        if path == '/v1/messages/count_tokens':
            return 200, {'input_tokens': 100}
        if path == '/v1/messages':
            reply = self._reply_for(request)
            stop = 'end_turn' if isinstance(reply, str) else 'tool_use'
            return 200, {
                'id': f'msg_{self.new_id()}',
                'type': 'message',
                'role': 'assistant',
                'model': request.body.get('model', 'claude-fake'),
                'content': self._blocks(reply),
                'stop_reason': stop,
                'stop_sequence': None,
                'usage': {'input_tokens': 10, 'output_tokens': 5},
            }
        return super().answer(request)

    @staticmethod
    def tool_results(request: Request) -> list[dict[str, Any]]:
        """Every ``tool_result`` block of a request's conversation, in order."""
        return [
            block
            for message in request.body.get('messages') or []
            if isinstance(message.get('content'), list)
            for block in message['content']
            if block.get('type') == 'tool_result'
        ]


class GeminiModel(FakeModel):
    """The Gemini API: ``streamGenerateContent?alt=sse``, ``generateContent``, ``countTokens``
    and the model listing."""

    def streams(self, request: Request) -> bool:
        return ':streamGenerateContent' in request.path

    def _candidate(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, str):
            parts: list[dict[str, Any]] = [{'text': reply}]
        else:
            parts = [
                {'functionCall': {'name': call.tool, 'args': call.input, 'id': self.new_id()}}
                for call in reply
            ]
        return {
            'candidates': [
                {'content': {'role': 'model', 'parts': parts}, 'finishReason': 'STOP', 'index': 0}
            ],
            'usageMetadata': {
                'promptTokenCount': 10,
                'candidatesTokenCount': 5,
                'totalTokenCount': 15,
            },
            'modelVersion': 'gemini-2.5-flash',
        }

    def stream(self, request: Request) -> list[str]:
        reply = self.next_reply() if request.in_conversation else 'ok'
        return [_sse(None, self._candidate(reply))]

    def answer(self, request: Request) -> tuple[int, Any]:
        if ':countTokens' in request.path:
            return 200, {'totalTokens': 100}
        if ':generateContent' in request.path:
            return 200, self._candidate(self._side_answer(request))
        return super().answer(request)

    @staticmethod
    def _side_answer(request: Request) -> str:
        """A side question's answer: JSON when a schema is asked for (the check of who speaks
        next: the user, so the turn ends), else a word."""
        config = (
            request.body.get('generationConfig') or {} if isinstance(request.body, dict) else {}
        )
        if config.get('responseMimeType') == 'application/json':
            return json.dumps({'reasoning': 'the turn is over', 'next_speaker': 'user'})
        return 'ok'

    def answer_get(self, path: str) -> tuple[int, Any]:
        if path.split('?')[0].rstrip('/').endswith('/models'):
            return 200, {
                'models': [
                    {
                        'name': 'models/gemini-2.5-flash',
                        'supportedGenerationMethods': ['generateContent', 'countTokens'],
                    }
                ]
            }
        return super().answer_get(path)

    @staticmethod
    def tool_results(request: Request) -> list[dict[str, Any]]:
        """Every ``functionResponse`` part of a request's conversation, in order."""
        return [
            part['functionResponse']
            for content in request.body.get('contents') or []
            for part in content.get('parts') or []
            if 'functionResponse' in part
        ]

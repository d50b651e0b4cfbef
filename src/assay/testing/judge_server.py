"""A scripted stand-in for the OpenAI, Gemini and Anthropic chat APIs, over real HTTP.

`JudgeServer(script)` listens on 127.0.0.1 (a free port) in background threads and
answers three dialects, routed by the end of the request path so that any base URL
form the SDKs build works:

- OpenAI chat completions: ``POST .../chat/completions`` (``/v1`` optional)
- Gemini generateContent: ``POST .../models/{model}:generateContent``
- Anthropic messages: ``POST .../messages``

the batch interfaces of the three (OpenAI's ``/files`` and ``/batches``, Anthropic's
Message Batches, Gemini's batch mode; `assay.testing.standin_batches`, counted in
`JudgeServer.batch_submissions`, held with `hold_batches`), and, for
`embedding_similarity`, OpenAI embeddings (``POST .../embeddings``) with
deterministic vectors (`assay.testing.standin_embeddings`), logged in
`JudgeServer.embedding_requests`.

Each well-formed request is normalised into a `StandinRequest` (messages as
role/content pairs, the requested JSON schema, temperature, max tokens), logged, and
answered with the `StandinReply` the script gives: text and/or tool calls with token
usage in the dialect's own reply shape, or an error status in the dialect's error shape
(with ``Retry-After`` when asked), or a raw (garbage) body, optionally after a delay.
Tool declarations, earlier tool calls and tool results a client sends are in
`StandinRequest.tools`, `.tool_calls` and `.tool_results`, whatever the dialect, so a
test can check what an agent sent back after running a tool.

The script is a callable ``(StandinRequest) -> StandinReply | str``, a list of replies
consumed in order, or a single reply given to every request. Scripts are called one at
a time under the server's lock, so they may keep state; simulate latency with
`StandinReply.delay`, which is waited out concurrently, not by sleeping in the script.
Anything that went wrong on the server side (a script raising, a list script running
out, a malformed request) answers 500/400 and is kept in `JudgeServer.errors`.

Connections are kept alive (HTTP/1.1, one thread per connection, Nagle off), so the
server keeps up with the judge benchmarks' concurrent clients (bench/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from assay.testing.judge_dialects import (
    BadRequest,
    Dialect,
    Script,
    ScriptItem,
    StandinReply,
    StandinRequest,
    error_body,
    parse_request,
    reply_body,
    route,
)
from assay.testing.standin_batches import BatchEndpoints
from assay.testing.standin_embeddings import embeddings_reply
from assay.testing.standin_schema import schema_script
from assay.testing.standin_tools import BadScript, StandinToolCall

__all__ = [
    "Dialect",
    "JudgeServer",
    "Script",
    "ScriptItem",
    "StandinReply",
    "StandinRequest",
    "StandinToolCall",
    "load_script",
]


class JudgeServer:
    """The stand-in server; a context manager that starts and stops it.

    >>> with JudgeServer(["yes", StandinReply.rate_limited(0.5)]) as server:
    ...     server.base_url  # doctest: +SKIP
    'http://127.0.0.1:54321'
    """

    def __init__(self, script: Script, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._conn_lock = threading.Lock()
        self._script: Script = script
        self._cursor = 0
        self._requests: list[StandinRequest] = []
        self._embedding_requests: list[dict[str, Any]] = []
        self._errors: list[str] = []
        self._connections: set[socket.socket] = set()
        self._handler_threads: set[threading.Thread] = set()
        self._in_flight = 0
        self._peak_in_flight = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._batches = BatchEndpoints(self._batch_answer, lambda: self.base_url)
        self._batch_requests = 0
        self._batch_log: list[StandinRequest] = []

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> JudgeServer:
        """Bind and serve in a background thread; returns self."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        # The accept loop checks for shutdown once per poll: a short poll keeps stopping
        # (once per test) quick, for a negligible number of idle wake-ups.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.name = f"judge-server:{self.port}"
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, drop open connections (cutting short delayed replies), join."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._conn_lock:
            connections = list(self._connections)
            handlers = list(self._handler_threads)
        for conn in connections:
            # Wakes handler threads blocked reading a kept-alive connection; the socket
            # may already be closed by its client, which is just as good.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        thread.join(timeout)
        for handler in handlers:
            handler.join(timeout)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- what tests look at --------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("JudgeServer is not running: use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """Root URL; works as base_url for all three SDKs (OpenAI's ``/v1`` is optional)."""
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The base URL in the form OpenAI-compatible servers usually publish."""
        return f"{self.base_url}/v1"

    @property
    def requests(self) -> list[StandinRequest]:
        """Well-formed requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[str]:
        """Server-side problems so far: script errors, exhausted scripts, bad requests."""
        with self._lock:
            return list(self._errors)

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered (delayed or held ones included)."""
        with self._lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most requests that were in flight at once."""
        with self._lock:
            return self._peak_in_flight

    @property
    def batch_submissions(self) -> int:
        """Batches created through ``POST .../batches`` so far."""
        return self._batches.submissions

    @property
    def batch_requests(self) -> int:
        """Requests answered inside batches so far (not in `requests`)."""
        with self._lock:
            return self._batch_requests

    @property
    def batch_log(self) -> list[StandinRequest]:
        """The requests answered inside batches so far, as the stand-in understood them."""
        with self._lock:
            return list(self._batch_log)

    @property
    def batch_endpoints(self) -> BatchEndpoints:
        """The batch interfaces' state (e.g. Gemini's `gemini_reversed`)."""
        return self._batches

    def hold_batches(self) -> None:
        """Keep batches ``in_progress`` until `release_batches`."""
        self._batches.released.clear()

    def release_batches(self) -> None:
        """Answer batches when next looked at (the default)."""
        self._batches.released.set()

    def _batch_answer(self, dialect: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """One request of a batch, answered by the script as a live call would be (its
        delay and hold left out: the batch is the wait)."""
        kind: Dialect = "openai"
        if dialect == "anthropic":
            kind = "anthropic"
        elif dialect == "gemini":
            kind = "gemini"
        model = ""
        if kind == "gemini":  # the batch's model, handed along with each of its requests
            body = dict(body)
            model = str(body.pop("model", "")).removeprefix("models/")
        path = {
            "anthropic": "/v1/messages",
            "gemini": f"/v1beta/models/{model}:generateContent",
            "openai": "/v1/chat/completions",
        }[kind]
        try:
            request = parse_request(kind, path, model, body, {})
        except BadRequest as exc:
            with self._lock:
                self._errors.append(f"bad {kind} request in a batch: {exc}")
            return 400, error_body(kind, 400, f"bad request: {exc}")
        with self._lock:
            self._batch_requests += 1
            self._batch_log.append(request)
            reply = self._next_reply(request)
        if reply.status >= 400 or reply.raw_body is not None:
            status = reply.status if reply.status >= 400 else 500
            return status, error_body(kind, status, reply.text or "stand-in error")
        try:
            return 200, reply_body(request, reply)
        except BadScript as exc:
            with self._lock:
                self._errors.append(f"bad scripted reply: {exc}")
            return 500, error_body(kind, 500, f"stand-in script gave a bad reply: {exc}")

    def _batch_route(self, handler: _Handler, method: str, path: str, raw: bytes) -> bool:
        """Answer a Batch API request (`standin_batches`); False for any other path."""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        answer = self._batches.handle(method, path, headers, raw)
        if answer is None:
            return False
        status, payload, ctype, extra = answer
        self._send(handler, status, payload, {"Content-Type": ctype, **extra})
        return True

    def set_script(self, script: Script) -> None:
        """Replace the script (a list script starts from its first reply again)."""
        with self._lock:
            self._script = script
            self._cursor = 0

    # -- serving -------------------------------------------------------------------------

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._conn_lock:
            if alive:
                self._connections.add(conn)
                self._handler_threads.add(threading.current_thread())
                if self._stopping.is_set():
                    # accepted just as stop() took its snapshot: end it here instead
                    with contextlib.suppress(OSError):
                        conn.shutdown(socket.SHUT_RDWR)
            else:
                self._connections.discard(conn)
                self._handler_threads.discard(threading.current_thread())

    def _next_reply(self, request: StandinRequest) -> StandinReply:
        """The script's reply to `request`; called with the lock held."""
        script = self._script
        item: ScriptItem
        if isinstance(script, StandinReply | str):
            item = script
        elif callable(script):
            try:
                item = script(request)
            except Exception as exc:  # a broken script must show up in the test, not hang it
                self._errors.append(f"script raised {type(exc).__name__}: {exc}")
                return StandinReply.server_error(message=f"stand-in script raised: {exc}")
        else:
            if self._cursor >= len(script):
                self._errors.append(f"script exhausted after {len(script)} replies")
                return StandinReply.server_error(message="stand-in script exhausted")
            item = script[self._cursor]
            self._cursor += 1
        if isinstance(item, str):
            return StandinReply(text=item)
        if isinstance(item, StandinReply):
            return item
        self._errors.append(f"script gave {type(item).__name__}, not a StandinReply or str")
        return StandinReply.server_error(message="stand-in script gave a bad reply")

    def _respond(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path
        dialect, path_model = route(path)
        length_header = handler.headers.get("Content-Length") or "0"
        if not length_header.isdigit():
            handler.close_connection = True  # the body's end is unknown: drop the connection
            self._send_json(handler, 411, {"error": {"message": "Content-Length required"}})
            return
        length = int(length_header)
        raw = handler.rfile.read(length) if length > 0 else b""
        if dialect is None and self._batch_route(handler, "POST", path, raw):
            return
        if dialect is None and path.endswith("/embeddings"):
            self._embeddings(handler, raw)
            return
        if dialect is None:
            self._send_json(handler, 404, {"error": {"message": f"no stand-in route {path}"}})
            return
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            request = parse_request(dialect, path, path_model, json.loads(raw), headers)
        except (ValueError, BadRequest) as exc:
            with self._lock:
                self._errors.append(f"bad {dialect} request to {path}: {exc}")
            self._send_json(handler, 400, error_body(dialect, 400, f"bad request: {exc}"))
            return
        with self._lock:
            request = replace(request, index=len(self._requests))
            self._requests.append(request)
            reply = self._next_reply(request)
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            answer = self._wait(reply)
        finally:
            # Counted out before the reply is written, so a client holding its reply
            # never sees its own request still in flight.
            with self._lock:
                self._in_flight -= 1
        if not answer:
            handler.close_connection = True  # stopping: drop the call unanswered
            return
        self._answer(handler, request, reply)

    def _embeddings(self, handler: _Handler, raw: bytes) -> None:
        """OpenAI `/v1/embeddings`: deterministic vectors (see `standin_embeddings`)."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        status, answer = embeddings_reply(body)
        if status == 200:
            with self._lock:
                self._embedding_requests.append(body)
        self._send_json(handler, status, answer)

    @property
    def embedding_requests(self) -> list[dict[str, object]]:
        """The well-formed `/embeddings` request bodies received, in order."""
        with self._lock:
            return list(self._embedding_requests)

    def _wait(self, reply: StandinReply) -> bool:
        """Wait out the reply's delay and hold; False when the server is stopping."""
        if reply.delay > 0 and self._stopping.wait(reply.delay):
            return False
        hold = reply.hold
        if hold is None:
            return not self._stopping.is_set()
        # Poll both events: a held reply must not outlive the server.
        while not hold.wait(0.05):
            if self._stopping.is_set():
                return False
        return not self._stopping.is_set()

    def _answer(self, handler: _Handler, request: StandinRequest, reply: StandinReply) -> None:
        dialect = request.dialect
        extra = dict(reply.headers)
        if reply.retry_after is not None:
            seconds = reply.retry_after
            text = str(int(seconds)) if seconds == int(seconds) else str(seconds)
            extra.setdefault("Retry-After", text)
        if reply.raw_body is not None:
            payload = reply.raw_body.encode() if isinstance(reply.raw_body, str) else reply.raw_body
            self._send(handler, reply.status, payload, extra)
        elif reply.status >= 400:
            message = reply.text or "stand-in error"
            body = error_body(dialect, reply.status, message)
            self._send_json(handler, reply.status, body, extra)
        else:
            try:
                body = reply_body(request, reply)
            except BadScript as exc:
                with self._lock:
                    self._errors.append(f"bad scripted reply: {exc}")
                body = error_body(dialect, 500, f"stand-in script gave a bad reply: {exc}")
                self._send_json(handler, 500, body)
                return
            self._send_json(handler, reply.status, body, extra)

    def _send_json(
        self,
        handler: _Handler,
        status: int,
        body: Mapping[str, object],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._send(handler, status, json.dumps(body).encode(), headers or {})

    @staticmethod
    def _send(handler: _Handler, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        # Status line, headers and body go out in one write: separate small writes cost a
        # wake-up each on the client side, which shows at the judge benchmarks' rates.
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:  # a made-up status a test asked for
            reason = "Unknown"
        lines = [f"HTTP/1.1 {status} {reason}"]
        if not any(name.lower() == "content-type" for name in headers):
            lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {len(payload)}")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head = "\r\n".join(lines) + "\r\n\r\n"
        handler.wfile.write(head.encode("latin-1") + payload)


class _HTTPServer(ThreadingHTTPServer):
    owner: JudgeServer
    # Many clients connect at once at the start of a benchmark; the default backlog (5)
    # would drop SYNs and stall them for a retransmit second.
    request_queue_size = 256
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        threading.current_thread().name = f"judge-server:{self.server.server_address[1]}:conn"
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def handle(self) -> None:
        # A client that timed out or went away mid-reply ends only its own connection.
        try:
            super().handle()
        except ConnectionError:
            self.close_connection = True

    def do_POST(self) -> None:
        self.server.owner._respond(self)

    def do_GET(self) -> None:
        owner = self.server.owner
        if not owner._batch_route(self, "GET", urlsplit(self.path).path, b""):
            owner._send_json(self, 404, {"error": {"message": f"no stand-in route {self.path}"}})

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests and benchmarks read `JudgeServer.requests` instead."""


def load_script(spec: str) -> Script:
    """The script named by ``package.module:attribute`` (importable from the cwd)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"--script {spec!r}: expected MODULE:ATTRIBUTE")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        script: Script = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"--script {spec!r}: {exc}") from None
    return script


def main(argv: Sequence[str] | None = None) -> None:
    """Run a stand-in answering with one fixed reply, or a script's, until Ctrl-C."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--text",
        help="one fixed reply to every request (default: an instance of the JSON schema"
        " the request asks for, so every judged metric can parse it)",
    )
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument(
        "--script",
        metavar="MODULE:ATTR",
        help="a script (a function of the request, or a list of replies) to answer with",
    )
    args = parser.parse_args(argv)
    script: Script
    if args.script:
        script = load_script(args.script)
    elif args.text is not None:
        script = StandinReply(text=args.text, delay=args.delay)
    else:
        script = schema_script('{"is_the_agent_response_valid": "valid"}', args.delay)
    with JudgeServer(script, host=args.host, port=args.port) as server:
        print(f"judge stand-in listening on {server.base_url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print(f"{len(server.requests)} requests served", flush=True)


if __name__ == "__main__":
    main()

"""A loopback HTTP server that plays a broken agent (assay's HTTP agent contract) and a
broken OpenAI-compatible judge, each request choosing its fault by a word it carries.

- `POST /agent` (docs/http-agent.md): the user's text names the fault;
- `POST /v1/chat/completions`: the first fault word found in the prompt names it.

Faults: `ok` (a good answer), `http500`, `hang` (no answer until the server stops),
`garbage` (200 with a body that is not what was asked for), `wrongtype` (valid JSON of
the wrong shape), `drop` (the connection closed half-way through the reply).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("http500", "hang", "garbage", "wrongtype", "drop")


def _fault_in(text: str) -> str:
    for fault in FAULTS:
        if fault in text:
            return fault
    return "ok"


GOOD_AGENT_REPLY = {
    "events": [
        {"type": "tool_call", "id": "c1", "name": "get_weather", "args": {"city": "Paris"}},
        {"type": "tool_response", "id": "c1", "name": "get_weather", "response": {"sky": "sun"}},
        {"type": "message", "author": "agent", "text": "Sunny."},
    ],
    "final_response": "Sunny.",
}


def _judge_reply(content: str) -> dict[str, Any]:
    return {
        "id": "fault-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fault",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FaultServer:
    """Serves on 127.0.0.1 in a thread; `calls` counts (path, fault) of each request."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.stopping = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/chat/completions"):
                    text = json.dumps(body.get("messages", []))
                    kind = "judge"
                else:
                    text = str((body.get("user_input") or {}).get("text", ""))
                    kind = "agent"
                fault = _fault_in(text)
                owner.calls[(kind, fault)] += 1
                owner.answer(self, kind, fault)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, handler: BaseHTTPRequestHandler, kind: str, fault: str) -> None:
        if fault == "hang":
            self.stopping.wait(120)
            return
        if fault == "drop":
            # Headers promise a body that never comes: the connection dies mid-reply.
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", "400")
            handler.end_headers()
            handler.wfile.write(b'{"events": [')
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.close()
            return
        if fault == "http500":
            self._send(handler, 500, b'{"error": "the model crashed"}')
            return
        if kind == "agent":
            reply: Any = {
                "ok": GOOD_AGENT_REPLY,
                "garbage": None,
                "wrongtype": {"events": "none", "final_response": 42},
            }[fault]
            data = b"<html>oops" if reply is None else json.dumps(reply).encode()
        else:
            content = {
                "ok": '{"explanation": "It matches.", "score": 4}',
                "garbage": "I would rather not rate this, sorry.",
                "wrongtype": '{"explanation": "x", "score": "very good"}',
            }[fault]
            data = json.dumps(_judge_reply(content)).encode()
        self._send(handler, 200, data)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

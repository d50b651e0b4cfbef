"""The OpenAI Batch API of the judge stand-in: ``/files`` and ``/batches``.

`BatchEndpoints` answers, under any base URL (``/v1`` optional):

- ``POST .../files`` (multipart, ``purpose=batch``): keeps the uploaded JSONL;
- ``POST .../batches``: a batch of an uploaded file's chat completion requests
  (counted in `submissions`);
- ``GET .../batches/{id}``: the batch, ``in_progress`` while held, else ``completed``
  with an output file (the requests answered 200) and an errors file (the others);
- ``GET .../files/{id}/content``: a file's bytes;

Anthropic's Message Batches: ``POST .../messages/batches``, ``GET
.../messages/batches/{id}`` and its ``/results`` (JSONL, once ``ended``); and Gemini's
batch mode as the `google-genai` SDK calls it: ``POST .../models/{model}:batchGenerateContent``
(inlined requests, or a file of ``{"key", "request"}`` lines uploaded through
``POST .../upload/v1beta/files``, resumable) and ``GET .../batches/{id}`` (a long-running
operation whose ``metadata.output`` holds the inlined responses, or the name of a
responses file for ``GET .../files/{name}:download``, once ``BATCH_STATE_SUCCEEDED``). Each
Gemini response carries its request's ``metadata`` back; `gemini_echo_metadata` off
leaves it out and `gemini_reversed` answers in reverse order (the API promises neither
order nor, in some versions, the metadata).

Each line of a batch is answered by the server's script exactly as a live chat
completion would be (the `answer` callback), when the batch is first looked at after
`hold` was released. Malformed uploads and unknown ids answer 400/404 in OpenAI's error
shape.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.testing.judge_dialects import error_body

#: (status, body) of one request in a dialect ("openai", "anthropic"), as the live
#: endpoint would answer it
Answer = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]
#: what an endpoint answers: status, body bytes, content type, further headers
Response = tuple[int, bytes, str, Mapping[str, str]]
#: the type URL prefix of the Gemini API's messages
_GEMINI_TYPES = "type.googleapis.com/google.ai.generativelanguage.v1beta"
#: how the stand-in's Gemini batch ids begin (apart from its OpenAI batches)
_GEMINI_BATCH = "gemini-batch-"
_GEMINI_FILE = "gemini-file-"
_GEMINI_UPLOAD = "gemini-upload-"


@dataclass
class StandinBatch:
    id: str
    input_file_id: str
    created_at: int
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "request_counts": self.counts or {"total": 0, "completed": 0, "failed": 0},
        }


class BatchEndpoints:
    """The stand-in's batch state; `handle` answers a request or returns None."""

    def __init__(self, answer: Answer, base_url: Callable[[], str]) -> None:
        self._answer = answer
        self._base_url = base_url
        self._message_batches: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, StandinBatch] = {}
        #: while set, batches are answered; cleared, they stay ``in_progress``
        self.released = threading.Event()
        self.released.set()
        self._gemini_batches: dict[str, dict[str, Any]] = {}
        self._gemini_uploads: dict[str, bytearray] = {}
        self._gemini_files: dict[str, bytes] = {}
        self._gemini_counter = 0  # numbers upload sessions and files
        self.submissions = 0
        self.errors: list[str] = []
        #: Gemini: echo each request's metadata in its response (the key assay matches by)
        self.gemini_echo_metadata = True
        #: Gemini: answer a batch's requests in reverse order
        self.gemini_reversed = False
        #: Gemini: batches made from an uploaded file (not inlined requests)
        self.gemini_file_batches = 0
        #: Gemini: when set, released batches end ``BATCH_STATE_FAILED`` with this message
        self.gemini_fail_batches: str | None = None

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes
    ) -> Response | None:
        parts = [p for p in path.split("/") if p]
        gemini = self._gemini(method, parts, headers, raw)
        if gemini is not None:
            return gemini
        if "batches" in parts and parts[parts.index("batches") - 1] == "messages":
            return self._anthropic(method, parts[parts.index("batches") + 1 :], raw)
        if "files" in parts:
            tail = parts[parts.index("files") + 1 :]
            if method == "POST" and not tail:
                return self._upload(headers, raw)
            if method == "GET" and len(tail) == 2 and tail[1] == "content":
                return self._content(tail[0])
        if "batches" in parts:
            tail = parts[parts.index("batches") + 1 :]
            if method == "POST" and not tail:
                return self._create(raw)
            if method == "GET" and len(tail) == 1:
                return self._retrieve(tail[0])
        return None

    def _upload(self, headers: Mapping[str, str], raw: bytes) -> Response:
        ctype = headers.get("content-type", "")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode("latin-1") + raw
        )
        content: bytes | None = None
        purpose = None
        if message.is_multipart():
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                if name == "file" and isinstance(payload, bytes):
                    content = payload
                elif name == "purpose" and isinstance(payload, bytes):
                    purpose = payload.decode()
        if content is None or purpose != "batch":
            return _error(400, "expected a multipart upload with a file and purpose=batch")
        with self._lock:
            file_id = f"file-{len(self._files) + 1}"
            self._files[file_id] = content
        return _json(200, _file_body(file_id, content, "batch"))

    def _content(self, file_id: str) -> Response:
        with self._lock:
            content = self._files.get(file_id)
        if content is None:
            return _error(404, f"no file {file_id}")
        return 200, content, "application/octet-stream", {}

    def _create(self, raw: bytes) -> Response:
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(400, "the batch request is not JSON")
        file_id = body.get("input_file_id") if isinstance(body, dict) else None
        with self._lock:
            if file_id not in self._files:
                return _error(400, f"no input file {file_id!r}")
            self.submissions += 1
            batch = StandinBatch(f"batch_{self.submissions}", str(file_id), int(time.time()))
            self._batches[batch.id] = batch
        return _json(200, batch.body())

    def _retrieve(self, batch_id: str) -> Response:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return _error(404, f"no batch {batch_id}")
            if batch.status == "in_progress" and self.released.is_set():
                self._run(batch)
            return _json(200, batch.body())

    # -- Anthropic Message Batches --------------------------------------------------------

    def _anthropic(self, method: str, tail: list[str], raw: bytes) -> Response | None:
        if method == "POST" and not tail:
            try:
                body = json.loads(raw)
                requests = body["requests"]
                items = [(str(r["custom_id"]), dict(r["params"])) for r in requests]
            except (ValueError, KeyError, TypeError) as exc:
                return _anthropic_error(400, f"bad message batch: {exc}")
            with self._lock:
                self.submissions += 1
                batch_id = f"msgbatch_{self.submissions}"
                self._message_batches[batch_id] = {"items": items, "results": None}
                return _json(200, self._message_batch_body(batch_id))
        if method == "GET" and tail:
            with self._lock:
                batch = self._message_batches.get(tail[0])
                if batch is None:
                    return _anthropic_error(404, f"no message batch {tail[0]}")
                if batch["results"] is None and self.released.is_set():
                    batch["results"] = self._run_anthropic(batch["items"])
                if len(tail) == 1:
                    return _json(200, self._message_batch_body(tail[0]))
                if len(tail) == 2 and tail[1] == "results" and batch["results"] is not None:
                    return 200, batch["results"], "application/binary", {}
        return None

    def _run_anthropic(self, items: list[tuple[str, dict[str, Any]]]) -> bytes:
        lines = []
        for custom_id, params in items:
            status, reply = self._answer("anthropic", params)
            if status == 200:
                result: dict[str, Any] = {"type": "succeeded", "message": reply}
            else:
                result = {"type": "errored", "error": reply}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}).encode())
        return b"\n".join(lines) + b"\n"

    def _message_batch_body(self, batch_id: str) -> dict[str, Any]:
        batch = self._message_batches[batch_id]
        ended = batch["results"] is not None
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else len(batch["items"]),
                "succeeded": len(batch["items"]) if ended else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": now,
            "expires_at": now,
            "ended_at": now if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": (
                f"{self._base_url()}/v1/messages/batches/{batch_id}/results" if ended else None
            ),
        }

    # -- Gemini batch mode ----------------------------------------------------------------

    def _gemini(
        self, method: str, parts: list[str], headers: Mapping[str, str], raw: bytes
    ) -> Response | None:
        """``POST .../models/{model}:batchGenerateContent``, ``GET .../batches/{id}``,
        the resumable upload of a batch file and the download of a responses file."""
        if "upload" in parts and "files" in parts and method == "POST":
            return self._gemini_upload(parts[parts.index("files") + 1 :], headers, raw)
        if method == "GET" and len(parts) >= 2 and parts[-2] == "files":
            name, _, verb = parts[-1].partition(":")
            if verb == "download" and name.startswith(_GEMINI_FILE):
                with self._lock:
                    content = self._gemini_files.get(name)
                if content is None:
                    return _json(404, error_body("gemini", 404, f"no file files/{name}"))
                return 200, content, "application/octet-stream", {}
        if method == "POST" and len(parts) >= 2 and parts[-2] == "models":
            model, _, verb = parts[-1].partition(":")
            if verb == "batchGenerateContent":
                return self._gemini_create(model, raw)
        if method == "GET" and len(parts) >= 2 and parts[-2] == "batches":
            if not parts[-1].startswith(_GEMINI_BATCH):
                return None  # an OpenAI batch
            with self._lock:
                if parts[-1] in self._gemini_batches:
                    return _json(200, self._gemini_operation(parts[-1]))
            return _json(404, error_body("gemini", 404, f"no batch batches/{parts[-1]}"))
        return None

    def _gemini_upload(self, tail: list[str], headers: Mapping[str, str], raw: bytes) -> Response:
        """A resumable upload: ``start`` answers the session's URL; ``upload`` adds a
        chunk, and ``finalize`` makes the file."""
        command = headers.get("x-goog-upload-command", "")
        with self._lock:
            if not tail and command == "start":
                self._gemini_counter += 1
                session = f"{_GEMINI_UPLOAD}{self._gemini_counter}"
                self._gemini_uploads[session] = bytearray()
                url = f"{self._base_url()}/upload/v1beta/files/{session}"
                return _json(200, {}, {"x-goog-upload-url": url})
            if len(tail) != 1 or tail[0] not in self._gemini_uploads:
                return _json(400, error_body("gemini", 400, f"no upload session {tail}"))
            chunks = self._gemini_uploads[tail[0]]
            chunks += raw
            if "finalize" not in command:
                return _json(200, {}, {"x-goog-upload-status": "active"})
            self._gemini_counter += 1
            name = f"{_GEMINI_FILE}{self._gemini_counter}"
            self._gemini_files[name] = bytes(chunks)
            del self._gemini_uploads[tail[0]]
        file = {
            "name": f"files/{name}",
            "mimeType": "application/jsonl",
            "sizeBytes": str(len(chunks)),
            "state": "ACTIVE",
            "source": "UPLOADED",
        }
        return _json(200, {"file": file}, {"x-goog-upload-status": "final"})

    def _gemini_file_requests(self, file_name: str) -> list[tuple[dict[str, Any], Any]]:
        """(request, key) of each line of an uploaded batch file; KeyError if unknown."""
        with self._lock:
            content = self._gemini_files[file_name.removeprefix("files/")]
        requests: list[tuple[dict[str, Any], Any]] = []
        for line in content.splitlines():
            if line.strip():
                item = json.loads(line)
                requests.append((dict(item["request"]), str(item["key"])))
        return requests

    def _gemini_create(self, model: str, raw: bytes) -> Response:
        try:
            body = json.loads(raw)
            batch = body["batch"]
            source = batch["inputConfig"]
            from_file = "fileName" in source
            if from_file:
                requests = self._gemini_file_requests(str(source["fileName"]))
            else:
                items = source["requests"]["requests"]
                requests = [(dict(item["request"]), item.get("metadata")) for item in items]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return _json(400, error_body("gemini", 400, f"bad batch: {exc!r}"))
        if not requests:
            return _json(400, error_body("gemini", 400, "a batch needs at least one request"))
        with self._lock:
            self.submissions += 1
            self.gemini_file_batches += from_file
            batch_id = f"{_GEMINI_BATCH}{self.submissions}"
            self._gemini_batches[batch_id] = {
                "model": model,
                "display_name": batch.get("displayName", ""),
                "requests": requests,
                "from_file": from_file,
                "responses": None,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            return _json(200, self._gemini_operation(batch_id, advance=False))

    def _gemini_operation(self, batch_id: str, *, advance: bool = True) -> dict[str, Any]:
        """The batch as the API's long-running operation (the lock held); answered when
        first looked at (`advance`) after the stand-in's batches were released."""
        batch = self._gemini_batches[batch_id]
        failed = batch.get("failed")
        if advance and batch["responses"] is None and failed is None and self.released.is_set():
            if self.gemini_fail_batches is not None:
                failed = batch["failed"] = self.gemini_fail_batches
            else:
                answered = self._gemini_run(
                    batch["model"], batch["requests"], from_file=batch["from_file"]
                )
                batch["responses"] = answered
                if batch["from_file"]:
                    name = f"{_GEMINI_FILE}responses-{batch_id}"
                    lines = [json.dumps(item).encode() for item in answered]
                    self._gemini_files[name] = b"\n".join(lines) + b"\n"
                    batch["responses_file"] = f"files/{name}"
        responses = batch["responses"]
        done = responses is not None
        state = "BATCH_STATE_SUCCEEDED" if done else "BATCH_STATE_PENDING"
        metadata: dict[str, Any] = {
            "@type": f"{_GEMINI_TYPES}.GenerateContentBatch",
            "model": f"models/{batch['model']}",
            "displayName": batch["display_name"],
            "createTime": batch["created"],
            "updateTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "batchStats": {"requestCount": str(len(batch["requests"]))},
            "state": "BATCH_STATE_FAILED" if failed is not None else state,
            "name": f"batches/{batch_id}",
        }
        operation: dict[str, Any] = {"name": f"batches/{batch_id}", "metadata": metadata}
        if failed is not None:
            operation["done"] = True
            operation["error"] = {"code": 8, "message": failed}
        if done:
            output: dict[str, Any] = {"inlinedResponses": {"inlinedResponses": responses}}
            if batch["from_file"]:
                output = {"responsesFile": batch["responses_file"]}
            metadata["output"] = output
            operation["done"] = True
            operation["response"] = {
                "@type": f"{_GEMINI_TYPES}.GenerateContentBatchOutput",
                **output,
            }
        return operation

    def _gemini_run(
        self, model: str, requests: list[tuple[dict[str, Any], Any]], *, from_file: bool
    ) -> list[dict[str, Any]]:
        """Each request answered by the script as a live call would be (the lock held):
        an inlined response (with its request's metadata), or a responses file's line
        (with its request's key)."""
        responses: list[dict[str, Any]] = []
        for request, metadata in requests:
            status, reply = self._answer("gemini", {"model": f"models/{model}", **request})
            item: dict[str, Any] = {}
            if status == 200:
                item["response"] = reply
            else:
                error = reply.get("error") if isinstance(reply, dict) else None
                item["error"] = error if isinstance(error, dict) else {"message": str(reply)}
            if from_file:
                item = {"key": metadata, **item}
            elif self.gemini_echo_metadata and metadata is not None:
                item["metadata"] = metadata
            responses.append(item)
        return responses[::-1] if self.gemini_reversed else responses

    def _run(self, batch: StandinBatch) -> None:
        """Answer every line of the batch (the lock held)."""
        output: list[bytes] = []
        failed: list[bytes] = []
        for number, line in enumerate(self._files[batch.input_file_id].splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                custom_id, request = item["custom_id"], item["body"]
            except (ValueError, KeyError, TypeError) as exc:
                self.errors.append(f"batch {batch.id} line {number}: {exc}")
                continue
            status, reply = self._answer("openai", request)
            result = {
                "id": f"{batch.id}-{number}",
                "custom_id": custom_id,
                "response": {"status_code": status, "request_id": str(number), "body": reply},
                "error": None,
            }
            if status != 200:
                result["error"] = {"code": str(status), "message": json.dumps(reply)}
            (output if status == 200 else failed).append(json.dumps(result).encode())
        batch.status = "completed"
        batch.counts = {
            "total": len(output) + len(failed),
            "completed": len(output),
            "failed": len(failed),
        }
        batch.output_file_id = self._store(output)
        batch.error_file_id = self._store(failed) if failed else None

    def _store(self, lines: list[bytes]) -> str:
        file_id = f"file-{len(self._files) + 1}"
        self._files[file_id] = b"\n".join(lines) + b"\n" if lines else b""
        return file_id


def _file_body(file_id: str, content: bytes, purpose: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(content),
        "created_at": int(time.time()),
        "filename": "batch.jsonl",
        "purpose": purpose,
        "status": "processed",
    }


def _json(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> Response:
    return status, json.dumps(body).encode(), "application/json", headers or {}


def _anthropic_error(status: int, message: str) -> Response:
    return _json(
        status, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    )


def _error(status: int, message: str) -> Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return _json(status, body)

"""The HTTP side of the scripted model: a ThreadingHTTPServer speaking chat completions."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .quirks import QUIRKS, quirk_refusal, quirk_turn
from .turns import Turn, next_id, normalise
from .validation import conversation_problem

Script = list[Turn] | Callable[[list[dict[str, Any]]], Turn]


def split(value: str, parts: int) -> list[str]:
    """Cut ``value`` into up to ``parts`` non-empty pieces, as a streaming server would."""
    size = max(1, math.ceil(len(value) / parts))
    return [value[i : i + size] for i in range(0, len(value), size)]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many concurrent sessions connect at once; 5 would drop SYNs

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up on a kept-alive connection is not an error of the model's."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _ScriptExhausted(Exception):
    pass


class ScriptedModelServer:
    """Serves ``/v1/chat/completions`` from a script; see the module docstring.

    ``script`` is a list of turns consumed one per valid request, or a thread-safe callable
    ``messages -> turn`` (a stateless responder for many concurrent sessions). Requests that
    fail validation are answered 400 and do not consume a turn. ``requests`` records every
    request body in order; ``headers`` the matching request headers. ``quirks`` makes it
    behave like a real local server in the ways that matter to a client (see ``quirks.py``).
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        send_usage: bool = True,
        reject_stream_options: bool = False,
        api_key: str | None = None,
        stream_chunk_delay: float = 0.0,
        model_name: str = "scripted",
        quirks: tuple[str, ...] | list[str] | frozenset[str] = (),
    ) -> None:
        unknown = sorted(set(quirks) - set(QUIRKS))
        if unknown:
            raise ValueError(f"unknown quirk(s) {unknown}; known: {sorted(QUIRKS)}")
        self.quirks = frozenset(quirks)
        self.host, self.port = host, port
        self.send_usage = send_usage
        self.reject_stream_options = reject_stream_options
        self.api_key = api_key
        self.stream_chunk_delay = stream_chunk_delay
        self.model_name = model_name
        self.requests: list[Any] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.set_script(script or [])

    # -- script -----------------------------------------------------------------------------
    def set_script(self, script: Script) -> None:
        """Replace the script (and restart it from its first turn)."""
        with self._lock:
            self._script = script if callable(script) else [normalise(t) for t in script]
            self._served = 0

    @property
    def remaining(self) -> int | None:
        """Turns not yet consumed (``None`` for a callable script)."""
        with self._lock:
            if callable(self._script):
                return None
            return len(self._script) - self._served

    def _next_turn(self, messages: list[dict[str, Any]]) -> Turn:
        with self._lock:
            script = self._script
            if not callable(script):
                if self._served >= len(script):
                    raise _ScriptExhausted(
                        f"scripted model: script exhausted after {len(script)} turns "
                        f"(request #{len(self.requests)} has no scripted answer)"
                    )
                self._served += 1
                return script[self._served - 1]
        return normalise(script(messages))

    def _unserve(self) -> None:
        with self._lock:
            if not callable(self._script):
                self._served -= 1

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedModelServer is not started")
        return f"http://{self.host}:{self._httpd.server_address[1]}/v1"

    def start(self) -> ScriptedModelServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = _HTTPServer((self.host, self.port), handler)
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, body: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)


def _estimate_tokens(value: Any) -> int:
    return max(1, math.ceil(len(json.dumps(value)) / 4))


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(
        self, status: int, message: str, *, kind: str = "invalid_request_error", **headers: str
    ) -> None:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        self._send_json(status, body, {k.replace("_", "-"): v for k, v in headers.items()})

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": self.owner.model_name, "object": "model", "created": 0}
            self._send_json(200, {"object": "list", "data": [{**model, "owned_by": "tests"}]})
        else:
            self._send_error(404, f"no route GET {self.path}", kind="not_found_error")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send_error(404, f"no route POST {self.path}", kind="not_found_error")
        key = self.owner.api_key
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            return self._send_error(401, "Incorrect API key provided.", kind="authentication_error")
        problem = conversation_problem(body)
        if problem is None and self.owner.reject_stream_options and "stream_options" in body:
            problem = "Unrecognized request argument supplied: stream_options"
        if problem is not None:
            return self._send_error(400, problem)
        refusal = quirk_refusal(self.owner.quirks, body)
        if refusal is not None:
            return self._send_error(refusal[0], refusal[1], kind=refusal[2])
        try:
            turn = self.owner._next_turn(body["messages"])
        except _ScriptExhausted as exc:
            return self._send_error(500, str(exc), kind="server_error")
        except Exception as exc:  # a broken responder must fail the test loudly
            return self._send_error(500, f"scripted responder raised {exc!r}", kind="server_error")
        # The client may have given up (a timeout test): writing then fails, which is fine.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._answer(body, turn)

    # -- answers ----------------------------------------------------------------------------
    def _answer(self, body: dict[str, Any], turn: Turn) -> None:
        while turn["type"] == "delay":
            if self.owner._stopping.wait(float(turn["seconds"])):
                return
            turn = normalise(turn["turn"])
        if turn["type"] == "error":
            headers = {}
            if turn.get("retry_after") is not None:
                headers["retry_after"] = str(turn["retry_after"])
            kind = "rate_limit_error" if turn["status"] == 429 else "server_error"
            return self._send_error(int(turn["status"]), turn["message"], kind=kind, **headers)
        turn = quirk_turn(self.owner.quirks, body, turn)
        message = dict(turn["message"])
        message.setdefault("content", None)
        usage = self._usage(body, turn, message)
        base = {
            "id": next_id("chatcmpl"),
            "created": int(time.time()),
            "model": body.get("model", self.owner.model_name),
        }
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if body.get("stream"):
            if (
                "no-streamed-tools" in self.owner.quirks
                and body.get("tools")
                and finish == ("tool_calls")
            ):
                self.owner._unserve()  # a real server would choose again: serve it again
                return self._empty_stream()
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            include = include and "no-stream-usage" not in self.owner.quirks
            return self._stream(base, message, finish, usage if include else None, include)
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        payload = {**base, "object": "chat.completion", "choices": [choice]}
        if usage is not None:
            payload["usage"] = usage
        self._send_json(200, payload)

    def _usage(self, body: dict[str, Any], turn: Turn, message: dict[str, Any]) -> Any:
        if "usage" in turn:
            usage = turn["usage"]
        elif not self.owner.send_usage:
            usage = None
        else:
            prompt = _estimate_tokens([body.get("messages"), body.get("tools")])
            usage = {"prompt_tokens": prompt, "completion_tokens": _estimate_tokens(message)}
        if usage is not None:
            usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        return usage

    def _stream(
        self,
        base: dict[str, Any],
        message: dict[str, Any],
        finish: str,
        usage: dict[str, Any] | None,
        include_usage: bool,
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        extra = {"usage": None} if include_usage else {}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            event = {**base, "object": "chat.completion.chunk", "choices": [choice], **extra}
            self._write_event(event)

        chunk({"role": "assistant", "content": ""})
        for piece in split(message.get("content") or "", 4):
            chunk({"content": piece})
        for index, call in enumerate(message.get("tool_calls") or []):
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            chunk({"tool_calls": [first]})
            for piece in split(call["function"]["arguments"], 3):
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        chunk({}, finish)
        if usage is not None:
            self._write_event(
                {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
            )
        self._write_raw(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _empty_stream(self) -> None:
        """What llama-cpp-python sends when its generator fails after the 200 headers: the
        headers, then the end of the body, without a single event; then it drops the
        connection, which a client must not reuse."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.owner._stopping.wait(0.3)  # it closes a moment later, once its task has failed

    def _write_event(self, event: dict[str, Any]) -> None:
        if self.owner.stream_chunk_delay:
            time.sleep(self.owner.stream_chunk_delay)
        self._write_raw(b"data: " + json.dumps(event).encode() + b"\n\n")

    def _write_raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

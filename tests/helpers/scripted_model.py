"""A scripted OpenAI-compatible model on loopback, for the agent-framework adapter tests.

The server (standard library only: ``http.server`` in a daemon thread, port 0) answers

==========================================  ===============================================
route                                       answer
==========================================  ===============================================
``POST /v1/chat/completions``,
``POST /chat/completions``                  the next turn of the script, as a Chat
                                            Completions object, or as SSE chunks when the
                                            body says ``"stream": true`` (tool-call deltas,
                                            ``stream_options.include_usage``, ``[DONE]``)
``GET /v1/models``, ``GET /models``         one model, ``ScriptedModel.model``
==========================================  ===============================================

The script is a list of turns, answered in order, one per completion request:

* ``ToolCall(name, arguments)``: the model calls one tool (``arguments`` a dict, sent as its
  JSON text, or a string sent as is);
* a list of ``ToolCall``: parallel calls in one answer;
* ``Text(text)`` (or a plain ``str``): a final text answer, the turn ends;
* a callable taking the request body (a dict) and returning one of the above, for a turn
  that depends on what the framework sent.

When the script is used up the server answers HTTP 400 with ``script exhausted`` (an agent
stuck in a loop fails at once, naming the cause) unless ``after=`` gives a turn to repeat.

Every request is recorded (``model.requests``: path, parsed body, index of the turn
answered), so a test can assert on what the framework showed the model: the deny reason in
the tool result, the feedback of a stop gate. Usage::

    from tests.helpers.scripted_model import ScriptedModel, Text, ToolCall

    script = [ToolCall("write_file", {"path": "x.txt"}), Text("done")]
    with ScriptedModel(script) as model:
        client = openai.OpenAI(base_url=model.base_url, api_key="test")  # .../v1
        ...  # run the agent
    assert "blocked by policy" in model.tool_results()[0]
    assert model.saw("blocked by policy")        # anywhere in any later request

Open for more wire formats: a route is one entry of ``ROUTES`` (path suffix -> method
name of the handler); an OpenAI Responses route (``/v1/responses``) is one more method
beside ``_chat`` and its renderer beside ``chat_completion`` / ``chat_chunks``.

Standalone, for debugging (a JSON list of turns, ``{"tool": name, "arguments": {...}}`` or
``{"text": ...}``)::

    python tests/helpers/scripted_model.py --port 8765 --script turns.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# --- the script ------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """The model calls ``name`` with ``arguments`` (a dict sent as JSON, or raw text)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # a call id; one is made up when None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Text:
    """A final text answer: the turn ends."""

    text: str


Answer = ToolCall | Text | str | list[ToolCall]
Turn = Answer | Callable[[dict[str, Any]], Answer]


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    body: dict[str, Any]
    turn: int | None  # index of the script turn answered, None for other routes / errors

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return msgs if isinstance(msgs, list) else []

    def tool_results(self) -> list[str]:
        """The text of every ``role: tool`` message in this request, in order."""
        return [text_of(m.get("content")) for m in self.messages if m.get("role") == "tool"]

    def text(self) -> str:
        """Everything the request says, flattened (for ``in`` checks)."""
        return json.dumps(self.body, ensure_ascii=False)


def text_of(value: Any) -> str:
    """Flatten a message content (a string, a list of parts, an object) to text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "content", "output"):
            if key in value:
                return text_of(value[key])
        return json.dumps(value, sort_keys=True)
    return str(value)


# --- rendering: Chat Completions ---------------------------------------------------------

_ids = itertools.count(1)


def _calls(answer: Answer) -> list[ToolCall] | None:
    if isinstance(answer, ToolCall):
        return [answer]
    if isinstance(answer, list):
        return answer
    return None


def _call_id(call: ToolCall) -> str:
    return call.id or f"call_{next(_ids)}"


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def chat_completion(answer: Answer, model: str) -> dict[str, Any]:
    """A whole ``chat.completion`` object for one answer."""
    calls = _calls(answer)
    message: dict[str, Any] = {"role": "assistant"}
    if calls is None:
        message["content"] = answer.text if isinstance(answer, Text) else str(answer)
        finish = "stop"
    else:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": _call_id(c),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json()},
            }
            for c in calls
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(),
    }


def _pieces(text: str, n: int = 3) -> list[str]:
    """``text`` cut into up to ``n`` pieces (so clients really join deltas)."""
    if len(text) < n:
        return [text] if text else []
    step = -(-len(text) // n)
    return [text[i : i + step] for i in range(0, len(text), step)]


def chat_chunks(answer: Answer, model: str, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one streamed answer."""
    cid, created = f"chatcmpl-{next(_ids)}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    calls = _calls(answer)
    if calls is None:
        for piece in _pieces(answer.text if isinstance(answer, Text) else str(answer)):
            yield chunk({"content": piece})
        yield chunk({}, "stop")
    else:
        for i, c in enumerate(calls):
            head = {"index": i, "id": _call_id(c), "type": "function"}
            head["function"] = {"name": c.name, "arguments": ""}
            yield chunk({"tool_calls": [head]})
            for piece in _pieces(c.arguments_json()):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls")
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _usage()
        yield last


# --- the server ----------------------------------------------------------------------------

ROUTES: dict[tuple[str, str], str] = {
    ("POST", "/chat/completions"): "_chat",
    ("GET", "/models"): "_models",
}


class ScriptedModel:
    """The server: a context manager that serves ``turns`` on ``127.0.0.1:<free port>``."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        model: str = "scripted-model",
        after: Turn | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.turns = list(turns)
        self.model = model
        self.after = after
        self.requests: list[Request] = []
        self._next = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # lifecycle
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what OpenAI clients take as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedModel:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="scripted-model", daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # what the tests read
    def completions(self) -> list[Request]:
        """The requests that were answered from the script (in order)."""
        with self._lock:
            return [r for r in self.requests if r.turn is not None]

    def tool_results(self) -> list[str]:
        """Every tool result the model has been shown, in the order it first appeared."""
        seen: list[str] = []
        for req in self.completions():
            for i, text in enumerate(req.tool_results()):
                if i >= len(seen):
                    seen.append(text)
        return seen

    def saw(self, needle: str) -> bool:
        """Whether any request's body contains ``needle``."""
        with self._lock:
            return any(needle in r.text() for r in self.requests)

    @property
    def turns_used(self) -> int:
        with self._lock:
            return self._next

    # answering
    def take(self, body: dict[str, Any]) -> tuple[int | None, Answer | None]:
        """The next turn's answer (index, answer); (None, None) once the script is used up."""
        with self._lock:
            if self._next < len(self.turns):
                index, turn = self._next, self.turns[self._next]
                self._next += 1
            elif self.after is not None:
                index, turn = self._next, self.after
                self._next += 1
            else:
                return None, None
        answer = turn(body) if callable(turn) else turn
        return index, answer

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def _dispatch(self, method: str) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            body: dict[str, Any] = {}
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                raw = self.rfile.read(length)
                try:
                    parsed = json.loads(raw)
                    body = parsed if isinstance(parsed, dict) else {"_body": parsed}
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
            for (m, suffix), name in ROUTES.items():
                if m == method and (path == suffix or path.endswith("/v1" + suffix)):
                    getattr(self, name)(path, body)
                    return
            model.record(Request(method, path, body, None))
            self._json(404, {"error": {"message": f"scripted model: no route {method} {path}"}})

        def _json(self, status: int, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _models(self, path: str, body: dict[str, Any]) -> None:
            model.record(Request("GET", path, body, None))
            entry = {"id": model.model, "object": "model", "created": 0, "owned_by": "tests"}
            self._json(200, {"object": "list", "data": [entry]})

        def _chat(self, path: str, body: dict[str, Any]) -> None:
            index, answer = model.take(body)
            model.record(Request("POST", path, body, index))
            if answer is None:
                msg = f"scripted model: script exhausted after {len(model.turns)} turns"
                self._json(400, {"error": {"message": msg, "type": "invalid_request_error"}})
                return
            name = str(body.get("model") or model.model)
            if not body.get("stream"):
                self._json(200, chat_completion(answer, name))
                return
            opts = body.get("stream_options") or {}
            usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for obj in chat_chunks(answer, name, usage):
                self._chunk(f"data: {json.dumps(obj)}\n\n".encode())
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _turn_from_json(obj: Any) -> Turn:
    if isinstance(obj, list):
        return [ToolCall(o["tool"], o.get("arguments", {})) for o in obj]
    if "tool" in obj:
        return ToolCall(obj["tool"], obj.get("arguments", {}))
    return Text(obj["text"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="serve a scripted OpenAI-compatible model")
    parser.add_argument("--script", type=Path, required=True, help="JSON list of turns")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    turns = [_turn_from_json(o) for o in json.loads(args.script.read_text())]
    model = ScriptedModel(turns)
    if args.port:
        model._server.server_close()
        model._server = ThreadingHTTPServer(("127.0.0.1", args.port), _handler_for(model))
    print(model.base_url, flush=True)
    model._server.serve_forever()


if __name__ == "__main__":
    main()

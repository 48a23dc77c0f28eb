"""A scripted fake model server for the end-to-end host tests (standard library only).

One HTTP server on 127.0.0.1 speaks the four wire formats the hosts use:

=====================================================  ==========================
route                                                  wire format
=====================================================  ==========================
``POST .../v1/messages`` (``?beta=true`` ignored)      Anthropic Messages
``POST .../responses``                                 OpenAI Responses
``POST .../chat/completions``                          OpenAI Chat Completions
``POST .../models/<m>:generateContent``,
``...:streamGenerateContent``, ``...:countTokens``     Gemini
=====================================================  ==========================

The script keys on what a request contains, never on how many calls came before, so side
calls (a model router, a stop-hook continuation) cannot throw it off:

* a request that asks for JSON by schema (Gemini's router and next-speaker checks) gets an
  object filled from the schema;
* a request that offers the host's shell tool and carries ``k`` tool results, with
  ``k < len(script.commands)``, gets a call of that tool running ``script.commands[k]``;
* then a request whose user-side text contains the trigger of the next follow-up (a stop
  hook's feedback, say) gets a call running that follow-up's command;
* anything else gets the plain text ``script.final_text`` and ends the turn.

Every request is appended to a JSONL log (path, wire format, parsed body, what was answered)
so tests can assert on what the host sent the model: the tool result carrying a hook's
reason, the extra turn a stop hook forced. After ``script.max_requests`` requests the server
answers HTTP 400, so a host stuck in a loop ends instead of spinning until the timeout.

Run standalone for debugging::

    python tests/e2e/fake_model.py --port 8765 --log /tmp/fake.jsonl --command 'echo hi > x'
"""

from __future__ import annotations

import argparse
import gzip
import json
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# --- the script ------------------------------------------------------------------------


@dataclass
class Script:
    """What the fake model does.

    Attributes:
        commands: shell commands to ask for, in order; the k-th is asked for when the
            conversation already holds k tool results.
        followups: (trigger, command) pairs; after the commands, the i-th follow-up is
            asked for when a user-side message contains its trigger (a stop hook's
            feedback, say) and the conversation holds ``len(commands) + i`` tool results.
        final_text: the text answer once every command has a result.
        max_requests: answer HTTP 400 after this many requests (a runaway-loop stop).
    """

    commands: list[str] = field(default_factory=list)
    final_text: str = "Done."
    max_requests: int = 40
    followups: list[tuple[str, str]] = field(default_factory=list)


# --- helpers over request bodies ----------------------------------------------------------


def _text_of(value: Any) -> str:
    """Flatten a content value (string, list of parts, object) to text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "output", "content", "llmContent", "error", "response"):
            if key in value:
                return _text_of(value[key])
        return json.dumps(value, sort_keys=True)
    return str(value)


class Wire:
    """One wire format: how to read a request and build an answer."""

    name = ""
    shell_tools: tuple[str, ...] = ()

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        """The names of the tools the request offers."""
        raise NotImplementedError

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        """The text of every tool result in the conversation, in order."""
        raise NotImplementedError

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        """The text of every user-side message (user, system, developer), in order."""
        raise NotImplementedError

    def shell_tool(self, body: dict[str, Any]) -> str | None:
        """The shell tool the request offers, if any."""
        names = self.tool_names(body)
        for cand in self.shell_tools:
            if cand in names:
                return cand
        return None

    def shell_args(self, tool: str, command: str) -> dict[str, Any]:
        """The arguments of a call of ``tool`` that runs ``command``."""
        return {"command": command}


class Anthropic(Wire):
    name = "anthropic"
    shell_tools = ("Bash",)

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]

    def _blocks(self, body: dict[str, Any], roles: tuple[str, ...]) -> Iterator[dict[str, Any]]:
        for msg in body.get("messages") or []:
            if msg.get("role") not in roles:
                continue
            content = msg.get("content")
            if isinstance(content, str):
                yield {"type": "text", "text": content}
            elif isinstance(content, list):
                yield from (b for b in content if isinstance(b, dict))

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        return [
            _text_of(b.get("content"))
            for b in self._blocks(body, ("user",))
            if b.get("type") == "tool_result"
        ]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        return [
            b.get("text", "")
            for b in self._blocks(body, ("user", "system"))
            if b.get("type") == "text"
        ]

    def shell_args(self, tool: str, command: str) -> dict[str, Any]:
        return {"command": command, "description": "Run the scripted command"}


class Responses(Wire):
    name = "openai-responses"
    shell_tools = ("exec_command", "shell_command", "shell")

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        names = []
        for t in body.get("tools") or []:
            if isinstance(t, dict):
                names.append(
                    t.get("name") or (t.get("function") or {}).get("name") or t.get("type", "")
                )
        return names

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return [
            _text_of(i.get("output"))
            for i in items
            if isinstance(i, dict) and str(i.get("type", "")).endswith("call_output")
        ]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        out = []
        items = body.get("input")
        if isinstance(items, str):
            return [items]
        for i in items or []:
            if (
                isinstance(i, dict)
                and i.get("type", "message") == "message"
                and i.get("role")
                in (
                    "user",
                    "developer",
                    "system",
                )
            ):
                out.append(_text_of(i.get("content")))
        return out

    def shell_args(self, tool: str, command: str) -> dict[str, Any]:
        if tool == "exec_command":
            return {"cmd": command}
        if tool == "shell":
            return {"command": ["bash", "-lc", command]}
        return {"command": command}


class ChatCompletions(Wire):
    name = "openai-chat"
    # kimi-cli, Codex's chat wire, Copilot CLI and OpenCode, Gemini-style Qwen Code, Cline CLI
    shell_tools = ("Shell", "shell", "bash", "run_shell_command", "run_commands")

    def shell_args(self, tool: str, command: str) -> dict[str, Any]:
        if tool == "run_commands":  # Cline CLI: {"commands": [string, ...]}
            return {"commands": [command]}
        return {"command": command}

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [
            (t.get("function") or {}).get("name", "")
            for t in body.get("tools") or []
            if isinstance(t, dict)
        ]

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        return [
            _text_of(m.get("content"))
            for m in body.get("messages") or []
            if m.get("role") == "tool"
        ]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        return [
            _text_of(m.get("content"))
            for m in body.get("messages") or []
            if m.get("role") in ("user", "system", "developer")
        ]


class Gemini(Wire):
    name = "gemini"
    shell_tools = ("run_shell_command",)

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [
            d.get("name", "")
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for d in t.get("functionDeclarations") or []
        ]

    def _parts(self, body: dict[str, Any], role: str) -> Iterator[dict[str, Any]]:
        for c in body.get("contents") or []:
            if c.get("role", "user") == role:
                yield from (p for p in c.get("parts") or [] if isinstance(p, dict))

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        return [
            _text_of((p["functionResponse"] or {}).get("response"))
            for p in self._parts(body, "user")
            if "functionResponse" in p
        ]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        return [p["text"] for p in self._parts(body, "user") if isinstance(p.get("text"), str)]

    def shell_args(self, tool: str, command: str) -> dict[str, Any]:
        return {"command": command, "description": "Run the scripted command"}


WIRES: dict[str, Wire] = {
    w.name: w for w in (Anthropic(), Responses(), ChatCompletions(), Gemini())
}


def wire_for_path(path: str) -> Wire | None:
    """The wire format a request path belongs to."""
    route = path.split("?", 1)[0].rstrip("/")
    if route.endswith("/messages") or route.endswith("/messages/count_tokens"):
        return WIRES["anthropic"]
    if route.endswith("/responses"):
        return WIRES["openai-responses"]
    if route.endswith("/chat/completions"):
        return WIRES["openai-chat"]
    if "/models/" in route and ":" in route.rsplit("/", 1)[-1]:
        return WIRES["gemini"]
    return None


def fill_schema(schema: Any, key: str = "") -> Any:
    """A value that satisfies a JSON schema (OpenAPI-style upper-case types accepted)."""
    if not isinstance(schema, dict):
        return "fake"
    if key == "next_speaker":
        return "user"  # Gemini's next-speaker check: let the turn end
    if schema.get("enum"):
        return schema["enum"][0]
    for combo in ("anyOf", "oneOf", "allOf"):
        if schema.get(combo):
            return fill_schema(schema[combo][0], key)
    typ = schema.get("type", "object")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "string")
    typ = str(typ).lower()
    if typ == "object":
        props = schema.get("properties") or {}
        return {k: fill_schema(v, k) for k, v in props.items()}
    if typ == "array":
        return [fill_schema(schema.get("items") or {}, key)]
    if typ in ("integer", "number"):
        return 10
    if typ == "boolean":
        return False
    return "fake"


# --- answers ----------------------------------------------------------------------------


@dataclass
class Decision:
    """What the fake answers one request with."""

    kind: str  # "tool_call", "text", "json", "tokens"
    tool: str | None = None
    args: dict[str, Any] | None = None
    text: str = ""
    call_id: str = ""


def decide(wire: Wire, path: str, body: dict[str, Any], script: Script) -> Decision:
    """Pick the answer from the request's content."""
    if wire.name == "anthropic" and path.split("?", 1)[0].endswith("/count_tokens"):
        return Decision("tokens")
    if wire.name == "gemini" and ":countTokens" in path:
        return Decision("tokens")
    if wire.name == "gemini":
        gen = body.get("generationConfig") or {}
        schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
        if gen.get("responseMimeType") == "application/json" or schema:
            return Decision("json", text=json.dumps(fill_schema(schema or {})))
    tool = wire.shell_tool(body)
    done = len(wire.tool_results(body))
    command = None
    if tool is not None and done < len(script.commands):
        command = script.commands[done]
    elif tool is not None and done - len(script.commands) < len(script.followups):
        trigger, followup = script.followups[done - len(script.commands)]
        if any(trigger in text for text in wire.user_texts(body)):
            command = followup
    if tool is not None and command is not None:
        return Decision(
            "tool_call",
            tool=tool,
            args=wire.shell_args(tool, command),
            call_id=f"call_e2e_{done + 1}",
        )
    return Decision("text", text=script.final_text)


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    chunks = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        chunks.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(chunks).encode()


def answer_anthropic(body: dict[str, Any], d: Decision) -> tuple[str, bytes]:
    model = body.get("model", "fake-model")
    if d.kind == "tokens":
        return "application/json", json.dumps({"input_tokens": 10}).encode()
    if d.kind == "tool_call":
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": "toolu_" + d.call_id,
            "name": d.tool,
            "input": d.args,
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": d.text}
        stop = "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5}
    if not body.get("stream"):
        msg = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return "application/json", json.dumps(msg).encode()
    if d.kind == "tool_call":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(d.args)}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": d.text}
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return "text/event-stream", _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def answer_responses(body: dict[str, Any], d: Decision) -> tuple[str, bytes]:
    if d.kind == "tool_call":
        item: dict[str, Any] = {
            "type": "function_call",
            "id": "fc_" + d.call_id,
            "call_id": d.call_id,
            "name": d.tool,
            "arguments": json.dumps(d.args),
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": "msg_fake",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": d.text, "annotations": []}],
        }
    response = {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model", "fake-model"),
        "status": "completed",
        "output": [item],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }
    if not body.get("stream"):
        return "application/json", json.dumps(response).encode()
    return "text/event-stream", _sse(
        [
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": response}),
        ]
    )


def answer_chat(body: dict[str, Any], d: Decision) -> tuple[str, bytes]:
    model = body.get("model", "fake-model")
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if d.kind == "tool_call":
        call = {
            "id": d.call_id,
            "type": "function",
            "function": {"name": d.tool, "arguments": json.dumps(d.args)},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": d.text}
        finish = "stop"
    base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model}
    if not body.get("stream"):
        out = {
            **base,
            "object": "chat.completion",
            "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        return "application/json", json.dumps(out).encode()
    chunk = {**base, "object": "chat.completion.chunk"}
    first = {"role": "assistant", "content": ""}
    if d.kind == "tool_call":
        second: dict[str, Any] = {"tool_calls": [{"index": 0, **call}]}
    else:
        second = {"content": d.text}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": first, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": second, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return "text/event-stream", _sse(events)


def answer_gemini(path: str, body: dict[str, Any], d: Decision) -> tuple[str, bytes]:
    if d.kind == "tokens":
        return "application/json", json.dumps({"totalTokens": 10}).encode()
    if d.kind == "tool_call":
        part: dict[str, Any] = {"functionCall": {"name": d.tool, "args": d.args}}
    else:
        part = {"text": d.text}
    out = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": path.split("/models/", 1)[-1].split(":", 1)[0],
    }
    if ":streamGenerateContent" in path:
        return "text/event-stream", _sse([(None, out)])
    return "application/json", json.dumps(out).encode()


# --- the server ---------------------------------------------------------------------------


class FakeModelServer:
    """The fake model, served from a thread of the test process.

    Use as a context manager; ``url`` is ``http://127.0.0.1:<port>``.
    """

    def __init__(self, log_path: Path, script: Script | None = None, port: int = 0) -> None:
        self.log_path = Path(log_path)
        self.script = script or Script()
        self._lock = threading.Lock()
        self._count = 0
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL hosts are pointed at."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> FakeModelServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="fake-model", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self, script: Script | None = None) -> None:
        """Empty the log (and optionally change the script) between two host runs."""
        with self._lock:
            self.log_path.write_text("")
            self._count = 0
            if script is not None:
                self.script = script

    def _record(self, record: dict[str, Any]) -> int:
        with self._lock:
            self._count += 1
            record["n"] = self._count
            with open(self.log_path, "a") as fh:
                fh.write(json.dumps(record) + "\n")
            return self._count

    def _next_number(self) -> int:
        with self._lock:
            return self._count + 1

    def requests(self) -> list[dict[str, Any]]:
        """Every logged request, in arrival order."""
        return read_log(self.log_path)


def read_log(path: Path) -> list[dict[str, Any]]:
    """The records of a fake-model JSONL log."""
    text = Path(path).read_text() if Path(path).exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _decode_body(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.lower().strip()
    if encoding in ("gzip", "x-gzip"):
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    return raw


def _make_handler(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # every reply closes its connection (SSE ends at close)
        server_version = "FakeModel/1"

        def log_message(self, format: str, *args: Any) -> None:  # silence stderr
            return

        def _read_body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = bytearray()
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    data += self.rfile.read(size)
                    self.rfile.readline()
                return bytes(data)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _send(self, status: int, ctype: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Connection", "close")
            if not ctype.startswith("text/event-stream"):
                self.send_header("Content-Length", str(len(payload)))
            else:
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

        def _error(self, status: int, message: str, record: dict[str, Any]) -> None:
            record["reply"] = {"kind": "error", "status": status, "message": message}
            server._record(record)
            body = {"error": {"type": "invalid_request_error", "message": message, "code": status}}
            self._send(status, "application/json", json.dumps(body).encode())

        def do_GET(self) -> None:
            self._error(
                404, f"fake model: no GET route {self.path}", {"method": "GET", "path": self.path}
            )

        def do_POST(self) -> None:
            record: dict[str, Any] = {"method": "POST", "path": self.path, "time": time.time()}
            try:
                raw = _decode_body(self._read_body(), self.headers.get("Content-Encoding", ""))
                body = json.loads(raw or b"{}")
            except (ValueError, OSError, zlib.error) as exc:
                self._error(400, f"fake model: unreadable body: {exc}", record)
                return
            record["body"] = body
            record["headers"] = {
                k.lower(): v
                for k, v in self.headers.items()
                if k.lower() in ("user-agent", "anthropic-version", "originator")
            }
            wire = wire_for_path(self.path)
            if wire is None:
                self._error(404, f"fake model: no route {self.path}", record)
                return
            record["api"] = wire.name
            if server._next_number() > server.script.max_requests:
                self._error(400, "fake model: request cap reached", record)
                return
            d = decide(wire, self.path, body, server.script)
            record["reply"] = {"kind": d.kind, "tool": d.tool, "args": d.args, "text": d.text}
            if wire.name == "anthropic":
                ctype, payload = answer_anthropic(body, d)
            elif wire.name == "openai-responses":
                ctype, payload = answer_responses(body, d)
            elif wire.name == "openai-chat":
                ctype, payload = answer_chat(body, d)
            else:
                ctype, payload = answer_gemini(self.path, body, d)
            server._record(record)
            self._send(200, ctype, payload)

    return Handler


def main(argv: list[str] | None = None) -> int:
    """Serve the fake model in the foreground."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, default=Path("fake-model.jsonl"))
    parser.add_argument("--command", action="append", default=[], help="shell command to ask for")
    parser.add_argument("--text", default="Done.")
    args = parser.parse_args(argv)
    srv = FakeModelServer(args.log, Script(commands=args.command, final_text=args.text), args.port)
    print(f"fake model on {srv.url}, logging to {args.log}", flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

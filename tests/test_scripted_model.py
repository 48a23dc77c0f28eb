"""The scripted model server of the adapter tests answers as OpenAI clients expect."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.helpers.scripted_model import ScriptedModel, Text, ToolCall


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_non_streaming_turns_in_order_and_recorded() -> None:
    script = [ToolCall("write_file", {"path": "x"}, id="c1"), Text("bye")]
    with ScriptedModel(script) as model:
        url = model.base_url + "/chat/completions"
        status, raw = _post(url, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert status == 200
        msg = json.loads(raw)["choices"][0]["message"]
        assert msg["tool_calls"][0]["function"] == {
            "name": "write_file",
            "arguments": '{"path": "x"}',
        }
        tool_msg = {"role": "tool", "tool_call_id": "c1", "content": "denied: nope"}
        status, raw = _post(url.replace("/v1", ""), {"model": "m", "messages": [tool_msg]})
        assert json.loads(raw)["choices"][0] == {
            "index": 0,
            "message": {"role": "assistant", "content": "bye"},
            "finish_reason": "stop",
        }
        status, raw = _post(url, {"model": "m", "messages": []})
        assert status == 400 and b"script exhausted after 2 turns" in raw
    assert model.tool_results() == ["denied: nope"]
    assert model.saw("denied: nope") and not model.saw("never said")
    assert [r.turn for r in model.requests] == [0, 1, None]


@pytest.mark.parametrize("usage", [False, True])
def test_streaming_tool_call_deltas_join_to_the_call(usage: bool) -> None:
    script = [ToolCall("run", {"command": "rm -rf /tmp/x"}), "all done"]
    with ScriptedModel(script) as model:
        url = model.base_url + "/chat/completions"
        body: dict[str, Any] = {"model": "m", "messages": [], "stream": True}
        if usage:
            body["stream_options"] = {"include_usage": True}
        chunks = []
        for _ in range(2):
            status, raw = _post(url, body)
            assert status == 200
            lines = [ln[6:] for ln in raw.decode().split("\n\n") if ln.startswith("data: ")]
            assert lines[-1] == "[DONE]"
            chunks.append([json.loads(ln) for ln in lines[:-1]])
    args, name = "", ""
    for c in chunks[0]:
        for choice in c["choices"]:
            for tc in choice["delta"].get("tool_calls", []):
                name += tc.get("function", {}).get("name", "")
                args += tc["function"]["arguments"]
    assert name == "run" and json.loads(args) == {"command": "rm -rf /tmp/x"}
    text = "".join(ch["delta"].get("content") or "" for c in chunks[1] for ch in c["choices"])
    assert text == "all done"
    finishes = [
        ch["finish_reason"] for c in chunks[0] for ch in c["choices"] if ch["finish_reason"]
    ]
    assert finishes == ["tool_calls"]
    assert ("usage" in chunks[1][-1]) is usage


def test_models_route_and_callable_turn() -> None:
    with ScriptedModel([lambda body: Text(f"{len(body['messages'])} messages")]) as model:
        with urllib.request.urlopen(model.base_url + "/models", timeout=30) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "scripted-model"
        _, raw = _post(model.base_url + "/chat/completions", {"messages": [{}, {}]})
    assert json.loads(raw)["choices"][0]["message"]["content"] == "2 messages"

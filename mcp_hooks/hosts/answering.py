"""A host call's way through the bridge: the payload read in, the fired call answered out.

``load_payload`` reads the host's stdin bytes into its payload (or a ``BridgeInputError``
naming what is wrong with them); ``unreadable`` says what broke when a payload could not be
translated and how to fix it. ``answer_outcome`` is the host's reply to a fired call: its
outcome in the host's form, a fault outcome when firing raised (never a block that loops a
continuing stop), and a rewrite the host's tool cannot take refused rather than run without
it. ``shows_aid`` asks whether the host's reply to a call shows the model the engine's
context at all (if not, the door fires with ``hold_aid`` and the session's aid waits).

Shared by the bridge (``bridge.py``, ``forward.py``) and the server's forward endpoint;
what each host answers with is its ``Host`` (``base.py``). Cheap to import, as ``base.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_hooks.hosts.base import (
    EXIT_BLOCK,
    FAULT_FIX,
    BridgeInputError,
    Call,
    Host,
    Reply,
    fault_outcome,
)
from mcp_hooks.spec import outcome
from mcp_hooks.spec.events import can_block
from mcp_hooks.spec.toolcall import unexpressible

if TYPE_CHECKING:
    from mcp_hooks.spec.outcome import Outcome


def unreadable(host: Host, exc: BaseException) -> str:
    """What broke when a payload could not be translated, and how to fix it."""
    if isinstance(exc, BridgeInputError):
        what = str(exc)
    else:
        what = f"could not read the {host.title} payload: {type(exc).__name__}: {exc}"
    return (f"{what}. Check that this hook entry belongs to {host.title} (re-run `mcp-hooks "
            f"install {host.name}` to rewrite it); {FAULT_FIX}")


def answer_outcome(host: Host, call: Call, outcome: Outcome | BaseException, on_fault: str,
                   payload: Mapping[str, Any]) -> Reply:
    """The host's reply to a fired call: its outcome in the host's form, or, when firing
    raised, a fault outcome (never a block that loops a continuing stop); a reply that cannot
    be built is a fault reply. Shared by the bridge and the forward endpoint."""
    if isinstance(outcome, BaseException):
        if call.event == "before_stop" and host.continuing(payload):
            on_fault = "warn"
        outcome = fault_outcome(call.event, (
            f"the engine failed on {call.host_event}: {type(outcome).__name__}: {outcome}. "
            f"Check the hooks with `mcp-hooks validate`; {FAULT_FIX}"), on_fault=on_fault)
    elif outcome.modified_input is not None and on_fault != "warn":
        rewritten, why = host.host_input(call, outcome)
        if rewritten is None and why:  # never let the input a hook replaced run instead
            outcome = unexpressible(call.event, outcome, why, on_fault)
    try:
        reply = host.reply(call, outcome)
    except Exception as exc:
        return host.fault_reply(
            f"could not answer {call.host_event}: {type(exc).__name__}: {exc}; {FAULT_FIX}",
            call.host_event, on_fault, payload)
    return reply


_PROBE = "mcp-hooks: does this reply show the context? 7d1f0c"


def shows_aid(host: Host, call: Call) -> bool:
    """Whether the host's reply to this call shows the model the engine's context, allowed
    or denied (the model reads stdout but ``systemMessage``, and stderr on exit 2). If not
    (Claude Code's Stop), the door fires with ``hold_aid``: the session's aid waits."""
    stop = call.event == "before_stop"
    for deny in (False, True) if can_block(call.event) else (False,):
        try:
            probe = outcome.Outcome(call.event, "deny" if deny else "allow", "probe",
                                    continue_working=deny and stop, additional_context=[_PROBE])
            reply = host.reply(call, probe)
            data: Any = json.loads(reply.stdout) if reply.stdout.strip() else {}
        except Exception:  # a reply that cannot be built or read shows nothing
            return False
        if isinstance(data, dict):
            data.pop("systemMessage", None)
        if _PROBE not in json.dumps([data, reply.stderr * (reply.exit_code == EXIT_BLOCK)]):
            return False
    return True


_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def load_payload(raw: bytes) -> dict[str, Any]:
    """The host's payload from stdin bytes.

    Raises:
        BridgeInputError: empty, not UTF-8, not JSON, nested too deeply, not a JSON object,
            or holding a lone surrogate escape (text no hook can be shown faithfully).
    """
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise BridgeInputError(f"stdin is not UTF-8 ({exc})") from None
    if not text:
        raise BridgeInputError("no payload on stdin (expected the host's hook JSON)")
    try:
        data = json.loads(text)
    except RecursionError:
        raise BridgeInputError("stdin is JSON nested too deeply to read") from None
    except ValueError as exc:
        raise BridgeInputError(f"stdin is not JSON ({exc}): {text[:120]!r}") from None
    if not isinstance(data, dict):
        raise BridgeInputError(f"stdin must be a JSON object, got {type(data).__name__}")
    if _SURROGATE.search(text):  # rare: only then pay for the full check
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise BridgeInputError(
                "stdin holds a lone surrogate escape (not valid Unicode), so the hooks "
                "cannot be shown the call as the host will run it") from None
        except RecursionError:
            raise BridgeInputError("stdin is JSON nested too deeply to read") from None
    return data

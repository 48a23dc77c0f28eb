"""The environment a hook runs with: the caller's, less our secrets, plus ``AGENT_HOOKS_*``.

Every hook starts from ``hook_environment``: the caller's ordinary variables, without the
server's secrets (``MCP_HOOKS_TOKEN``, ``MCP_HOOKS_STATE``, ``MCP_HOOKS_TRUST_KEY`` and any
variable whose value is a configured token, trust key, header secret or shared store URL) and
without any ``AGENT_HOOKS_*`` the caller had, plus ``PYTHONDONTWRITEBYTECODE=1``.
``HookEnvs`` adds the variables the spec gives each hook and keeps each result (one per hook,
work folder and session): the runners never edit it.

An event's own values (the work folder, the session) can be any size; past 4 KiB, or holding
what ``exec`` cannot pass, they reach the hook on stdin only, so no event can make a spawn
fail (``E2BIG``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from mcp_hooks.spec.hookfile import HookSpec

# Never handed to a hook: the server's own secret, the state store's URL (it may hold the
# store's password), the trust key, and any value equal to a configured one.
SECRET_VARS = frozenset({"MCP_HOOKS_TOKEN", "MCP_HOOKS_STATE", "MCP_HOOKS_TRUST_KEY"})
ENV_VALUE_CAP = 4096  # longer event values reach the hook on stdin only, never in its env
_ENV_CACHE = 256  # hook environments kept (one per hook, work_dir and session)


def hook_environment(environ: Mapping[str, str], secrets: Collection[str] = ()) -> dict[str, str]:
    """The environment every hook starts from (see the module docstring)."""
    hidden = {value for value in secrets if value}
    env = {key: value for key, value in environ.items()
           if key not in SECRET_VARS and value not in hidden
           and not key.startswith("AGENT_HOOKS_")}
    # a Python hook must not write __pycache__ into its folder: that would change the content
    # a project hook was trusted with (and a stale .pyc could run instead of the source)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def env_safe(value: str) -> bool:
    """Whether ``value`` can be passed through ``exec`` as it is."""
    if "\0" in value:
        return False
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


class HookEnvs:
    """Each hook's environment, built once per hook, work folder and session."""

    def __init__(self, base: dict[str, str]) -> None:
        self.base = base
        self._envs: dict[tuple[Any, ...], dict[str, str]] = {}

    def get(self, hook: HookSpec, work_dir: str, session_id: str | None) -> dict[str, str]:
        key = (hook.dir, hook.name, hook.trigger, work_dir, session_id)
        env = self._envs.get(key)
        if env is None:
            if len(self._envs) >= _ENV_CACHE:
                self._envs.clear()
            env = self._envs[key] = dict(self.base)
            env["AGENT_HOOKS_EVENT"] = hook.trigger
            env["AGENT_HOOKS_HOOK_NAME"] = hook.name
            env["AGENT_HOOKS_HOOK_DIR"] = str(hook.dir)
            for var, value in (("AGENT_HOOKS_WORK_DIR", work_dir),
                               ("AGENT_HOOKS_SESSION_ID", session_id or "")):
                if len(value) <= ENV_VALUE_CAP and env_safe(value):
                    env[var] = value
        return env

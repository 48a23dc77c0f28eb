"""Per-hook resource limits: ``metadata.limits`` in HOOK.md.

::

    metadata:
      limits:
        address_space_mb: 2048   # virtual memory of each of the hook's processes (RLIMIT_AS)
        cpu_seconds: 20          # CPU time of each process (RLIMIT_CPU): SIGXCPU, then SIGKILL
        processes: 256           # RLIMIT_NPROC: counts ALL processes of the user, see below
        open_files: 1024         # file descriptors per process (RLIMIT_NOFILE)

A limit is an integer, or ``null`` / ``unlimited`` for "keep what the engine has". These are
POSIX rlimits: each applies to every process of the hook on its own (they are inherited, not
shared), and a hook can lower them but never raise them again (soft and hard are both set).

The defaults (``DEFAULT_LIMITS``) change only ``open_files``, to 1024 (what ``select`` can
handle, and the usual soft default; an engine started with a higher limit does not pass it
on). The others stay unlimited by default, because a default would break hooks that are fine:
runtimes such as Node, Java, Go and WebAssembly reserve far more address space than they use;
the run's timeout already bounds its wall time; and ``RLIMIT_NPROC`` counts every process of
the user, not the hook's, so a default would fail the forks of a busy user's hooks (for root
the kernel does not enforce it at all).

How they are applied, and what a run can tell of a hit, is the runner's business
(``mcp_hooks.runner``, module docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_hooks.errors import HookFileError


@dataclass(frozen=True)
class Limits:
    """Resource limits for one hook's processes; None keeps the engine's own.

    Attributes:
        address_space_mb: RLIMIT_AS, in MiB.
        cpu_seconds: RLIMIT_CPU, in seconds of CPU time.
        processes: RLIMIT_NPROC (the user's process count; not enforced for root).
        open_files: RLIMIT_NOFILE.
    """

    address_space_mb: int | None = None
    cpu_seconds: int | None = None
    processes: int | None = None
    open_files: int | None = None


DEFAULT_LIMITS = Limits(open_files=1024)

# key: (lowest, highest, unit and meaning, for the messages)
_RANGES: dict[str, tuple[int, int, str]] = {
    "address_space_mb": (16, 1 << 22, "MiB of virtual memory per process"),
    "cpu_seconds": (1, 86_400, "seconds of CPU time per process"),
    "processes": (1, 1 << 22, "processes of the user (RLIMIT_NPROC)"),
    "open_files": (8, 1 << 20, "open file descriptors per process"),
}
_UNLIMITED = ("unlimited", "none")


def parse_limits(value: object, hook_file: Path) -> Limits:
    """The ``Limits`` of a hook from the raw ``metadata.limits`` of its frontmatter.

    Args:
        value: the parsed ``metadata.limits`` value; None (absent) gives ``DEFAULT_LIMITS``.
        hook_file: the HOOK.md, for the error.

    Returns:
        The defaults with the given keys replaced.

    Raises:
        HookFileError: with field ``metadata.limits`` or ``metadata.limits.<key>`` and how to
            fix it, for a value that is not a mapping, an unknown key or a bad number.
    """
    if value is None:
        return DEFAULT_LIMITS
    allowed = ", ".join(_RANGES)
    if not isinstance(value, dict):
        raise HookFileError(hook_file, "metadata.limits",
                            f"must be a mapping of limits ({allowed}), got {value!r}")
    fields: dict[str, int | None] = {
        "address_space_mb": DEFAULT_LIMITS.address_space_mb,
        "cpu_seconds": DEFAULT_LIMITS.cpu_seconds,
        "processes": DEFAULT_LIMITS.processes,
        "open_files": DEFAULT_LIMITS.open_files,
    }
    for key, raw in value.items():
        if key not in _RANGES:
            raise HookFileError(hook_file, f"metadata.limits.{key}",
                                f"unknown limit; use one of: {allowed}")
        low, high, meaning = _RANGES[key]
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in _UNLIMITED):
            fields[key] = None
            continue
        if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
            raise HookFileError(
                hook_file, f"metadata.limits.{key}",
                f"must be an integer from {low} to {high} ({meaning}), or `unlimited`; "
                f"got {raw!r}")
        fields[key] = raw
    return Limits(**fields)

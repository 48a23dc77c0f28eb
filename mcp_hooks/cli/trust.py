"""``mcp-hooks trust``: review a project's hooks and trust their exact content.

Without flags it shows each hook of ``<project>/.agents/hooks`` (trigger, matcher, the argv
it runs, its SHA-256 and whether it is trusted now) and asks before recording them in the
trust store; ``--yes`` answers for a script (without a terminal it is required). ``--list``
prints the store; ``--revoke`` forgets a project's hooks (or the ``--hook`` ones).

The project's control layer is a stranger's code too: its ``.ahp/hooks.yaml`` (and
``hooks.local.yaml``, and every ``.py`` under ``.ahp``) is listed beside the hooks under
the trust store's name ``.ahp`` (``control.config.TRUST_NAME``), with its status (trusted,
changed, untrusted), every file trust covers with its size and SHA-256 (the ``.py`` files a
custom oracle names marked as such; a FIFO or a link out of ``.ahp`` shown, never read), the
entries that run commands or custom code (which wait for this trust), the entries of your
own ``~/.ahp`` layer it would change once trusted, those that only read (which apply
anyway), and the digest (``control.config.config_digest``). The review reads and never
imports: a custom oracle's file is parsed (``ast``), not run, and one the allow-list would
refuse (``subprocess:Popen``) is a problem. It is trusted with the hooks, after the same
question; ``--hook .ahp`` picks it alone, ``--revoke --hook .ahp`` forgets it, ``--list
PROJECT`` shows its status and files. A hooks.yaml with problems is shown with them and not
trusted (it fails closed anyway). A project with a hooks.yaml but no ``.agents/hooks`` is
reviewed all the same.

Exit codes: 0 ok, 1 a problem (declined, nothing to trust, an invalid or unhashable hook,
an unreadable store: a ``TrustError``), 64 a usage error (an unknown ``--hook``, the project
named twice: a ``UsageError``). Errors are raised to the command boundary
(:func:`mcp_hooks.cli.main`), which prints them on one line.

:func:`command` turns the parsed arguments into :class:`TrustOptions`; :func:`run` does the
work from those alone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp_hooks import options
from mcp_hooks.cli.report import emit_json
from mcp_hooks.cli.trustreview import (
    ReviewedAhp,
    ReviewedHook,
    describe_ahp,
    describe_hook,
    file_lines,
    hook_folders,
    inspect_ahp,
    inspect_hook,
    project_has_ahp,
)
from mcp_hooks.control.config import TRUST_NAME
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, UsageError
from mcp_hooks.registry.digest import UNVERIFIABLE_DIGEST
from mcp_hooks.registry.discovery import project_hooks_dir
from mcp_hooks.registry.trust import TrustStore

# The keys of ``trust --json`` per action, in order (docs/cli.md); absent ones are null.
JSON_KEYS = {
    "trust": ("action", "trust_store", "project", "hooks", "control_layer", "trusted",
              "already_trusted", "not_trustable", "pending", "error", "ok"),
    "list": ("action", "trust_store", "entries", "project", "error", "ok"),
    "revoke": ("action", "trust_store", "project", "revoked", "error", "ok"),
}


def add_parser(sub: Any) -> None:
    """Declare ``trust`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "trust", help="review and trust a project's hooks (project hooks run only once trusted)",
        description="Project hooks (<project>/.agents/hooks) run only after you trusted their "
        "exact content. This shows each hook -- trigger, matcher, the command it runs, the "
        "SHA-256 of its folder -- and asks before trusting it. Any later change to the folder "
        "makes the hook untrusted again until you run this again. The project's hooks.yaml "
        "(.ahp, the control layer) is shown and trusted the same way, under the name .ahp: "
        "its entries that run commands (TestGate, LintChecker, custom oracles) wait for it.",
    )
    p.add_argument("project", nargs="?", type=Path, metavar="PROJECT_DIR",
                   help="the project (default: --project-dir, else the nearest folder at or "
                   "above the current one that has .agents/hooks)")
    p.add_argument("--hook", dest="hooks", action="append", metavar="NAME",
                   help="only this hook (repeatable; .ahp: the project's hooks.yaml)")
    p.add_argument("--yes", "-y", action="store_true",
                   help="trust without asking (required without a terminal)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true",
                      help="print every trusted hook in the store (and, for a PROJECT_DIR "
                      "given, the status of each of its hooks)")
    what.add_argument("--revoke", action="store_true",
                      help="forget the trust of the project's hooks (or the --hook ones)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (the review goes to stderr); "
                   "never asks: without --yes nothing is trusted (exit 1, as without a "
                   "terminal)")
    options.add_common_options(p)


@dataclass(frozen=True)
class TrustOptions:
    """What ``mcp-hooks trust`` is asked to do.

    Attributes:
        project: the project whose ``.agents/hooks`` to review (resolved).
        explicit: the project was named (``--list`` then also shows its hooks).
        action: ``trust`` (review, ask, record), ``list`` the store, or ``revoke``.
        hooks: only these hook names; None for every hook of the project.
        yes: trust without asking.
        json: print one JSON document on stdout (the text goes to stderr); never ask.
    """

    project: Path
    explicit: bool = False
    action: Literal["trust", "list", "revoke"] = "trust"
    hooks: tuple[str, ...] | None = None
    yes: bool = False
    json: bool = False


def options_from_args(args: argparse.Namespace) -> TrustOptions:
    """The options the command line gives.

    Raises:
        UsageError: the project is named both ways (PROJECT_DIR and ``--project-dir``), and
            they differ.
    """
    if args.project is not None:
        project = Path(os.path.expanduser(str(args.project))).resolve()
        given = getattr(args, "project_dir", None)
        if given is not None and Path(os.path.expanduser(str(given))).resolve() != project:
            raise UsageError("give the project once: PROJECT_DIR or --project-dir, not both")
        explicit = True
    else:
        project = options.project_dir(args)
        explicit = getattr(args, "project_dir", None) is not None
    action: Literal["trust", "list", "revoke"] = (
        "list" if args.list else "revoke" if args.revoke else "trust")
    return TrustOptions(project=project, explicit=explicit, action=action,
                        hooks=tuple(args.hooks) if args.hooks else None, yes=args.yes,
                        json=bool(getattr(args, "json", False)))


def command(args: argparse.Namespace) -> int:
    """``mcp-hooks trust`` (``--state URL``: the digests kept in that shared store; records
    written there unsigned, without ``MCP_HOOKS_TRUST_KEY``, are said on stderr)."""
    given = options.settings(args)
    store = options.trust_store_of(given) if args.list else options.trust_writer(given, "trust")
    return run(options_from_args(args), store)


def run(opts: TrustOptions, store: TrustStore) -> int:
    """Carry out ``opts`` against ``store`` (the one the door's settings name).

    Returns:
        0 ok, 1 a problem reported on stderr (declined, nothing to trust, a hook that is
        invalid or cannot be hashed, an unreadable store).

    Raises:
        UsageError: ``opts.hooks`` names a hook the project does not have.
        TrustError: the trust could not be recorded (the store cannot be written).
    """
    record: dict[str, Any] = {"action": opts.action, "trust_store": str(store.where)}
    if not opts.json:
        return _act(opts, store, record)
    with contextlib.redirect_stdout(sys.stderr):  # the review, for people, on stderr
        code = _act(opts, store, record)
    emit_json({key: code == EXIT_OK if key == "ok" else record.get(key)
               for key in JSON_KEYS[opts.action]})
    return code


def _act(opts: TrustOptions, store: TrustStore, record: dict[str, Any]) -> int:
    names = list(opts.hooks) if opts.hooks else None
    if opts.action == "list":
        return _list(store, opts.project if opts.explicit else None, record)
    if opts.action == "revoke":
        return _revoke(store, opts.project, names, record)
    return _trust(store, opts.project, names, opts.yes, record,
                  ask=not opts.json)


def _fail(record: dict[str, Any], text: str) -> int:
    """A problem said on stderr (``mcp-hooks trust: ...``) and kept for ``--json``; 1."""
    print(f"mcp-hooks trust: {text}", file=sys.stderr)
    record["error"] = text
    return EXIT_FAILURE


def _select(hooks: list[ReviewedHook], names: list[str] | None, root: Path,
            also: set[str] | None = None) -> list[ReviewedHook]:
    if not names:
        return hooks
    known = {h.name for h in hooks} | (also or set())
    unknown = [n for n in dict.fromkeys(names) if n not in known]
    if unknown:
        there = ", ".join(sorted(known)) or "none"
        raise UsageError(f"no hook named {', '.join(map(repr, unknown))} in {root}; "
                     f"the hooks there are: {there}")
    wanted = set(names)
    return [h for h in hooks if h.name in wanted]


def _review(store: TrustStore, project: Path, names: list[str] | None,
            record: dict[str, Any]) -> list[ReviewedHook | ReviewedAhp] | int:
    """The hooks (and control layer) to review, inspected; or the exit code of why none.

    Raises:
        UsageError: ``names`` has a hook the project has not.
    """
    root = project_hooks_dir(project)
    has_ahp = project_has_ahp(project)
    record.update(project=str(project), hooks=[], control_layer=None, trusted=[],
                  already_trusted=[], not_trustable=[], pending=[])
    if not root.is_dir() and not has_ahp:
        if names:
            raise UsageError(f"no hook named {', '.join(map(repr, names))}: {root} does not exist")
        return _fail(record, f"no project hooks: {root} does not exist, nor "
                     f"{project / '.ahp' / 'hooks.yaml'}")
    if store.problem:
        return _fail(record, store.problem)
    hooks = [inspect_hook(f, project, store) for f in _chosen(root, names, has_ahp)]
    ahp = inspect_ahp(project, store) if not names or TRUST_NAME in names else None
    if not hooks and ahp is None:
        return _fail(record, f"no hooks in {root}")
    record.update(hooks=[h.as_dict() for h in hooks],
                  control_layer=ahp.as_dict() if ahp is not None else None)
    _print_review(root, store, hooks, ahp)
    return [*hooks, *([ahp] if ahp is not None else [])]


def _chosen(root: Path, names: list[str] | None, has_ahp: bool) -> list[Path]:
    """The hook folders of ``root`` to review: every one, or the ``names`` ones.

    Raises:
        UsageError: an unknown name (before any hashing).
    """
    folders = hook_folders(root)
    if not names:
        return folders
    _select([ReviewedHook(f.name, f) for f in folders], names, root,
            also={TRUST_NAME} if has_ahp else None)
    return [f for f in folders if f.name in set(names)]


def _print_review(root: Path, store: TrustStore, hooks: list[ReviewedHook],
                  ahp: ReviewedAhp | None) -> None:
    if hooks:
        print(f"Project hooks in {root}")
    if ahp is not None:
        print(f"Project control layer in {ahp.dir}")
    print(f"Trust store: {store.where}")
    print()
    for hook in hooks:
        print("\n".join(describe_hook(hook)))
    if ahp is not None:
        print("\n".join(describe_ahp(ahp)))
    print()


def _trust(store: TrustStore, project: Path, names: list[str] | None, yes: bool,
           record: dict[str, Any], *, ask: bool = True) -> int:
    items = _review(store, project, names, record)
    if isinstance(items, int):
        return items
    bad, todo = _sorted_out(items, record)
    if bad:
        print(f"not trustable: {', '.join(h.name for h in bad)} (see above)", file=sys.stderr)
    if not todo:
        if record["already_trusted"]:
            print(f"already trusted: {', '.join(record['already_trusted'])}")
        return EXIT_FAILURE if bad else EXIT_OK
    record["pending"] = [h.name for h in todo]
    if not yes and not _agreed(todo, ask, record):
        return EXIT_FAILURE
    store.trust(project, {h.name: h.digest for h in todo})
    record["pending"], record["trusted"] = [], [h.name for h in todo]
    for h in todo:
        print(f"trusted {h.name}  sha256 {h.digest[:16]}")
    return EXIT_FAILURE if bad else EXIT_OK


def _sorted_out(items: list[ReviewedHook | ReviewedAhp], record: dict[str, Any],
                ) -> tuple[list[ReviewedHook | ReviewedAhp], list[ReviewedHook | ReviewedAhp]]:
    """(not trustable, still to trust) of the reviewed items; the names of each, and of the
    ones already trusted, in ``record``."""
    bad = [h for h in items if not h.trustable]
    todo = [h for h in items if h.trustable and h.status != "trusted"]
    record["not_trustable"] = [h.name for h in bad]
    record["already_trusted"] = [h.name for h in items if h.trustable and h not in todo]
    return bad, todo


def _agreed(todo: list[ReviewedHook | ReviewedAhp], ask: bool, record: dict[str, Any]) -> bool:
    """Whether the user agreed, at the terminal, to trust ``todo`` (``ask`` False: the
    question is not asked, as without a terminal)."""
    if not ask or not sys.stdin.isatty():
        record["error"] = (f"not a terminal: review the {_count(todo)} above and pass --yes "
                           "to trust them")
        print(f"mcp-hooks trust: {record['error']}", file=sys.stderr)
        return False
    try:
        answer = input(f"Trust these {_count(todo)}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        record["error"] = "nothing trusted"
        print("nothing trusted", file=sys.stderr)
        return False
    return True


def _count(items: list[ReviewedHook | ReviewedAhp]) -> str:
    """``2 hook(s)``, ``the hooks.yaml``, ``1 hook(s) and the hooks.yaml``."""
    hooks = sum(1 for i in items if isinstance(i, ReviewedHook))
    parts = ([f"{hooks} hook(s)"] if hooks else []) + (
        ["the hooks.yaml (.ahp)"] if len(items) > hooks else [])
    return " and ".join(parts)


def _list(store: TrustStore, project: Path | None, record: dict[str, Any]) -> int:
    entries = store.entries()
    problem = store.problem
    if problem:
        _fail(record, problem)
    rows = [(p, n, e.get("sha256", "")[:16], str(e.get("trusted_at", "")))
            for p, hooks in sorted(entries.items()) for n, e in sorted(hooks.items())]
    record["entries"] = [{"project": p, "hook": n, "sha256": e.get("sha256"),
                          "trusted_at": e.get("trusted_at")}
                         for p, hooks in sorted(entries.items()) for n, e in sorted(hooks.items())]
    print(f"Trust store: {store.where}")
    if rows:
        head = ("PROJECT", "HOOK", "SHA256", "TRUSTED AT")
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
        for row in [head, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[3])
    else:
        print("no trusted project hooks")
    record["project"] = _list_project(store, project) if project is not None else None
    return EXIT_FAILURE if problem else EXIT_OK


def _list_project(store: TrustStore, project: Path) -> dict[str, Any]:
    """``--list PROJECT``: the status of each of its hooks and of its control layer."""
    root = project_hooks_dir(project)
    print()
    folders = hook_folders(root)
    hooks = [inspect_hook(f, project, store) for f in folders]
    if not hooks:
        print(f"no hooks in {root}")
    else:
        print(f"Hooks in {root}:")
        width = max(len(h.name) for h in hooks)
        for h in hooks:
            extra = "" if h.spec is not None else "  (invalid)"
            if h.digest == UNVERIFIABLE_DIGEST:
                extra += "  (cannot be hashed)"
            print(f"  {h.name.ljust(width)}  {h.status}{extra}")
    ahp = inspect_ahp(project, store)
    if ahp is not None:
        extra = "  (invalid)" if ahp.problems else ""
        print(f"Control layer {ahp.dir}: {TRUST_NAME}  {ahp.status}{extra}")
        print("\n".join(file_lines(ahp)))
    return {"path": str(project), "hooks": [h.as_dict() for h in hooks],
            "control_layer": ahp.as_dict() if ahp is not None else None}


def _revoke(store: TrustStore, project: Path, names: list[str] | None,
            record: dict[str, Any]) -> int:
    key = store.project_key(project)
    record.update(project=key, revoked=[])
    if store.problem:
        return _fail(record, store.problem)
    if names:
        on_disk = [ReviewedHook(f.name, f) for f in hook_folders(project_hooks_dir(project))]
        _select(on_disk, names, project_hooks_dir(project),
                also={*store.entries().get(key, {}), TRUST_NAME})
    removed = store.revoke(project, names or None)
    record["revoked"] = list(removed)
    if removed:
        print(f"revoked {', '.join(removed)} in {key}")
    else:
        print(f"nothing to revoke: no trusted hooks{' of those names' if names else ''} "
              f"in {key}")
    return EXIT_OK

"""What mcp-server-git's writing tools change: ``git_tool(guard, name, last, input, bases)``.

``git_add`` may not stage a protected path; ``git_commit`` may not record a staged change to
one; ``git_checkout`` may not switch to a revision whose protected files differ from HEAD's
(git itself is asked, with the protected paths as pathspecs); none of them may work in a
repository inside a protected folder.
"""

from __future__ import annotations

import os

from protected_paths import NAMED, PATTERNS, Guard

GIT_TIMEOUT = 3.0  # seconds per git command (the hook's own timeout is 5 s)
# The tools of mcp-server-git that change a repository (its readers are tool_writes'
# READ_TOOLS): each may not work in a protected folder; git_add may not stage a protected
# path; git_commit may not record a staged change to one; git_checkout may not switch to a
# revision that changes one.
GIT_TOOLS = {"git_add", "git_commit", "git_checkout", "git_reset", "git_create_branch",
             "git_init"}


class GitFailed(Exception):
    """git could not say what a commit or checkout would change."""


def git_tool(guard: Guard, name: str, last: str, tool_input: object,
             bases: list[str]) -> tuple[str, str, str] | None:
    """(what, path, label) of the protected path git tool ``last`` would change, or None."""
    args = tool_input if isinstance(tool_input, dict) else {}
    raw = args.get("repo_path")
    repo = guard.work_dir
    if isinstance(raw, str) and raw:
        label = guard.why(raw, bases, NAMED)
        if label:
            return (f"{name}, which writes into the repository at", raw, label)
        repo = next(iter(guard.resolve(raw, bases)), repo).rstrip("/") or "/"
    if last == "git_add":
        return _staged(guard, name, args.get("files"), repo)
    if last not in ("git_commit", "git_checkout"):
        return None
    return _recorded(guard, name, last, args.get("branch_name"), repo,
                     raw if isinstance(raw, str) and raw else repo)


def _recorded(guard: Guard, name: str, last: str, branch: object, repo: str,
              shown: str) -> tuple[str, str, str] | None:
    """(what, path, label) of the protected path ``git_commit`` would record or
    ``git_checkout`` of ``branch`` would change in the repository at ``repo`` (``shown``
    as the call named it)."""
    if last == "git_checkout" and not isinstance(branch, str):
        return None  # the server refuses it
    try:
        changed = _git_changes(guard, repo, branch if isinstance(branch, str)
                               and last == "git_checkout" else None)
    except GitFailed as exc:
        return (f"{name}, whose changes could not be listed ({exc}), in", shown,
                "it might change a hooks folder, so it is refused")
    for path, label in changed:
        if last == "git_commit":
            return (f"{name}, which records the staged change to", path, label)
        return (f"{name} of {branch!r}, which changes", path, label)
    return None


def _staged(guard: Guard, name: str, files: object, repo: str) -> tuple[str, str, str] | None:
    """(what, path, label) of the first protected path ``git_add`` would stage."""
    for file in files if isinstance(files, list) else [files]:
        label = guard.why(file, [repo], NAMED)  # None for what is not text
        if label and isinstance(file, str):
            return (f"{name} of", file, label)
    return None


def _git_changes(guard: Guard, repo: str, revision: str | None) -> list[tuple[str, str]]:
    """(path, label) of each protected path the index (revision None: what a commit records)
    or a checkout of ``revision`` changes, asked of git with the protected paths as
    pathspecs, so git lists only those."""
    top = _git(repo, "rev-parse", "--show-toplevel").strip("\n")
    if not top:
        raise GitFailed(f"{repo} is not in a git working tree")
    specs = []
    for comps, subtree, _ in PATTERNS:
        specs.append(":(top,glob)**/" + "/".join(comps) + ("/**" if subtree else ""))
    for root, _, _ in guard.root_parts:
        if root.startswith(top + "/"):
            specs.append(":(top,literal)" + root[len(top) + 1:])
    if revision is None:
        try:
            out = _git(repo, "diff-index", "--cached", "--name-only", "-z", "--no-renames",
                       "HEAD", "--", *specs)
        except GitFailed:  # no commit yet: everything in the index is what a commit records
            out = _git(repo, "ls-files", "-z", "--cached", "--full-name", "--", *specs)
    else:
        out = _git(repo, "diff-tree", "-r", "--name-only", "-z", "--no-renames",
                   "--end-of-options", "HEAD", revision, "--", *specs)
    found = []
    for rel in out.split("\0"):
        if rel:
            label = guard.why(top + "/" + rel, [top], NAMED)
            if label:
                found.append((rel, label))
    return found


def _git(repo: str, *args: str) -> str:
    # lazy: only git_commit and git_checkout spawn; every other event stays fast
    # (python -X importtime: subprocess is 5 ms of a cold start)
    import subprocess

    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        done = subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", repo, *args],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=GIT_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from None
    except (OSError, ValueError) as exc:
        raise GitFailed(f"git could not run: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(f"git {args[0]}: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "surrogateescape")

"""What ``install`` and ``uninstall`` do with the changes they planned (``install.py``): say
there is nothing to do, show them (``--dry-run``), write them (the previous files kept as
backups), and report what was done."""

from __future__ import annotations

import contextlib
import difflib
import sys
from pathlib import Path

from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.configfile import Target, backup_path, replace

Changes = dict[Path, tuple[str, str]]  # path -> (old text, new text)


def unchanged(host: Host, scope: str, where: Target, install: bool, notes: list[str]) -> None:
    if not install:
        print(f"{where.path}: " + ("does not exist" if not where.path.exists() else
                                   "holds no entries of mcp-hooks")
              + f", nothing to uninstall ({host.title}, {scope} scope)")
        return
    print(f"{where.path}: already up to date ({host.title}, {scope} scope)")
    for note in notes:
        print(note)


def show_diff(changes: Changes, where: Target, verb: str) -> None:
    for path, (old, new) in changes.items():
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True),
            fromfile=str(path), tofile=f"{path} (after {verb})",
        )
        sys.stdout.writelines(diff)
    print(f"(dry run: {where.path} was not changed)")


def written(host: Host, scope: str, where: Target, changes: Changes, verb: str
             ) -> list[Path] | None:
    """Write each change (the previous files kept as backups); None when one cannot be
    written (said on stderr)."""
    # a folder of executables (the "files" format): each one is run by the host
    mode = 0o755 if where.format == "files" else None
    backups: list[Path] = []
    for path, (old, new) in changes.items():
        try:
            backup = replace(path, old, new, backup_path(host, scope, path), mode)
        except OSError as exc:
            print(f"mcp-hooks {verb}: cannot write {path}: {exc}", file=sys.stderr)
            return None
        if backup is not None:
            backups.append(backup)
    return backups


def done(host: Host, where: Target, installed: str | None, backups: list[Path],
         notes: list[str]) -> None:
    """Report the change written (``installed``: what was installed, None: an uninstall);
    an uninstall of generated files removes their folder too when that leaves it empty."""
    if installed is None and where.format in ("files", "module"):
        folder = where.path if where.format == "files" else where.path.parent
        with contextlib.suppress(OSError):
            folder.rmdir()
    what = installed or f"our {host.title} entries"
    saved = (f" (previous file saved as {backups[0]})" if len(backups) == 1 else
             f" (previous files saved in {backups[0].parent})" if backups else "")
    print(f"{what} {'installed into' if installed else 'removed from'} {where.path}{saved}")
    for note in notes:
        print(note)

"""A small MCP server that keeps notes as files in one folder: the upstream of the proxy demo.

Run: ``python examples/notes_server.py --root DIR`` (stdio). Tools: ``write_file(path,
content)``, ``read_file(path)``, ``list_files()``; paths are relative to DIR and may not leave it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build(root: Path) -> MCPServer:
    server = MCPServer("notes", instructions="Notes kept as text files in one folder.")
    base = root.resolve()

    def inside(path: str) -> Path:
        target = (base / path).resolve()
        if target != base and base not in target.parents:
            raise ToolError(f"{path} is outside the notes folder")
        return target

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Write a text file in the notes folder (replacing it)."""
        target = inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    @server.tool()
    def read_file(path: str) -> str:
        """Read a text file of the notes folder."""
        target = inside(path)
        if not target.is_file():
            raise ToolError(f"{path} does not exist")
        return target.read_text()

    @server.tool()
    def list_files() -> list[str]:
        """The files of the notes folder."""
        return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd())
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    build(args.root).run()


if __name__ == "__main__":
    main()

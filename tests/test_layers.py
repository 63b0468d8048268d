"""The package's layers, as ``docs/architecture.md`` draws them: each folder imports only
from the layers it may know about (lazy imports inside functions included).

This reads every import of ``codeagent_jupyter/`` and checks it against ``MAY_IMPORT``, so a
shortcut across the layers (the core building tools, a tool reaching into the recorder)
fails here, with the line that made it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "codeagent_jupyter"

VOCABULARY = {"events", "errors", "config", "traits"}
BELOW_EDGES = {"vocabulary", "util", "core", "timeline", "models", "sandbox", "tools", "hooks"}
BELOW_EDGES |= {"record", "packages", "egress"}
MAY_IMPORT: dict[str, set[str]] = {
    "vocabulary": set(),
    "util": {"vocabulary"},
    "core": {"vocabulary", "util"},
    "timeline": {"vocabulary", "util"},
    "models": {"vocabulary", "util", "core"},
    "sandbox": {"vocabulary", "util", "core", "egress"},  # each sandbox's egress broker
    "egress": {"vocabulary", "util"},  # the broker of --network policy, outside the sandbox
    "tools": {"vocabulary", "util", "core", "packages"},  # install_packages drives pip
    "hooks": {"vocabulary", "util", "core"},
    "packages": {"vocabulary", "util", "core"},  # pip, run for the sandbox, outside it
    "record": {"vocabulary", "util", "core", "timeline", "packages"},
    "mcp": BELOW_EDGES,  # the sandbox's tools for agents we did not write
    "cli": BELOW_EDGES | {"mcp"},
    "widget": BELOW_EDGES,
    "hub": BELOW_EDGES,
    "server": BELOW_EDGES | {"hub", "mcp"},  # a student's server finds the class's model gateway
    "persona": BELOW_EDGES | {"server", "widget"},  # Jupyter AI's chat over the server's sessions
    "package": {"server", "widget"},  # __init__: the Jupyter entry points, loaded on use
}
"""Layer -> the other layers it may import from (its own is always allowed)."""


def layer_of(module: str) -> str:
    """The layer of a module (or of a name imported from the package itself)."""
    parts = module.split(".")[1:]
    if parts and parts[0] in VOCABULARY:
        return "vocabulary"
    if parts and (PACKAGE / parts[0] / "__init__.py").is_file():
        return parts[0]
    return "package"


def imports() -> Iterator[tuple[str, str, int]]:
    """``(module, imported module, line)`` for every import of the package by itself."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if parts[-1] == "__init__" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                if node.module:
                    yield module, ".".join([*base, node.module]), node.lineno
                else:
                    for alias in node.names:
                        yield module, ".".join([*base, alias.name]), node.lineno
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "codeagent_jupyter"
            ):
                yield module, str(node.module), node.lineno
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("codeagent_jupyter"):
                        yield module, alias.name, node.lineno


def test_every_import_goes_the_way_the_layers_allow() -> None:
    crossings = []
    for module, target, line in imports():
        source, dest = layer_of(module), layer_of(target)
        if dest == "package" and source != "package":
            continue  # ``from .. import __version__``
        if source != dest and dest not in MAY_IMPORT[source]:
            crossings.append(f"{module}:{line} imports {target} ({source} -> {dest})")
    assert crossings == []


def test_the_check_sees_every_layer() -> None:
    """A layer missing from ``MAY_IMPORT`` (a new folder) is a decision still to make."""
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    folders -= {"labextension"}
    assert folders - set(MAY_IMPORT) == set()

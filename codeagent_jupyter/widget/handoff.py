"""What an accepted cell needs to run in the user's kernel as it ran in the sandbox.

A pooled sandbox imports the usual libraries before the session starts and the model is
told so (``numpy as np``, ``pandas as pd``, …), so its cells use ``pd`` without importing
it. The user's kernel has no such preload: an accepted cell gets the imports of the
preloaded names it uses (and does not bind itself) at its top. Adding them on accept,
rather than asking the model to repeat them in every cell, works for every model and for
recorded sessions replayed without one, and costs nothing in the sandbox.

Variables copied in with ``--with`` came from the user's kernel and are still there, but
not in a fresh kernel: a comment names the ones the cell uses.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ..sandbox.preload import ALIASES, DEFAULT_CANDIDATES, shown
from ..timeline.state import CellItem

DEFAULT_PRELOADED = tuple(shown(m) for m in DEFAULT_CANDIDATES)
"""What a sandbox preloads unless the server says otherwise (``c.CodeAgent.preload``)."""


def import_lines(preloaded: Iterable[str]) -> dict[str, str]:
    """Bound name -> the import statement that binds it, from the form the model is told
    (``"pandas as pd"`` -> ``pd: import pandas as pd``; ``"scipy.stats"`` -> ``scipy``)."""
    lines = {}
    for entry in preloaded:
        module, _, alias = entry.partition(" as ")
        module, alias = module.strip(), alias.strip()
        if not all(part.isidentifier() for part in module.split(".")):
            continue
        if alias and not alias.isidentifier():
            continue
        name = alias or ALIASES.get(module) or module.split(".")[0]
        lines[name] = f"import {module} as {alias}" if alias else f"import {module}"
    return lines


def _python(source: str) -> ast.Module | None:
    """The cell as Python (IPython syntax such as ``%timeit`` or ``!ls`` translated first);
    None for a cell magic (``%%bash``) or code that does not parse."""
    if source.lstrip().startswith("%%"):
        return None
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:  # IPython is always there in a kernel; without it, plain Python
        pass
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names the cell reads, names it binds anywhere)."""
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read, bound


def needed_imports(source: str, preloaded: Iterable[str]) -> list[str]:
    """Import statements for the preloaded names ``source`` uses without binding them."""
    tree = _python(source)
    if tree is None:
        return []
    read, bound = _names(tree)
    lines = import_lines(preloaded)
    return sorted({lines[name] for name in read - bound if name in lines})


def brought_used(source: str, brought: Iterable[str]) -> list[str]:
    """The ``--with`` variables ``source`` reads (and does not define itself)."""
    tree = _python(source)
    if tree is None:
        return []
    read, bound = _names(tree)
    return [name for name in brought if name in read and name not in bound]


def handoff_source(
    source: str, preloaded: Iterable[str] = DEFAULT_PRELOADED, brought: Iterable[str] = ()
) -> str:
    """``source`` as it should land in the user's notebook: a note on the ``--with``
    variables it uses, the imports of the preloaded names it uses, then the code."""
    head = []
    used = brought_used(source, brought)
    if used:
        names = ", ".join(used)
        head.append(
            f"# uses {names} from your kernel (copied into the agent's sandbox with --with)"
        )
    head += needed_imports(source, preloaded)
    return "\n".join([*head, source]) if head else source


def cell_source(
    cell: CellItem, preloaded: Iterable[str] | None, brought: Iterable[str] = ()
) -> str:
    """An accepted agent cell's notebook source; ``preloaded`` None (a sandbox or recording
    that did not say) assumes the default preload. Shell cells are left as they are."""
    if cell.language != "python" or cell.edit:  # a shell cell, or a proposal for a user's cell
        return cell.notebook_source
    chosen = DEFAULT_PRELOADED if preloaded is None else preloaded
    return handoff_source(cell.notebook_source, chosen, brought)

"""Tab completion of ``@``-mentions in ``%agent`` and ``%%agent`` cells.

The prompt of ``%agent`` is typed in a code cell, so completion is the kernel's: a matcher
added to IPython's completer offers, after an ``@``, this kernel's variables, the files and
folders below the kernel's folder (the notebook's; what the server resolves ``@path``
against) and the cells run so far (``In[n]``). Only ever in a cell that starts with the
magic; everywhere else the matcher steps aside. It lists names, never reads a file or a
value; ``..``, absolute paths and symlinks are not offered, as the server refuses them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.mentions import is_name

MAX_COMPLETIONS = 100
IDENTIFIER = "codeagent-mentions"
PRIORITY = 100
"""Before IPython's own matchers (priority 0): a mention's completions replace theirs."""
_TYPING = re.compile(r"(?<![\w@.\-/\\])@(?P<partial>[\w.\-/]*)$")
_MAGIC = re.compile(r"^\s*%%?agent\b")


def is_agent_cell(text: str) -> bool:
    """Whether ``text`` (a cell) is an ``%agent`` line or an ``%%agent`` cell."""
    return bool(_MAGIC.match(text))


def candidates(partial: str, names: list[str], folder: Path, counts: list[int]) -> list[str]:
    """What may follow ``@`` when ``partial`` is typed: ``names`` (variables), entries of
    ``folder`` (folders end in ``/``), and ``In[n]`` for ``counts``; each starts with
    ``partial``, at most ``MAX_COMPLETIONS``."""
    found: list[str] = []
    if "/" not in partial:
        found += sorted(n for n in names if n.startswith(partial) and is_name(n))
        cells = [f"In[{n}]" for n in sorted(counts, reverse=True)]
        found += [c for c in cells if c.startswith(partial)]
    found += _paths(partial, folder)
    return list(dict.fromkeys(found))[:MAX_COMPLETIONS]


def _paths(partial: str, folder: Path) -> list[str]:
    """Entries below ``folder`` that complete ``partial`` (a relative path being typed)."""
    head, _, prefix = partial.rpartition("/")
    if partial.startswith("/") or ".." in head.split("/"):
        return []
    where = folder
    for part in [p for p in head.split("/") if p]:
        where = where / part
        if where.is_symlink():
            return []
    try:
        entries = sorted(os.scandir(where), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.is_symlink():
            continue
        if entry.name.startswith(".") and not prefix.startswith("."):
            continue  # hidden, unless asked for
        name = f"{head}/{entry.name}" if head else entry.name
        found.append(name + "/" if entry.is_dir(follow_symlinks=False) else name)
        if len(found) >= MAX_COMPLETIONS:
            break
    return found


def matcher(shell: Any) -> Callable[[Any], dict[str, Any]]:
    """IPython's matcher (API v2) for ``shell``: mention completions, or nothing (and the
    other matchers go on) outside a mention of an agent cell."""
    from IPython.core.completer import SimpleCompletion, context_matcher

    @context_matcher(identifier=IDENTIFIER, priority=PRIORITY)
    def complete_mentions(context: Any) -> dict[str, Any]:
        nothing: dict[str, Any] = {"completions": [], "suppress": False}
        if not is_agent_cell(context.full_text):
            return nothing
        typing = _TYPING.search(context.text_until_cursor)
        if typing is None:
            return nothing
        partial = typing.group("partial")
        fragment = partial.rpartition("/")[2] if "/" in partial else partial
        if context.token not in (partial, fragment):
            return nothing  # IPython replaces only its token: a completion must be one
        hidden = shell.user_ns_hidden
        names = [n for n in shell.user_ns if not n.startswith("_") and n not in hidden]
        counts = list(range(1, int(getattr(shell, "execution_count", 1))))[-20:]
        found = candidates(partial, names, Path.cwd(), counts)
        cut = len(partial) - len(context.token)
        completions = [SimpleCompletion(text=c[cut:], type=_kind(c)) for c in found]
        # Ours alone when we have some (IPython suppresses only for a matcher with
        # completions: where we offer none, its ordinary completion answers).
        return {"completions": completions, "suppress": True}

    return complete_mentions


def _kind(completion: str) -> str:
    if completion.startswith("In["):
        return "cell"
    if completion.endswith("/"):
        return "folder"
    return "path" if "/" in completion or "." in completion else "variable"


def install(shell: Any) -> None:
    """Add the matcher to ``shell``'s completer (once)."""
    completer = getattr(shell, "Completer", None)
    if completer is None or not hasattr(completer, "custom_matchers"):
        return
    ours = [m for m in completer.custom_matchers if _ours(m)]
    if not ours:
        completer.custom_matchers.append(matcher(shell))


def uninstall(shell: Any) -> None:
    """Remove the matcher (``%unload_ext``)."""
    completer = getattr(shell, "Completer", None)
    if completer is not None and hasattr(completer, "custom_matchers"):
        completer.custom_matchers[:] = [m for m in completer.custom_matchers if not _ours(m)]


def _ours(matcher: Any) -> bool:
    return getattr(matcher, "matcher_identifier", None) == IDENTIFIER

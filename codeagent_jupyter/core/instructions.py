"""Project instructions: ``AGENTS.md`` and ``.codeagent/instructions.md`` at the workspace root.

A team writes what every request should assume ("our fiscal year starts in April", "use
polars") once, in the file other agents read. The text goes into the system message, read
once when the session is assembled, so the prefix of every request stays byte-identical and
the provider's prompt cache holds; it is recorded with the run's config (``AgentConfig
.instructions``).

The workspace is also where sandbox code writes, so the files are read through the confined
workspace (no symlinks, regular files only, never blocking) and bounded in size.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ..util.confined import ConfinementError, TooLargeError, Workspace

FILES = ("AGENTS.md", ".codeagent/instructions.md")
"""Where instructions are looked for, in this order, relative to the workspace root."""
MAX_CHARS = 8_000
"""Characters of one file placed in the system message; the rest is said to be cut."""
MAX_BYTES = 256_000
"""A file larger than this is not read at all."""


def _below(root: Path, folder: str) -> Workspace:
    """The confined workspace of ``root/folder``: ``.codeagent/`` is the server's own
    (masked in the sandbox, refused to the tools), so it is opened as a root of its own,
    and only when it is a real directory, never through a symlink."""
    if not folder:
        return Workspace(root)
    st = os.lstat(root / folder)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{folder} is not a directory")
    return Workspace(root / folder)


def read_instructions(workdir: Path) -> tuple[list[str], str]:
    """The instruction files that apply (names, or ``name (not read: why)``) and the text
    for the system message ("" when there are none)."""
    root = Path(workdir).resolve()
    named: list[str] = []
    blocks: list[str] = []
    for name in FILES:
        folder, _, leaf = name.rpartition("/")
        try:
            data = _below(root, folder).read_bytes(leaf, MAX_BYTES)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except TooLargeError as e:
            named.append(f"{name} (not read: {e.size} bytes, over {MAX_BYTES})")
            continue
        except (ConfinementError, OSError) as e:
            named.append(f"{name} (not read: {e})")
            continue
        text = data.decode("utf-8", "replace").strip()
        if not text:
            continue
        if len(text) > MAX_CHARS:
            text = text[:MAX_CHARS] + f"\n[… cut: {name} has {len(text):,} characters]"
        named.append(name)
        blocks.append(f"### {name}\n{text}")
    if not blocks:
        return named, ""
    head = (
        "## Project instructions\nThe user's project gives these instructions; follow them "
        "unless the request says otherwise."
    )
    return named, "\n\n".join([head, *blocks])


def recorded_instructions(notebook: Any) -> str:
    """The instructions a session notebook's runs were given (its recorded config), for a
    resume or fork: the system message stays what it was, and nothing sandbox code wrote
    into the workspace since becomes one."""
    meta = (getattr(notebook, "metadata", None) or {}).get("codeagent") or {}
    value = (meta.get("config") or {}).get("instructions", "")
    return value if isinstance(value, str) else ""

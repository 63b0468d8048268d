"""Project instructions: ``AGENTS.md`` and ``.codeagent/instructions.md`` at the workspace
root, then in the notebook's folder when that is another folder beneath it.

A team writes what every request should assume ("our fiscal year starts in April", "use
polars") once, in the file other agents read. The text goes into the system message, read
once when the session is assembled, so the prefix of every request stays byte-identical and
the provider's prompt cache holds; it is recorded with the run's config (``AgentConfig
.instructions``).

The workspace is also where sandbox code writes, so the files are read through the confined
workspace (no symlinks, regular files only, never blocking) and bounded in size. Which files
apply is said where the user looks (the CLI's first lines, the panel's header) as paths
relative to the root with their sizes, and recorded with the run (``config.extra_context
.instruction_files``), so a resume or fork names what it keeps.
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
HEAD = (
    "## Project instructions\nThe user's project gives these instructions; follow them "
    "unless the request says otherwise."
)


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


def _folders(root: Path, folder: Path | None) -> list[tuple[Path, str]]:
    """``(folder, prefix)`` to read, the root's first; the notebook's folder only when it
    is another folder beneath the root (its files named relative to the root)."""
    found = [(root, "")]
    if folder is not None:
        there = Path(folder).resolve()
        if there != root and there.is_relative_to(root):
            found.append((there, there.relative_to(root).as_posix() + "/"))
    return found


def read_instructions(workdir: Path, folder: Path | None = None) -> tuple[list[str], str]:
    """The instruction files that apply (``path (N bytes)``, or ``path (not read: why)``),
    and the text for the system message ("" when there are none): those at ``workdir`` (the
    workspace root), then those of the notebook's ``folder`` beneath it."""
    root = Path(workdir).resolve()
    named: list[str] = []
    blocks: list[str] = []
    for base, prefix in _folders(root, folder):
        for name in FILES:
            shown = prefix + name
            sub, _, leaf = name.rpartition("/")
            try:
                data = _below(base, sub).read_bytes(leaf, MAX_BYTES)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except TooLargeError as e:
                named.append(f"{shown} (not read: {e.size} bytes, over {MAX_BYTES})")
                continue
            except (ConfinementError, OSError) as e:
                named.append(f"{shown} (not read: {e})")
                continue
            text = data.decode("utf-8", "replace").strip()
            if not text:
                continue
            if len(text) > MAX_CHARS:
                text = text[:MAX_CHARS] + f"\n[… cut: {shown} has {len(text):,} characters]"
            named.append(f"{shown} ({len(data):,} bytes)")
            blocks.append(f"### {shown}\n{text}")
    if not blocks:
        return named, ""
    return named, "\n\n".join([HEAD, *blocks])


CLASS_NAME = "class instructions"
"""How the instructions of a class's policy are named beside the files."""


def with_class_instructions(given: str, named: list[str], text: str) -> tuple[list[str], str]:
    """``read_instructions``' result with a class's instructions (a hub policy's, already
    bounded) placed first: the class sets the frame, the project's files follow."""
    given = given.strip()
    if not given:
        return named, text
    blocks = text.removeprefix(HEAD).strip()
    size = len(given.encode())
    merged = "\n\n".join(x for x in [HEAD, f"### {CLASS_NAME}\n{given}", blocks] if x)
    return [f"{CLASS_NAME} ({size:,} bytes)", *named], merged


def recorded_instructions(notebook: Any) -> str:
    """The instructions a session notebook's runs were given (its recorded config), for a
    resume or fork: the system message stays what it was, and nothing sandbox code wrote
    into the workspace since becomes one."""
    meta = (getattr(notebook, "metadata", None) or {}).get("codeagent") or {}
    value = (meta.get("config") or {}).get("instructions", "")
    return value if isinstance(value, str) else ""


def recorded_instruction_files(notebook: Any) -> list[str]:
    """The instruction files a session notebook's runs were given (``read_instructions``'
    names, recorded in the config's ``extra_context``); [] for older notebooks."""
    meta = (getattr(notebook, "metadata", None) or {}).get("codeagent") or {}
    extra = (meta.get("config") or {}).get("extra_context") or {}
    value = extra.get("instruction_files") if isinstance(extra, dict) else None
    return [str(v) for v in value if isinstance(v, str)][:20] if isinstance(value, list) else []

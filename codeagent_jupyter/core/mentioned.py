"""What the files and cells a request mentions (``core.mentions``) add to it.

``@data.csv`` adds the file's text, ``@data/`` a listing of the folder, ``@In[3]`` or
``@cell:3`` the cell's source and outputs; ``@df`` was copied into the sandbox by the
user's kernel (as ``--with`` does) and is only named here. The workspace is where sandbox
code writes, so files are read through ``confined.Workspace`` (relative paths only, no
``..``, never through a symlink, regular files only) and everything is bounded. A mention
that names nothing is refused in one line (``UnknownMention``) before anything runs.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from ..util.confined import ConfinementError, TooLargeError, Workspace
from ..util.elision import elide_lines, read_hint
from ..util.textbounds import head_tail
from .mentions import CELL, MAX_MENTIONS, VARIABLE, Mention, parse

FILE_CHARS = 12_000
"""Characters of one mentioned file placed in the request; the rest is cut with a hint."""
MAX_FILE_BYTES = 4_000_000
"""A file larger than this is named with its size, not read."""
LISTING_ENTRIES = 100
CELL_CHARS = 6_000
OUTPUT_CHARS = 3_000
SECTION_CHARS = 48_000
"""All mentions of one message together, at most."""


class UnknownMention(ValueError):
    """A mention that names no variable, file, folder or cell; its text is the one line."""


def resolve(
    text: str,
    workdir: Path,
    notebook: Any | None,
    variables: list[str],
    *,
    strict: bool = True,
) -> str:
    """The section the mentions of ``text`` add to the request ("" when there are none);
    ``variables``: the names copied into the sandbox for this session. Not ``strict`` (a
    chat, where ``@name`` is as often a person), a mention of nothing is left as text."""
    mentions = parse(text)
    if not mentions:
        return ""
    if len(mentions) > MAX_MENTIONS:
        raise UnknownMention(f"at most {MAX_MENTIONS} @-mentions in one message")
    ws = Workspace(workdir)
    blocks = []
    for mention in mentions:
        try:
            blocks.append(_block(mention, ws, notebook, variables))
        except UnknownMention:
            if strict:
                raise
    if not blocks:
        return ""
    return "## Mentioned\nThe user pointed at these:\n\n" + head_tail(
        "\n\n".join(blocks), SECTION_CHARS
    )


def _block(mention: Mention, ws: Workspace, notebook: Any | None, variables: list[str]) -> str:
    if mention.kind == CELL:
        return _cell(mention, notebook)
    if mention.kind == VARIABLE and mention.value in variables:
        return f"### {mention.text}\nThe variable {mention.value}, copied into your sandbox."
    found = _path(mention, ws)
    if found is not None:
        return found
    if mention.kind == VARIABLE:
        raise UnknownMention(
            f"{mention.text}: not a variable copied from your kernel into the sandbox, nor "
            "a file or folder in the notebook's folder"
        )
    raise UnknownMention(f"{mention.text}: no such file or folder in the notebook's folder")


def _path(mention: Mention, ws: Workspace) -> str | None:
    """The file's text or the folder's listing; ``None`` when nothing is there; a path that
    leaves the folder or passes through a symlink is refused, never followed."""
    path = mention.value.rstrip("/") or "."
    try:
        kind = ws.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (ConfinementError, OSError) as e:
        raise UnknownMention(f"{mention.text}: refused ({e})") from None
    if stat.S_ISDIR(kind):
        return _listing(mention, ws, path)
    try:
        data = ws.read_bytes(path, MAX_FILE_BYTES)
    except TooLargeError as e:
        return f"### {mention.text}\nA file of {e.size:,} bytes: too large to include; read it."
    except (ConfinementError, OSError) as e:
        raise UnknownMention(f"{mention.text}: refused ({e})") from None
    if b"\x00" in data[:8192]:
        return f"### {mention.text}\nA binary file of {len(data):,} bytes."
    body = elide_lines(
        data.decode("utf-8", "replace"), FILE_CHARS, read_hint(path), source=path.endswith(".py")
    )
    return f"### {mention.text} (file {path}, {len(data):,} bytes)\n```\n{body}\n```"


def _listing(mention: Mention, ws: Workspace, path: str) -> str:
    entries = []
    try:
        for entry in ws.walk(path, max_entries=LISTING_ENTRIES + 1):
            suffix = "/" if entry.kind == "dir" else f" ({entry.size:,} bytes)"
            entries.append(f"- {entry.path}{suffix}")
    except (ConfinementError, OSError) as e:
        raise UnknownMention(f"{mention.text}: refused ({e})") from None
    more = "\n… and more" if len(entries) > LISTING_ENTRIES else ""
    shown = "\n".join(entries[:LISTING_ENTRIES]) or "(empty)"
    return f"### {mention.text} (folder {path})\n{shown}{more}"


def _cell(mention: Mention, notebook: Any | None) -> str:
    cells = [c for c in (notebook or {}).get("cells", []) if isinstance(c, dict)]
    kind, _, number = mention.value.partition(":")
    chosen = None
    if kind == "cell":
        position = int(number)
        chosen = cells[position - 1] if 1 <= position <= len(cells) else None
    else:
        count = int(mention.value[3:-1])
        ran = [c for c in cells if c.get("execution_count") == count]
        chosen = ran[-1] if ran else None
    if chosen is None:
        raise UnknownMention(f"{mention.text}: no such cell in the notebook")
    source = _text(chosen.get("source", ""))
    block = f"### {mention.text}\n```python\n{elide_lines(source, CELL_CHARS)}\n```"
    shown = _outputs(chosen.get("outputs") or [])
    if shown:
        block += "\nOutput:\n" + head_tail(shown, OUTPUT_CHARS)
    return block


def _outputs(outputs: list[Any]) -> str:
    """Text of a cell's outputs: nbformat's, or a live cell's (``{"output_type", "text"}``)."""
    texts = []
    for out in outputs[:50]:
        if not isinstance(out, dict):
            continue
        if out.get("output_type") == "error" and "ename" in out:
            texts.append(f"{out.get('ename')}: {out.get('evalue')}")
        elif "text" in out:
            texts.append(_text(out["text"]))
        elif isinstance(out.get("data"), dict):
            data = out["data"]
            plain = data.get("text/plain")
            texts.append(_text(plain) if plain is not None else f"[{', '.join(sorted(data))}]")
    return "\n".join(t.rstrip("\n") for t in texts if t)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value)

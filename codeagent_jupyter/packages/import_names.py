"""What to ``import`` after installing a wheel: its top-level modules.

A distribution's name says little about its module (``sentronic-sdx`` installs ``sdxio``),
and a model that guesses spends a step listing the wheel's files. The wheel says it: its
``.dist-info/top_level.txt`` when the builder wrote one, else the first path part of each
file in its ``RECORD``. The wheel came from an index, so both are read as hostile input:
bounded in bytes and in count, every name checked to be a plain identifier, nothing of
it executed or written anywhere.
"""

from __future__ import annotations

import keyword
import zipfile
from pathlib import Path

MAX_NAMES = 8
"""Names reported for one wheel; more are summed up as ``(+N more)``."""
MAX_TOP_LEVEL_BYTES = 16_000
"""``top_level.txt`` read up to this many bytes."""
MAX_RECORD_BYTES = 2_000_000
"""``RECORD`` read up to this many bytes (a large package's lists some 10,000 files)."""
MAX_NAME_CHARS = 100


def _identifier(name: str) -> bool:
    return (
        0 < len(name) <= MAX_NAME_CHARS
        and name.isascii()
        and name.isidentifier()
        and not keyword.iskeyword(name)
    )


def _read(archive: zipfile.ZipFile, member: str, limit: int) -> str | None:
    """The member's text when it exists and is within ``limit`` bytes, else ``None``."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        return None
    if info.file_size > limit:
        return None
    with archive.open(info) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        return None
    return data.decode("utf-8", "replace")


def _dist_info(archive: zipfile.ZipFile) -> str | None:
    """The wheel's one ``.dist-info`` folder at the archive's top level."""
    found = {
        n.split("/", 1)[0]
        for n in archive.namelist()
        if "/" in n and n.split("/", 1)[0].endswith(".dist-info")
    }
    return found.pop() if len(found) == 1 else None


def _from_top_level(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _from_record(text: str) -> list[str]:
    """First path parts of the RECORD's files: a package folder, or a ``name.py`` module;
    metadata folders, ``.data`` folders and other files are not importable names."""
    names: list[str] = []
    for line in text.splitlines():
        path = line.split(",", 1)[0].strip().strip('"')
        head, sep, _rest = path.partition("/")
        if sep:
            if head.endswith((".dist-info", ".data")):
                continue
            names.append(head)
        elif head.endswith(".py"):
            names.append(head[: -len(".py")])
        elif head.endswith((".so", ".pyd")) and "." in head:
            names.append(head.split(".", 1)[0])
    return names


def import_names(wheel: Path) -> list[str]:
    """The top-level modules ``wheel`` installs (sorted, private ``_name``s after the
    public ones, at most ``MAX_NAMES`` plus a ``+N more`` entry); ``[]`` when the wheel
    says nothing readable."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            dist_info = _dist_info(archive)
            if dist_info is None:
                return []
            text = _read(archive, f"{dist_info}/top_level.txt", MAX_TOP_LEVEL_BYTES)
            raw = _from_top_level(text) if text is not None else []
            if not raw:
                record = _read(archive, f"{dist_info}/RECORD", MAX_RECORD_BYTES)
                raw = _from_record(record) if record is not None else []
    except (OSError, zipfile.BadZipFile, ValueError):
        return []
    names = sorted({n for n in raw if _identifier(n)}, key=lambda n: (n.startswith("_"), n))
    if len(names) > MAX_NAMES:
        return [*names[:MAX_NAMES], f"(+{len(names) - MAX_NAMES} more)"]
    return names

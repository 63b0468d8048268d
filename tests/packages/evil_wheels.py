"""Wheels that try to get out of the overlay, made here entry by entry: a path that climbs
(``../x``), an absolute path, a symbolic link, a RECORD naming a path outside, a setuid
file, a ``.pth`` that would run code at interpreter start."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

from tests.packages.index import _record_hash

WHEEL = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def raw_wheel(
    folder: Path,
    name: str,
    version: str,
    entries: dict[str, bytes],
    *,
    modes: dict[str, int] | None = None,
    record_extra: tuple[str, ...] = (),
) -> Path:
    """A wheel of ``name`` holding exactly ``entries`` (archive name -> bytes, no checks)
    beside a valid ``.dist-info``; ``modes``: the Unix mode stored for an entry (e.g. a
    symlink or a setuid file); ``record_extra``: more RECORD lines, as written."""
    dist = f"{name}-{version}"
    files = {f"{name}/__init__.py": f"__version__ = {version!r}\n".encode(), **entries}
    files[f"{dist}.dist-info/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    ).encode()
    files[f"{dist}.dist-info/WHEEL"] = WHEEL.encode()
    record = [f"{p},{_record_hash(d)},{len(d)}" for p, d in files.items()]
    record += [*record_extra, f"{dist}.dist-info/RECORD,,"]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry, data in files.items():
            info = zipfile.ZipInfo(entry, date_time=(2020, 1, 1, 0, 0, 0))
            mode = (modes or {}).get(entry, stat.S_IFREG | 0o644)
            info.external_attr = mode << 16
            info.create_system = 3  # Unix, so the mode counts
            zf.writestr(info, data)
    return path

"""What a wheel file says it is: its file name and its own METADATA must agree with what
it is installed as.

A file is found by its sha256 (in the cache) or picked by its file name (on an index), but
what it *is* is what its ``.dist-info/METADATA`` says. Before a wheel is installed (a new
plan or a reinstall) its file name and METADATA must name the package and version it is
installed as, and its METADATA must name no requirement by direct URL: an edited session
notebook that records ``rt3ok==1.0`` with another wheel's sha256 gets nothing installed.
"""

from __future__ import annotations

import zipfile
from email.parser import HeaderParser
from pathlib import Path

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    canonicalize_version,
    parse_wheel_filename,
)

from ..errors import ToolError
from .walk import direct_url_refusal

MAX_METADATA = 1024 * 1024
"""The most bytes of a METADATA file read (a real one is a few kB)."""


def metadata_of(path: Path) -> tuple[str, str, list[str]]:
    """The normalised name, the version and the ``Requires-Dist`` lines of the wheel at
    ``path``, from its own METADATA; ``ToolError`` when it has none (or several)."""
    shown = path.name[:120]
    try:
        with zipfile.ZipFile(path) as archive:
            found = [
                info
                for info in archive.infolist()
                if info.filename.count("/") == 1 and info.filename.endswith(".dist-info/METADATA")
            ]
            if len(found) != 1 or found[0].file_size > MAX_METADATA:
                raise ToolError(f"install_packages: {shown} has no single readable METADATA")
            with archive.open(found[0]) as f:
                text = f.read(MAX_METADATA).decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile) as e:
        raise ToolError(f"install_packages: {shown} is not a readable wheel: {e}") from None
    headers = HeaderParser().parsestr(text)
    name, version = str(headers.get("Name", "")), str(headers.get("Version", ""))
    return (
        canonicalize_name(name),
        version,
        [str(r) for r in headers.get_all("Requires-Dist") or []],
    )


def check_wheel(path: Path, name: str, version: str) -> None:
    """Refuse (``ToolError``, one line) the wheel at ``path`` unless its file name and its
    METADATA both say ``name`` ``version`` and it names no requirement by URL."""
    try:
        file_name, file_version, _build, _tags = parse_wheel_filename(path.name)
    except InvalidWheelFilename:
        raise ToolError(f"install_packages: {path.name[:120]!r} is not a wheel file name") from None
    meta_name, meta_version, requires = metadata_of(path)
    want = (canonicalize_name(name), canonicalize_version(version))
    for what, said_name, said_version in (
        ("its file name", file_name, str(file_version)),
        ("its METADATA", meta_name, meta_version),
    ):
        if (said_name, canonicalize_version(said_version)) != want:
            raise ToolError(
                f"install_packages: the wheel installed as {name}=={version} is "
                f"{said_name[:80]}=={said_version[:40]} by {what}; refusing it"
            )
    refusal = direct_url_refusal(name, version, requires)
    if refusal is not None:
        raise ToolError(f"install_packages: {refusal}")

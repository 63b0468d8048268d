"""Untrusted wheels unpacked in the server: nothing gets out of the overlay, nothing of a
wheel runs, a file that is not the resolved one is refused, and modes stay plain.

Each test publishes a hostile wheel on the real index on 127.0.0.1, resolves it with pip and
installs it into an overlay folder (as for a sandbox), then looks at the whole tree around
the overlay for anything written outside it."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ToolError
from codeagent_jupyter.packages import Installer, PackagePolicy
from tests.packages.evil_wheels import raw_wheel
from tests.packages.index import make_wheel


def _installer(served) -> Installer:
    return Installer(PackagePolicy(index_url=served.url, cache_dir=str(served.cache)))


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


async def _attempt(served, tmp_path: Path, wheel: Path) -> tuple[Path, set[Path], Exception | None]:
    """Publish ``wheel``, install it into ``tmp_path/box/overlay``; what the box then holds
    outside the overlay, and the refusal (if any)."""
    served.index.add(wheel)
    box = tmp_path / "box"
    overlay = box / "overlay"
    overlay.mkdir(parents=True)
    installer = _installer(served)
    name = wheel.name.split("-")[0]
    refused = None
    try:
        plan = await installer.plan([name], {})
        await installer.install(plan, overlay)
    except ToolError as e:
        refused = e
    outside = {p for p in _files(tmp_path) if not p.is_relative_to(overlay)}
    outside = {p for p in outside if p.is_relative_to(box)}
    return overlay, outside, refused


async def test_an_entry_that_climbs_out_writes_nothing_outside(served, tmp_path: Path) -> None:
    wheel = raw_wheel(tmp_path / "b", "climber", "1.0", {"../../escaped.txt": b"out"})
    overlay, outside, refused = await _attempt(served, tmp_path, wheel)
    assert outside == set()
    assert not (tmp_path / "escaped.txt").exists()
    assert refused is not None and "\n" not in str(refused)
    assert "outside" in str(refused)
    assert not (overlay / "climber").exists()  # refused before any file was written


async def test_an_absolute_entry_writes_nothing_there(served, tmp_path: Path) -> None:
    target = tmp_path / "box" / "absolute-escaped.txt"
    wheel = raw_wheel(tmp_path / "b", "absolute", "1.0", {str(target): b"out"})
    _, outside, refused = await _attempt(served, tmp_path, wheel)
    assert not target.exists() and outside == set()
    assert refused is not None and "outside" in str(refused)


async def test_a_symlink_entry_is_refused_and_nothing_is_written_through_it(
    served, tmp_path: Path
) -> None:
    modes = {"linker/data": stat.S_IFLNK | 0o777}
    wheel = raw_wheel(tmp_path / "b", "linker", "1.0", {"linker/data": b"../.."}, modes=modes)
    overlay, outside, refused = await _attempt(served, tmp_path, wheel)
    assert outside == set()
    assert not any(p.is_symlink() for p in overlay.rglob("*"))
    assert refused is not None and "symbolic link" in str(refused)


async def test_a_record_path_that_climbs_out_is_refused(served, tmp_path: Path) -> None:
    victim = tmp_path / "box" / "victim.txt"
    victim.parent.mkdir(parents=True)
    victim.write_text("keep me")
    wheel = raw_wheel(tmp_path / "b", "recorder", "1.0", {}, record_extra=("../victim.txt,,",))
    served.index.add(wheel)
    overlay = tmp_path / "box" / "overlay"
    overlay.mkdir()
    installer = _installer(served)
    plan = await installer.plan(["recorder"], {})
    with pytest.raises(ToolError, match="outside"):
        await installer.install(plan, overlay)
    assert not (overlay / "recorder").exists()
    assert victim.read_text() == "keep me"


async def test_an_upgrade_never_removes_what_an_old_record_names_outside(
    served, tmp_path: Path
) -> None:
    """An overlay holding an earlier version whose RECORD names a file outside (as any
    installer may have left it): replacing that version removes its files, not that one."""
    victim = tmp_path / "box" / "victim.txt"
    overlay = tmp_path / "box" / "overlay"
    old = overlay / "tinydep-0.9.dist-info"
    old.mkdir(parents=True)
    victim.write_text("keep me")
    (overlay / "tinydep").mkdir()
    (overlay / "tinydep" / "__init__.py").write_text("__version__ = '0.9'\n")
    (old / "METADATA").write_text("Metadata-Version: 2.1\nName: tinydep\nVersion: 0.9\n")
    (old / "RECORD").write_text(
        f"tinydep/__init__.py,,\n../victim.txt,,\n{victim},,\ntinydep-0.9.dist-info/RECORD,,\n"
    )
    installer = _installer(served)
    plan = await installer.plan(["tinydep==1.0"], {})
    await installer.install(plan, overlay)
    assert victim.read_text() == "keep me"
    assert not old.exists() and (overlay / "tinydep-1.0.dist-info").is_dir()
    assert "1.0" in (overlay / "tinydep" / "__init__.py").read_text()


async def test_a_wheel_whose_sha256_is_not_the_resolved_one_is_refused(
    served, tmp_path: Path
) -> None:
    """The index's page (and the metadata pip resolved with) name one file; the body it
    then serves is another."""
    honest = make_wheel(tmp_path / "b", "swapped", "1.0")
    published = served.index.add(honest)
    other = make_wheel(tmp_path / "other", "swapped", "1.0", code="import os  # not it\n")
    published.write_bytes(other.read_bytes())  # the pages still state the honest hash
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    installer = _installer(served)
    with pytest.raises(ToolError) as refused:
        plan = await installer.plan(["swapped"], {})
        await installer.install(plan, overlay)
    assert "sha256" in str(refused.value) and "\n" not in str(refused.value)
    assert list(overlay.iterdir()) == []
    assert not list(served.cache.rglob("swapped-*.whl"))  # never kept in the cache


async def test_modes_stay_plain_and_nothing_of_the_wheel_runs_in_the_server(
    served, tmp_path: Path
) -> None:
    marker = tmp_path / "wheel-code-ran"
    hook = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n"
    modes = {
        "moded/tool.sh": stat.S_IFREG | 0o6755,  # setuid and setgid
        "moded/sticky.txt": stat.S_IFREG | 0o1666,  # sticky, world-writable
    }
    entries = {
        "moded/tool.sh": b"#!/bin/sh\necho hi\n",
        "moded/sticky.txt": b"x",
        "moded-hook.pth": hook.encode(),
        "sitecustomize.py": hook.encode(),
    }
    wheel = raw_wheel(tmp_path / "b", "moded", "1.0", entries, modes=modes)
    overlay, outside, refused = await _attempt(served, tmp_path, wheel)
    assert refused is None and outside == set()
    tool, sticky = overlay / "moded" / "tool.sh", overlay / "moded" / "sticky.txt"
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755
    assert stat.S_IMODE(sticky.stat().st_mode) == 0o644
    for path in overlay.rglob("*"):
        assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX), path
    assert (overlay / "moded-hook.pth").is_file()
    installer = _installer(served)
    again = await installer.plan(["tinydep"], {"moded": "1.0"})  # pip starts again
    await installer.install(again, overlay)
    assert not marker.exists()  # neither the server nor its pip ran the wheel's code
    # …while a Python that has the overlay as a site folder would: the hook is real.
    subprocess.run(
        [sys.executable, "-c", f"import site; site.addsitedir({str(overlay)!r})"], check=True
    )
    assert marker.exists()

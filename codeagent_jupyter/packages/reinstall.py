"""The files of a recorded install, found again by name, version and sha256 only.

A session notebook records each installed wheel's name, version, sha256, file name, index
and URL, and anyone may have edited it. A reinstall (resume, fork, replay) believes none of
the places it names: each wheel comes from the shared cache by its sha256, or else from
*today's* policy sources, asked by pip for ``name==version`` pinned to that sha256 (a hash
pip checks itself). A cached file counts only when it came from one of today's sources
(the cache notes where each came from), so a source the administrator has since removed
serves nothing through the cache either. Every file, cached or downloaded, must be that
package and version by its file name and its own METADATA (``identity``) before anything
is unpacked. A wheel downloaded for it joins the cache only once all of them have passed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from ..errors import ToolError
from . import pip
from .cache import WheelCache, digest
from .identity import check_wheel
from .pip import PackageError
from .policy import PackagePolicy
from .wheels import Wheel


async def restore_files(
    wheels: list[Wheel],
    cache: WheelCache,
    policy: PackagePolicy,
    *,
    python: str = sys.executable,
    max_file_bytes: int,
    proxy: str | None = None,
) -> dict[str, Path]:
    """Name -> the verified file (in the cache) of each recorded wheel; ``ToolError`` in
    one line when one cannot be had from the cache or today's sources, or is not what it
    was recorded as."""
    files: dict[str, Path] = {}
    missing: list[Wheel] = []
    today = set(policy.sources)
    for wheel in wheels:
        cached = cache.get(wheel.sha256) if cache.sources(wheel.sha256) & today else None
        if cached is None:
            missing.append(wheel)
            continue
        check_wheel(cached, wheel.name, wheel.version)
        files[wheel.name] = cached
    if not missing:
        return files
    staging = Path(tempfile.mkdtemp(prefix="restore-", dir=cache.staging()))
    try:
        pins = [(w.name, w.version, w.sha256) for w in missing]
        try:
            got = await pip.download_pinned(
                pins,
                policy.pip_options(),
                staging,
                max_file_bytes=max_file_bytes,
                python=python,
                proxy=proxy,
            )
        except PackageError as e:
            if "HASH" in str(e).upper():
                raise _changed(missing) from None
            raise ToolError(f"install_packages: could not reinstall: {e}") from None
        by_digest = {digest(path): path for path in got}
        for wheel in missing:
            path = by_digest.get(wheel.sha256)
            if path is None:
                raise _changed(missing)
            check_wheel(path, wheel.name, wheel.version)
        for wheel in missing:
            path = by_digest[wheel.sha256]
            files[wheel.name] = cache.put(path, wheel.sha256, path.name, policy.sources)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return files


def _changed(wheels: list[Wheel]) -> ToolError:
    return ToolError(
        "install_packages: today's package sources serve files that are not the recorded "
        f"ones (sha256 differs) for {', '.join(w.pin() for w in wheels)}; refusing them"
    )

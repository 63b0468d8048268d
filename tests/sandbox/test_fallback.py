"""Where bubblewrap and unshare are missing (e.g. Binder), the sandbox still runs and says so."""

from __future__ import annotations

import os
from pathlib import Path

from codeagent_jupyter.sandbox import Sandbox

from .conftest import SMALL


async def test_without_bwrap_or_unshare_claims_only_rlimits(tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    saved = os.environ["PATH"]
    os.environ["PATH"] = str(empty_bin)  # the launcher finds neither tool
    try:
        async with Sandbox(workdir=tmp_path, limits=SMALL) as sb:
            r = await sb.execute("import os; print(os.getcwd())\nb = bytearray(2 << 30)")
    finally:
        os.environ["PATH"] = saved
    for key in ("network", "filesystem", "pid"):
        assert sb.enforcement[key] == "none"
    assert sb.enforcement["memory"] == "rlimit"
    assert r.status == "error" and "MemoryError" in r.text
    assert r.text.startswith(str(tmp_path.resolve()))

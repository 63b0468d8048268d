"""Without bubblewrap (e.g. on Binder) the sandbox runs only when chosen, and says so."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV

from .conftest import SMALL


@pytest.mark.parametrize("tools", [(), ("unshare",)], ids=["no-tools", "unshare-only"])
async def test_without_bwrap_claims_only_what_it_applied(
    tmp_path: Path, tools: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv(BWRAP_ENV, "system")  # not the bundled bwrap either
    saved = os.environ["PATH"]
    os.environ["PATH"] = str(bin_dir)  # the launcher sees only these tools
    try:
        async with Sandbox(workdir=tmp_path, limits=SMALL, allow_unconfined=True) as sb:
            r = await sb.execute("import os; print(os.getcwd())\nb = bytearray(2 << 30)")
            net = await sb.execute("import socket\nsocket.create_connection(('127.0.0.1', 9), 1)")
    finally:
        os.environ["PATH"] = saved
    assert sb.enforcement["filesystem"] == "none"
    assert sb.enforcement["pid"] in (("unshare", "none") if tools else ("none",))
    assert sb.enforcement["memory"].startswith("rlimit")
    assert r.status == "error" and "MemoryError" in r.text
    assert r.text.startswith(str(tmp_path.resolve()))
    if not tools:
        assert sb.enforcement["network"] == "none"
        assert "Connection refused" in net.text  # loopback reachable: nothing claimed
    elif sb.enforcement["network"] == "unshare":
        assert "Network is unreachable" in net.text
    else:
        pytest.skip("unshare -n is not permitted here")

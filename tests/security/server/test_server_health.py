"""``GET health`` says whether sandboxes run unconfined, what is missing, and the warning.

What the server passes (``allow_unconfined``) and what it reports are asserted; whether a
sandbox without isolation may start at all is the launcher's decision, not checked here.
"""

from __future__ import annotations

import ctypes
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.sandbox import report
from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV
from tests.scripted_model import text
from tests.server.helpers import Api


def _dumpable() -> int:
    return int(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE


@pytest.mark.codeagent(pool_size=1)
async def test_health_reports_confinement(api: Api) -> None:
    health = await api.ok("GET", "health")
    # The server runs in this process: holding the key, it made itself undumpable.
    assert not sys.platform.startswith("linux") or _dumpable() == 0
    sandbox = health["sandbox"]
    assert sandbox["allow_unconfined"] is False  # the default, passed to every sandbox
    enforcement = sandbox["enforcement"]
    if enforcement is None:  # no sandbox could start (a machine without isolation)
        pool = health["pool"]
        assert health["unconfined"] is None and (pool.get("error") or pool.get("last_error"))
        return
    assert health["unconfined"] is sandbox["unconfined"] is report.is_unconfined(enforcement)
    assert sandbox["gaps"] == report.gaps(enforcement)
    assert sandbox["warning"] == report.warning(enforcement)
    if enforcement.get("pid") not in (None, "none"):
        assert health["unconfined"] is False and sandbox["warning"] is None


@pytest.mark.codeagent(allow_unconfined=True)
async def test_health_warns_when_sandboxes_are_unconfined(
    api: Api, scripted_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "bin"  # a machine without bubblewrap or unshare
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    assert shutil.which("bwrap", path=str(bare)) is None
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setenv(BWRAP_ENV, "system")  # not the bundled bwrap either
    health = await api.ok("GET", "health")
    assert health["sandbox"]["allow_unconfined"] is True
    assert health["unconfined"] is None  # nothing started yet: not known

    scripted_model.set_script([text("hi")])
    sid = (await api.start("hello"))["id"]
    await api.run_to_end(sid)
    health = await api.ok("GET", "health")
    sandbox = health["sandbox"]
    assert health["unconfined"] is True and sandbox["unconfined"] is True
    assert {"filesystem", "pid"} <= set(sandbox["gaps"])
    assert sandbox["warning"].startswith("WARNING: the sandbox is UNCONFINED")
    assert sandbox["warning"] == report.warning(sandbox["enforcement"])

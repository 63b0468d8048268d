"""``c.CodeAgent.start = "zygote"``: the server's sandboxes, the pooled one included, are forks
of one zygote serving its root, with the data stack already imported; health says so; stopping
the server ends the zygote and every fork."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codeagent_jupyter.sandbox import bubblewrap
from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, descendants

PROBE = "import os, sys\nprint('pandas' in sys.modules, os.getuid())"


@pytest.mark.codeagent(start="zygote", pool_size=1)
async def test_sessions_are_forks_and_stopping_ends_the_zygote(
    api: Api, scripted_model: Any, jp_serverapp: Any
) -> None:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed")
    before = set(descendants())
    for prompt in ("first", "second"):  # the pooled fork, then one forked on demand
        scripted_model.set_script([tool_calls(("run_cell", {"code": PROBE})), text("done")])
        session = await api.start(prompt)
        events = await api.run_to_end(session["id"])
        finished = [e for e in events if e["type"] == "tool_call_finished"]
        assert finished and "True 65534" in str(finished[0]), events
    health = await api.ok("GET", "health")
    assert health["sandbox"]["backend"]["start"] == "zygote"
    assert health["sandbox"]["enforcement"]["start"] == "zygote", health["sandbox"]
    spawned = {pid: cmd for pid, cmd in descendants().items() if pid not in before}
    assert any("codeagent_jupyter.sandbox.zygote" in cmd for cmd in spawned.values()), spawned

    await jp_serverapp._cleanup()  # what stopping the server does
    await asyncio.sleep(0.5)
    left = {pid: cmd for pid, cmd in descendants().items() if pid in spawned}
    assert left == {}, f"processes left after shutdown: {left}"

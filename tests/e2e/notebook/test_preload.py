"""Preloaded libraries: pooled sandboxes import them before they are handed out, and the
model is told which are there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.sandbox import SandboxPool
from codeagent_jupyter.server.app import CodeAgent
from codeagent_jupyter.widget.client import AgentClient
from tests.scripted_model import text

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=30)


async def test_pooled_sandboxes_come_with_their_imports(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    work = tmp_path / "work"
    work.mkdir()
    modules = ["pandas", "matplotlib.pyplot", "json", "no_such_module_here"]
    async with SandboxPool(size=1, workdir=work, limits=LIMITS, preload=modules) as pool:
        sandbox = await pool.acquire()
        try:
            assert sandbox.preloaded == ["pandas as pd", "matplotlib.pyplot as plt", "json"]
            r = await sandbox.execute(
                "import sys\nprint(pd.__name__, plt.__name__, json.__name__, "
                "'pandas' in sys.modules, 'no_such_module_here' in sys.modules)"
            )
            assert r.text.strip() == "pandas matplotlib.pyplot json True False"
            assert r.execution_count == 1  # the preload left no trace in the history
        finally:
            await sandbox.shutdown()


@pytest.mark.agent_settings(preload=["json", "matplotlib.pyplot"])
def test_the_model_is_told_what_is_preloaded(
    run: Any, client: AgentClient, scripted_model: Any
) -> None:
    scripted_model.set_script([text("ok")])

    async def scenario() -> None:
        started = await client.start("plot something")
        async for event in client.events(started["id"]):
            if event.type == "run_finished":
                break

    run(scenario())
    sent = json.dumps(scripted_model.requests[0]["messages"])
    assert "Already imported in your sandbox" in sent
    assert "json, matplotlib.pyplot as plt." in sent


def test_preload_setting_takes_module_names_only() -> None:
    with pytest.raises(ValueError, match="is not a module name"):
        CodeAgent(preload=["os; import shutil"])
    assert CodeAgent(preload=[]).preload_modules() == []
    assert "numpy" in CodeAgent().preload_modules()  # the default: what is installed

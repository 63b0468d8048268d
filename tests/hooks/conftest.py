"""A third-party hook package, installed the way pip installs one: a module and a dist-info
folder with ``entry_points.txt`` on the import path (so ``importlib.metadata`` finds it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import *  # noqa: F403  (the real server, for the server test)
from tests.server.conftest import pytest_configure  # noqa: F401

PLUGIN = """
import time


class Raising:
    def __init__(self, **options):
        self.options = options

    def before_tool(self, call):
        raise RuntimeError("the policy server is down")


class Slow:
    def __init__(self, seconds=30):
        self.seconds = seconds

    async def before_tool(self, call):
        import asyncio
        await asyncio.sleep(self.seconds)


class Rewrite:
    def before_tool(self, call):
        from codeagent_jupyter.hooks import Modify
        if call.name == "run_cell":
            return Modify({"code": "print('rewritten by a hook')"})


class Odd:
    def before_tool(self, call):
        return "yes please"
"""


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A folder holding the ``agent_hooks_demo`` distribution; put it on ``sys.path``."""
    site = tmp_path / "site"
    (site / "agent_hooks_demo-1.0.dist-info").mkdir(parents=True)
    (site / "agent_hooks_demo.py").write_text(PLUGIN)
    info = site / "agent_hooks_demo-1.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-hooks-demo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[codeagent_jupyter.hooks]\n"
        "raising = agent_hooks_demo:Raising\n"
        "slow = agent_hooks_demo:Slow\n"
        "rewrite = agent_hooks_demo:Rewrite\n"
        "odd = agent_hooks_demo:Odd\n"
    )
    return site


@pytest.fixture
def plugin(plugin_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(plugin_path))
    return plugin_path

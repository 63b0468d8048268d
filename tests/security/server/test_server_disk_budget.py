"""The sparse-file attack through the server: a session with ``disk_mb`` 16 and a helper.

The same attack as ``tests/security/test_disk_budget.py`` makes through the CLI, through
the server's REST API and event stream: six sparse 48 MiB files stop the run at the cell
that made them, before any helper is offered a copy; made by a thread after its cell has
returned, they still never reach a helper's workspace, whose copy is refused first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripted_model import delay, text, tool_calls
from tests.security.test_disk_budget import (
    HELPER_TASK,
    LATER,
    SPARSE,
    _parent_and_helper,
    stopped_at,
)
from tests.server.helpers import Api, of_type


@pytest.mark.codeagent(
    limits={"cell_timeout": 60, "memory_mb": 1024, "disk_mb": 16},
    delegate_max_per_call=1,
    allow_unconfined=True,  # about the budget, not isolation: also where bwrap is missing
)
async def test_sparse_files_through_the_server(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    helper_turns = [tool_calls(("run_cell", {"code": "print('helper ran')"})), text("seen")]
    scripted_model.set_script(
        _parent_and_helper(
            [
                tool_calls(("run_cell", {"code": SPARSE})),
                tool_calls(("delegate", {"tasks": [HELPER_TASK]})),
                text("done"),
            ],
            helper_turns,
        )
    )
    sid = (await api.start("go"))["id"]
    events = await api.run_to_end(sid)
    assert events[-1]["status"] == "error"
    stopped_at(events[-1]["reason"])  # the sandbox stopped at the first file past the budget
    (cell,) = of_type(events, "tool_call_finished")
    assert cell["name"] == "run_cell" and events[-1]["reason"] in cell["note"]
    assert of_type(events, "child_event") == []  # no helper was started
    assert len(scripted_model.requests) == 1

    for path in jp_root_dir.glob("sparse*.bin"):
        path.unlink()
    scripted_model.set_script(
        _parent_and_helper(
            [
                tool_calls(("run_cell", {"code": LATER})),
                delay(4.0, tool_calls(("delegate", {"tasks": [HELPER_TASK]}))),
                tool_calls(("run_cell", {"code": "print('after')"})),
                text("done"),
            ],
            helper_turns,
        )
    )
    sid = (await api.start("go again"))["id"]
    events = await api.run_to_end(sid)
    delegated = next(e for e in of_type(events, "tool_call_finished") if e["name"] == "delegate")
    assert '"status": "error"' in delegated["result"]
    assert "the helper could not run: restoring the snapshot (" in delegated["result"]
    assert "disk budget of 16 MiB" in delegated["result"]
    assert not any(
        e["event"]["type"] == "tool_call_started" for e in of_type(events, "child_event")
    )  # the helper never ran a cell
    assert events[-1]["status"] == "error"
    stopped_at(events[-1]["reason"])

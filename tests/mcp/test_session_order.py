"""An MCP call's reply comes before its recording and snapshot, and nothing comes between.

``ToolSession`` holds a call's ``ToolCallFinished`` (what the snapshot, the recorder and
the hooks act on) until the reply is on its way; the next call delivers it before it runs.
Here the file tools run on a real workspace with the real snapshot store (no kernel is
needed for them), the calls made back to back without a pause between them.
"""

from __future__ import annotations

import asyncio

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.mcp.session import SETTLE_S, ToolSession, sandbox_tools
from codeagent_jupyter.record.snapshot_sink import SnapshotRecorder
from codeagent_jupyter.record.snapshots import SnapshotStore


def finished(seen: list[ev.Event]) -> list[int]:
    return [e.step for e in seen if isinstance(e, ev.ToolCallFinished)]


async def test_the_reply_comes_first_and_each_call_is_recorded_before_the_next_runs(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    meta: dict = {}
    snapshots = SnapshotRecorder(SnapshotStore(tmp_path / "store"), work, meta, session="s1")
    seen: list[ev.Event] = []
    tools = ToolSession(sandbox_tools(None, work), None, EventBus([snapshots.emit, seen.append]))

    first = await tools.call("write_file", {"path": "a.txt", "content": "1\n"}, "test-agent 1")
    assert first.status == "ok", first
    assert finished(seen) == []  # the reply is back; its recording is still held
    await asyncio.sleep(SETTLE_S * 5)
    assert finished(seen) == [1]  # and follows in the client's pause

    # Back to back: each call's snapshot is taken before the next call touches a file.
    await tools.call("write_file", {"path": "b.txt", "content": "2\n"})
    await tools.call("write_file", {"path": "c.txt", "content": "3\n"})
    tools.end()
    assert finished(seen) == [1, 2, 3]
    kinds = [type(e).__name__ for e in seen if not isinstance(e, ev.ToolCallStarted)]
    steps = [k for k in kinds if k in ("AssistantMessage", "ToolCallFinished")]
    assert steps == ["AssistantMessage", "ToolCallFinished"] * 3 + ["AssistantMessage"]
    assert isinstance(seen[-1], ev.RunFinished)
    changed = {e["step"]: e["changed"] for e in meta["snapshots"] if e["step"]}
    assert changed == {1: ["a.txt"], 2: ["b.txt"], 3: ["c.txt"]}
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)

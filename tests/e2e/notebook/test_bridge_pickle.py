"""The notebook bridge in a real user kernel refuses a pickle sent to it over the comm:
a message carrying one fails its request instead of being handed on, and the pickle's
payload never runs."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any


class Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


def _comm(messages: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(m["content"] for m in messages if m["msg_type"] == kind)


def _reply(kernel: Any, comm_id: str, data: dict[str, Any], buffers: list[bytes]) -> None:
    msg = kernel.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    msg["buffers"] = buffers
    kernel.kc.shell_channel.send(msg)


INSERT = (
    "t = asyncio.ensure_future(b.insert_cells([{'source': 'x', 'metadata': {}}], None))\n"
    "await asyncio.sleep(0.3)"
)

SHOW = "await asyncio.sleep(0.3)\nprint(repr(t.exception()) if t.exception() else t.result())"


def test_the_bridge_refuses_a_pickle_over_the_comm(run: Any, kernel: Any, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    exploit = pickle.dumps(Exploit(marker), protocol=5)

    async def scenario() -> tuple[str, str]:
        _, messages = await kernel.run(
            "import asyncio\nfrom codeagent_jupyter.widget.bridge import NotebookBridge\n"
            "b = NotebookBridge()"
        )
        opened = _comm(messages, "comm_open")
        comm_id, ping = opened["comm_id"], opened["data"]["request_id"]
        _reply(kernel, comm_id, {"action": "pong", "request_id": ping}, [])
        results = []
        for buffers in ([b"PAR1 not a pickle"], [exploit]):
            _, messages = await kernel.run(INSERT)
            request = _comm(messages, "comm_msg")["data"]
            assert request["action"] == "insert_cells"
            answer = {"action": "inserted", "cell_ids": ["c1"], "request_id": request["request_id"]}
            _reply(kernel, comm_id, answer, buffers)
            shown = await kernel.stream(SHOW)
            results.append(shown.strip())
        return results[0], results[1]

    control, attacked = run(scenario())
    assert control == "['c1']"  # a data buffer is fine: the insertion went through
    assert attacked.startswith("BridgeError('codeagent: refusing a pickle from the sandbox")
    assert not marker.exists()

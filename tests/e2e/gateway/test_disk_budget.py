"""The workspace disk budget on a gateway kernel: watched while the cell runs, as locally.

The workspace is a shared volume (the same path here and on the gateway), so the client
measures it while the remote cell runs and interrupts the cell once it crosses the budget.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from codeagent_jupyter.sandbox import SandboxLimits
from codeagent_jupyter.sandbox.backend import make_backend
from tests.e2e.gateway.conftest import Gateway

GROW = dedent(
    """
    with open("sparse.bin", "wb") as f:  # 64 MiB by length, one byte written
        f.seek((64 << 20) - 1)
        f.write(b"1")
    import time
    time.sleep(40)
    print("survived")
    """
)


async def test_a_remote_cell_is_interrupted_when_it_crosses_the_budget(
    gateway: Gateway, workspace: Path
) -> None:
    limits = SandboxLimits(cell_timeout=50, disk_mb=16)  # within the gateway's ceiling
    box = make_backend("gateway", gateway.url, gateway.token).create(workspace, limits)
    await box.start()
    try:
        assert (await box.execute("x = 41")).status == "ok"
        r = await box.execute(GROW)
        assert r.status == "error" and r.over_budget is not None
        assert "workspace disk budget of 16 MiB exceeded (64 MiB used)" in r.note
        assert "the cell was interrupted" in r.note and "cell_timeout" not in r.note
        streams = "".join(o.get("text", "") for o in r.outputs if o["output_type"] == "stream")
        assert "survived" not in streams
        (workspace / "sparse.bin").unlink()
        assert (await box.execute("print(x + 1)")).text.strip() == "42"  # state kept
    finally:
        await box.shutdown()

"""``--with`` into a sandbox on a kernel gateway (another machine: no shared directory).

The uploaded bytes reach the gateway's kernel through its own connection, a few MiB per
cell, and the frame the model's cell sees there is equal to the one that was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from codeagent_jupyter.server.staging import CHUNK
from codeagent_jupyter.widget.transfer import serialize
from tests.e2e.gateway.conftest import Gateway, gateway, server_config  # noqa: F401  (the module's gateway)
from tests.scripted_model import text, tool_calls
from tests.server.conftest import *  # noqa: F403  (the real Jupyter server's fixtures)
from tests.server.helpers import Api, of_type

CHECK = "import pandas as pd\nprint(int(pd.util.hash_pandas_object(df).sum()), df.shape)"


@pytest.fixture
def jp_root_dir(gateway: Gateway, tmp_path: Path) -> Path:  # noqa: F811
    root = gateway.root / f"server-{tmp_path.name}"
    root.mkdir()
    return root


@pytest.fixture
def jp_server_config(gateway: Gateway, scripted_model: Any) -> Config:  # noqa: F811
    return server_config(gateway, scripted_model.url, {"cell_timeout": 30, "memory_mb": 1024})


async def test_with_reaches_a_gateway_sandbox(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=300_000), "b": np.arange(300_000)})
    payload = serialize("df", frame)
    assert len(payload.data) > CHUNK  # more than one cell's worth
    status, sent = await api.call(
        "POST",
        "uploads",
        raw=bytes(payload.data),
        params={"name": "df", "format": payload.format, "sha256": payload.sha256},
    )
    assert status == 201, sent
    scripted_model.set_script([tool_calls(("run_cell", {"code": CHECK})), text("same")])
    session = await api.start("check df", uploads=[sent["id"]])
    events = await api.run_to_end(session["id"])
    outputs = json.dumps(of_type(events, "cell_output"))
    checksum = int(pd.util.hash_pandas_object(frame).sum())
    assert f"{checksum} (300000, 2)" in outputs, outputs[:2000]
    told = json.dumps(scripted_model.requests[0]["messages"])
    assert "df: pandas.DataFrame 300,000\\u00d72, columns: a[float64], b[int64]" in told
    assert not [p for p in jp_root_dir.rglob("*") if "upload" in p.name]  # never in the workspace

"""The user's variables: described to the model (no values), copied into the sandbox with
``--with``, capped in size; nothing comes back as a pickle."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codeagent_jupyter.widget.client import AgentClient
from tests.scripted_model import text, tool_calls

PANEL = "get_ipython().magics_manager.registry['AgentMagics'].panels[-1]"

USER_CELL = """
import numpy as np, pandas as pd
df = pd.DataFrame({"amount": [1234.5678, 2.5], "city": ["Zanzibar-secret", "Oslo"]})
token = "hunter2-XYZ"
arr = np.arange(12).reshape(3, 4)
settings = {"password": "pa55-word-QQ"}
_private = "underscore-value"
"""


def _first_request_text(scripted_model: Any) -> str:
    return json.dumps(scripted_model.requests[0]["messages"])


def test_namespace_summary_reaches_the_model_without_values(
    run: Any, kernel: Any, scripted_model: Any
) -> None:
    async def scenario() -> None:
        reply, _ = await kernel.run(USER_CELL)
        assert reply["status"] == "ok"
        scripted_model.set_script([text("noted")])
        await kernel.run("%agent list what variables I have")
        await kernel.until(f"{PANEL}.state.status", "answered")

    run(scenario())
    sent = _first_request_text(scripted_model)
    assert "df: pandas.DataFrame 2\\u00d72, columns: amount[float64], city[" in sent
    assert "arr: numpy.ndarray 3\\u00d74 dtype int64" in sent
    assert "token: str (len 11)" in sent and "settings: dict (len 1)" in sent
    for value in ("Zanzibar", "1234.5", "hunter2", "pa55-word", "password", "underscore-value"):
        assert value not in sent, value
    assert "_private" not in sent and "- np:" not in sent and "- pd:" not in sent
    assert "- In:" not in sent and "- Out:" not in sent and "- get_ipython:" not in sent


BIG_CELL = """
import numpy as np, pandas as pd
rng = np.random.default_rng(7)
df = pd.DataFrame({
    "when": pd.date_range("2024-01-01", periods=100_000, freq="min"),
    "amount": rng.normal(size=100_000),
    "n": np.arange(100_000),
    "city": rng.choice(["Oslo", "Lima", None], size=100_000),
    "kind": pd.Categorical(rng.choice(["a", "b"], size=100_000)),
})
print(int(pd.util.hash_pandas_object(df).sum()), list(df.dtypes.astype(str)))
"""
CHECK = (
    "import pandas as pd\n"
    "print(int(pd.util.hash_pandas_object(df).sum()), list(df.dtypes.astype(str)), df.shape)"
)


def test_with_copies_a_100k_row_frame_equal(
    run: Any, kernel: Any, client: AgentClient, scripted_model: Any
) -> None:
    async def scenario() -> tuple[str, str]:
        checksum = (await kernel.stream(BIG_CELL)).strip()
        scripted_model.set_script([tool_calls(("run_cell", {"code": CHECK})), text("same")])
        await kernel.run("%agent --with df check the frame")
        await kernel.until(f"{PANEL}.state.status", "answered")
        sid = (await kernel.stream(f"print({PANEL}.session_id)")).strip()
        detail = await client.session(sid)
        outputs = [e for e in detail["events"] if e["type"] == "cell_output"]
        return checksum, json.dumps(outputs)

    checksum, outputs = run(scenario())
    assert f"{checksum} (100000, 5)" in outputs and "category" in checksum
    sent = _first_request_text(scripted_model)
    assert "already defined in your sandbox" in sent
    assert "df: pandas.DataFrame 100,000\\u00d75, columns: when[datetime64" in sent


@pytest.mark.agent_settings(max_upload_mb=0.01)
def test_a_variable_over_the_cap_starts_no_session(
    run: Any, kernel: Any, client: AgentClient, scripted_model: Any
) -> None:
    async def scenario() -> None:
        await kernel.run("big = list(range(100_000))")
        await kernel.run("%agent --with big go")
        await kernel.until(f"'upload limit' in {PANEL}.notice.value", "True")
        notice = (await kernel.stream(f"print({PANEL}.notice.value)")).strip()
        assert "big is larger than the upload limit of 0.01 MB" in notice and "(413)" in notice
        assert await client.sessions() == []
        missing = (await kernel.stream("%agent --with nope go", "stderr")).strip()
        assert missing.endswith("%agent: --with nope: no variable 'nope' in this kernel")

    run(scenario())
    assert scripted_model.requests == []


def test_the_panel_picker_copies_the_chosen_variables(
    run: Any, kernel: Any, scripted_model: Any
) -> None:
    check = "print(int(frame['a'].sum()), 'other' in globals())"
    scripted_model.set_script([tool_calls(("run_cell", {"code": check})), text("6")])

    async def scenario() -> tuple[str, str]:
        await kernel.run(
            "import pandas as pd\nimport codeagent_jupyter as ca\n"
            "frame = pd.DataFrame({'a': [1, 2, 3]})\nother = 'not chosen'\np = ca.panel()"
        )
        await kernel.run("p.prompt.value = 's'")  # the first keystroke lists the variables
        options = await kernel.stream("print(p.picker.select.options)")
        await kernel.run("p.picker.select.value = ('frame',)\np.prompt.value = 'sum a'")
        await kernel.run("p.send.click()")
        await kernel.until("p.state.status", "answered")
        shown = await kernel.stream("print([o['text'] for c in p.state.cells for o in c.outputs])")
        return options, shown

    options, shown = run(scenario())
    assert "('frame: pandas.DataFrame 3\u00d71, columns: a[int64]', 'frame')" in options
    assert "('other: str (len 10)', 'other')" in options
    assert "6 False" in shown  # frame was copied, other was not
    assert "frame: pandas.DataFrame 3\\u00d71" in _first_request_text(scripted_model)

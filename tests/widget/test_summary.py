"""The static summary a saved notebook carries: the run readable without the kernel (GitHub,
nbviewer), built by the panel's own renderers, so sandbox and model content stays inert."""

from __future__ import annotations

import base64
import re

from codeagent_jupyter import events as ev
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.widget import summary
from tests.widget.test_render import ATTACKS, assert_inert, html_output

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 3000).decode()


def session(outputs: list[dict]) -> list[ev.Event]:
    return [
        ev.RunStarted(seq=0, prompt="plot **revenue**"),
        ev.PlanUpdated(seq=1, steps=[{"step": "Load the data", "status": "done"}]),
        ev.ToolCallStarted(
            seq=2, step=1, tool_call_id="t1", name="run_cell", arguments={"code": "df = load()"}
        ),
        ev.ToolCallFinished(
            seq=3,
            step=1,
            tool_call_id="t1",
            name="run_cell",
            code="df = load()",
            outputs=outputs,
            status="ok",
        ),
        ev.AssistantMessage(
            seq=4, step=2, message={"role": "assistant", "content": "| a |\n|---|\n| 1 |"}
        ),
        ev.RunFinished(
            seq=5,
            status="answered",
            reason="the model gave its answer",
            answer="| a |\n|---|\n| 1 |",
            steps=2,
        ),
    ]


def text_of(markup: str) -> str:
    return re.sub(r"<[^>]+>", "", markup)


def test_the_summary_holds_plan_cells_and_answer() -> None:
    outputs = [{"output_type": "stream", "name": "stdout", "text": "loaded 3 rows\n"}]
    html = summary.summary_html(fold(session(outputs)), "abc123", "saved with the notebook")
    words = text_of(html)
    for shown in (
        "abc123",
        "Load the data",
        "revenue",
        "df = load()",
        "loaded 3 rows",
        "Cell 1",
        "saved with the notebook",
    ):
        assert shown in words, shown
    assert "<strong>revenue</strong>" in html and "<td>1</td>" in html
    assert html.count("<details") == 1  # each cell folded under its header
    assert_inert(html)


def test_hostile_outputs_stay_inert_in_the_summary() -> None:
    outputs = [html_output(a) for a in ATTACKS.values()]
    html = summary.summary_html(fold(session(outputs)), "abc", "")
    assert_inert(html)
    assert "__pwned" not in html and "evil.example" not in html


def test_the_summary_is_bounded() -> None:
    image = {"output_type": "display_data", "data": {"image/png": PNG}}
    big = [image] * 2000  # ~8 MB of images
    html = summary.summary_html(fold(session(big)), "abc", "")
    assert len(html) < summary.MAX_BYTES + 100_000
    assert "outputs not kept here" in html


def test_the_stub_says_when_the_run_waits_for_an_approval() -> None:
    """The cell's summary of a side panel's run is all the notebook shows of it: while the run
    waits for the user it says so, not "ready"."""
    asked = [
        ev.RunStarted(seq=0, prompt="use tinyapp"),
        ev.ApprovalRequested(
            seq=1, step=1, tool_call_id="t1", name="install_packages", arguments={"install": []}
        ),
    ]
    waiting = summary.summary_html(fold(asked), "abc123")
    assert "waiting for your approval" in waiting and ">ready<" not in waiting
    decided = fold([*asked, ev.ApprovalDecided(seq=2, tool_call_id="t1", approved=True)])
    assert "waiting for your approval" not in summary.summary_html(decided, "abc123")

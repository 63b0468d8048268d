"""How the panel looks, as strings: every colour a JupyterLab CSS variable (so the light,
dark and high-contrast themes all read), Markdown tables rendered, live stream chunks one
block, long outputs and tracebacks folded with their end in view, an edit naming the cell
as the user sees it. ``tests/e2e/browser/test_panel_hour_e2e.py`` measures the contrast in a
real browser; this catches a hard-coded colour anywhere in the panel's markup."""

from __future__ import annotations

import re

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.timeline.state import (
    ApprovalItem,
    CellItem,
    FinishedItem,
    NoteItem,
    PromptItem,
    SessionState,
    TextItem,
    ToolItem,
)
from codeagent_jupyter.widget import header, render, sessions_view, theme
from codeagent_jupyter.widget.panel import AgentPanel
from codeagent_jupyter.widget.summary import summary_html
from codeagent_jupyter.widget.views import (
    ApprovalView,
    FinishedView,
    NoteView,
    PromptView,
    TextView,
    ToolView,
)
from tests.widget.test_render import assert_inert

COLOR = re.compile(
    r"(?:^|[;\s{])(color|background(?:-color)?|border(?:-(?:top|right|bottom|left))?(?:-color)?)"
    r"\s*:\s*([^;\"}]+)"
)
JP_VAR = re.compile(r"var\(--jp-[a-z0-9-]+(?:,[^)]*)?\)")
TRACEBACK = {
    "output_type": "error",
    "ename": "KeyError",
    "evalue": "'profit'",
    "traceback": [f"frame {i}" for i in range(60)] + ["KeyError: 'profit'"],
}
EDIT = {
    "cell_id": "4f2a9c",
    "old_source": "print(totl)",
    "new_source": "print(total)",
    "reason": "`totl` is a typo.",
    "diff": "--- cell 4f2a9c\n+++ proposed\n@@ -1 +1 @@\n-print(totl)\n+print(total)",
}


def colours(markup: str) -> list[tuple[str, str]]:
    """Every colour declaration in ``style`` attributes, ``<style>`` rules included."""
    found = []
    for block in re.findall(r'style="([^"]*)"', markup) + re.findall(r"\{([^}]*)\}", markup):
        found += [(m.group(1), m.group(2).strip()) for m in COLOR.finditer(block)]
    return found


def assert_themed(markup: str) -> None:
    for prop, value in colours(markup):
        rest = JP_VAR.sub("", value)
        rest = re.sub(r"\b(?:\d+(?:\.\d+)?(?:px|em)?|solid|dashed|none|transparent)\b", "", rest)
        assert not rest.strip(), f"{prop}: {value} is not a JupyterLab variable in {markup[:200]}"


def every_surface() -> list[str]:
    """The markup of every part of the panel and of its saved summary."""
    cell = CellItem(
        "c1",
        "t1",
        1,
        1,
        "run_cell",
        "import os\n# note\nx = 'a' + 1  # boom",
        status="error",
        outputs=(
            {"output_type": "stream", "name": "stdout", "text": "line\n" * 100},
            {"output_type": "stream", "name": "stderr", "text": "warning\n"},
            TRACEBACK,
        ),
        note="refused",
    )
    edit = CellItem("c2", "t2", 2, 2, "run_cell", "print(total)", status="ok", edit=EDIT)
    statuses = ["idle", "running", *render._RUN_STATUS]
    state = SessionState(
        items=(PromptItem("p", "go", 0), cell, edit),
        plan=(
            {"step": "a", "status": "done"},
            {"step": "b", "status": "in_progress"},
        ),
        status="answered",
        enforcement={"filesystem": "none", "pid": "none"},
    )
    pieces = [
        theme.STYLE,
        render.cell_html(cell),
        render.cell_html(edit, "In [7]"),
        render.banner_html(state),
        render.arguments_html({"path": "x", "content": "y"}),
        render.markdown_html("| a |\n|---|\n| 1 |"),
        *(render.status_html(SessionState(status=s, retry="r"), 0.0) for s in statuses),
        *(
            render.cell_header(CellItem("h", "h", 1, 1, "run_cell", "x", status=s))
            for s in ("ok", "running", "error", "timeout")
        ),
        PromptView.render(None, PromptItem("p", "**go**", 1)),  # type: ignore[arg-type]
        PromptView.render(None, PromptItem("f", "x", 0, "Fix In [2]: NameError: x")),  # type: ignore[arg-type]
        NoteView.render(None, NoteItem("n", "restored", ("x",))),  # type: ignore[arg-type]
        TextView.render(None, TextItem("t", 1, "hi", True)),  # type: ignore[arg-type]
        ToolView.render(None, ToolItem("x", "x", 1, "read_file", {}, "error")),  # type: ignore[arg-type]
        *(FinishedView.render(None, FinishedItem("f", s, "r", "a", 1, 1.0)) for s in statuses),  # type: ignore[arg-type]
        *(
            ApprovalView.render(None, ApprovalItem("a", "a", 1, "run_cell", {"code": "1"}, v, r))  # type: ignore[arg-type]
            for v, r in ((None, ""), (True, "session"), (False, ""))
        ),
        header.title_html("abc"),
        header.dead_html("abc"),
        header.approval_html(ApprovalItem("a", "a", 1, "run_cell", {}), 2),
        sessions_view.row_html({"id": "abc", "state": "running", "created": 0}, 100.0, "abc"),
        summary_html(state, "abc", "saved"),
    ]
    return pieces


def test_every_colour_is_a_jupyterlab_variable() -> None:
    surfaces = every_surface()
    assert sum(len(colours(s)) for s in surfaces) > 40  # the check sees the colours
    for markup in surfaces:
        assert_themed(markup)


def test_the_check_catches_a_hard_coded_colour() -> None:
    with pytest.raises(AssertionError):
        assert_themed('<pre style="margin:0;background:#f6f8fa">x</pre>')
    with pytest.raises(AssertionError):
        assert_themed('<span style="color:red">x</span>')


def test_code_is_coloured_with_the_editors_variables() -> None:
    out = render.code_html("def f(x):\n    return 'a'  # c")
    assert "var(--jp-mirror-editor-keyword-color)" in out
    assert "var(--jp-mirror-editor-string-color)" in out
    assert "background:var(--jp-cell-editor-background)" in out
    assert "&#x27;" not in out or "'a'" not in out  # escaped text, not markup
    assert re.sub(r"<[^>]+>", "", out).replace("&#x27;", "'") == "def f(x):\n    return 'a'  # c"


def test_markdown_tables_are_rendered() -> None:
    out = render.markdown_html("| month | revenue |\n|---|---|\n| Jan | 120 |\n| Feb | 180 |")
    assert "<table>" in out and "<td>180</td>" in out and "<th>month</th>" in out
    assert "jp-RenderedHTMLCommon" in out  # JupyterLab's own table style


def test_live_stream_chunks_read_as_one_block() -> None:
    chunks = tuple(
        {"output_type": "stream", "name": "stdout", "text": f"tick {i}\n"} for i in range(3)
    )
    cell = CellItem("c", "t", 1, 1, "run_cell", "x", outputs=chunks)
    out = render.cell_html(cell)
    outputs = out.split('class="codeagent-outputs"')[1]
    assert outputs.count("<pre") == 1 and "tick 0\ntick 1\ntick 2\n" in outputs


def test_a_long_output_is_folded_with_its_end_in_view() -> None:
    text = "".join(f"line {i}\n" for i in range(5000))
    out = render.output_html({"output_type": "stream", "name": "stdout", "text": text})
    folded, shown = out.split("</details>")
    assert "<details" in folded and "earlier lines" in folded and "open" not in folded
    assert "line 4999" in shown and "line 4990" not in shown.split("line 4992")[0]
    assert shown.count("\n") < render.FOLD_LINES


def test_a_long_traceback_is_folded_with_the_error_in_view() -> None:
    out = render.output_html(TRACEBACK)
    assert 'class="codeagent-traceback"' in out
    folded, shown = out.split("</details>")
    assert "traceback (61 lines)" in folded and "frame 10" in folded
    assert "KeyError: &#x27;profit&#x27;" in shown and "frame" not in shown
    short = render.output_html({**TRACEBACK, "traceback": ["NameError: x"]})
    assert "<details" not in short and "NameError: x" in short


def test_a_pandas_sized_traceback_is_folded() -> None:
    """A traceback of a screenful (a KeyError out of pandas: 21 lines here, more once its
    long lines wrap in a narrow panel) folds; the error stays in view."""
    frames = [f"File pandas/core/frame.py:{i}, in get_loc\n    frame {i}" for i in range(10)]
    out = render.output_html({**TRACEBACK, "traceback": [*frames, "KeyError: 'profit'"]})
    folded, shown = out.split("</details>")
    assert "traceback (21 lines)" in folded and "KeyError: &#x27;profit&#x27;" in shown


def test_the_header_keeps_the_session_id_without_the_restart_hint() -> None:
    """How to attach again is the "Disconnected" line's to say, when it matters."""
    title = header.title_html("abc123")
    assert "<code>abc123</code>" in title and "--attach" not in title
    assert "%agent --attach abc123" in header.dead_html("abc123")


def test_a_fix_request_reads_as_its_title_with_the_prompt_folded() -> None:
    prompt = "My last cell (cell id=4f2a9c) failed. Fix it.\n\nPropose the fix with edit_cell"
    item = PromptItem("p", prompt, 0, "Fix In [2]: NameError: name 'x' is not defined")
    out = PromptView.render(None, item)  # type: ignore[arg-type]
    head, folded = out.split("<details", 1)
    assert ">Fix In [2]</b>" in head and "NameError: name &#x27;x&#x27; is not defined" in head
    assert "4f2a9c" not in head and "edit_cell" not in head
    assert "what the agent was asked" in folded and "4f2a9c" in folded
    assert "<details open" not in out
    # The error's line is the user's data (a column name out of a CSV): text, never markup.
    hostile = PromptItem("h", "x", 0, "Fix In [3]: KeyError: '<img src=x onerror=alert(1)>'")
    assert_inert(PromptView.render(None, hostile))  # type: ignore[arg-type]
    assert_inert(summary_html(SessionState(items=(hostile,)), "abc"))
    plain = PromptView.render(None, PromptItem("q", "**plot** it", 0))  # type: ignore[arg-type]
    assert "<b>Request:</b>" in plain and "<strong>plot</strong>" in plain


def test_an_edit_names_the_cell_as_the_user_sees_it() -> None:
    panel = AgentPanel(None)
    panel.label_of = {"4f2a9c": "In [7]"}.get
    panel.apply(ev.RunStarted(seq=0, prompt="fix"))
    panel.apply(
        ev.ToolCallStarted(
            seq=1, step=1, tool_call_id="t", name="edit_cell", arguments={"cell_id": "4f2a9c"}
        )
    )
    panel.apply(
        ev.ToolCallFinished(
            seq=2, step=1, tool_call_id="t", name="edit_cell", code=EDIT["new_source"], edit=EDIT
        )
    )
    view = next(v for v in panel._views.values() if hasattr(v, "accept_run"))
    assert "Edit of your cell <b>In [7]</b>" in view.html.value
    assert "edit of In [7]" in view.html.value
    unknown = render.edit_html(EDIT)  # a cell this kernel never ran: its id
    assert "Edit of your cell <code>4f2a9c</code>" in unknown
    panel.close()

"""A static HTML summary of a session, saved in the notebook beside the live panel.

The panel is an ipywidget: a saved notebook keeps only a reference to it, so GitHub,
nbviewer or a colleague without the kernel see nothing of the run. The ``%agent`` output
therefore also carries ``text/html``: the request, the plan, each cell (code and outputs,
folded into ``<details>``) and the answer. It is built by the same renderers as the panel
(sandbox HTML sanitized, model text escaped and sanitized), so it is as inert as the panel
is, and bounded: past ``MAX_BYTES`` further images become a line saying so.
"""

from __future__ import annotations

from ..timeline.state import CellItem, PromptItem, SessionState, TextItem, ToolItem
from . import render, theme

MAX_BYTES = 2_000_000
"""Roughly what one summary may add to the saved notebook (images count most)."""


def _cell(cell: CellItem, budget: list[int]) -> str:
    outputs, left_out = [], 0
    for output in render.merge_streams(cell.outputs):
        piece = render.output_html(output)
        if len(piece) > budget[0]:
            left_out += 1
            continue
        budget[0] -= len(piece)
        outputs.append(piece)
    if left_out:
        outputs.append(
            f"<p><i>[{left_out} output{'s' * (left_out > 1)} not kept here: see the session "
            "notebook]</i></p>"
        )
    head = render.cell_header(cell)
    code = render.code_html(cell.code, cell.language) if not cell.edit else ""
    body = code + "".join(outputs) if not cell.edit else render.edit_html(cell.edit)
    return (
        f'<details class="codeagent-summary-cell" data-cell="{cell.number}">'
        f'<summary style="font-size:12px">{head}</summary>{body}</details>'
    )


def summary_html(state: SessionState, session_id: str | None, note: str = "") -> str:
    """The session as one static, self-contained HTML block (no script, no widget)."""
    budget = [MAX_BYTES]
    parts = []
    for item in state.items:
        if isinstance(item, PromptItem):
            parts.append(render.request_html(item, "codeagent-summary-request"))
        elif isinstance(item, CellItem):
            parts.append(_cell(item, budget))
        elif isinstance(item, TextItem) and item.is_answer:
            parts.append(
                f'<div class="codeagent-summary-answer">{render.markdown_html(item.text)}</div>'
            )
        elif isinstance(item, ToolItem):
            parts.append(
                f'<div style="font-size:12px;color:{theme.MUTED}"><code>'
                f"{render.esc(item.name)}</code> · {render.esc(item.status)}</div>"
            )
    sid = f" <code>{render.esc(session_id)}</code>" if session_id else ""
    extra = f'<div style="font-size:12px;color:{theme.MUTED}">{render.esc(note)}</div>'
    return (
        f'<div class="codeagent-summary" style="border:1px solid {theme.BORDER};'
        f'padding:6px;font-size:13px">'
        f"<div><b>codeagent</b>{sid} · {render.status_html(state, 0.0)}</div>"
        f"{render.plan_html(state.plan)}{''.join(parts)}{extra if note else ''}</div>"
    )

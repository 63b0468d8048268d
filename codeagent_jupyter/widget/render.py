"""Small, pure HTML renderers for the panel: code, cells, plan, status line.

They return strings with inline styles whose every colour is a JupyterLab CSS variable
(``theme``), so they follow the light, dark and high-contrast themes in JupyterLab and
Notebook 7 without a stylesheet of ours, and are tested as strings. Long text outputs and
tracebacks fold into ``<details>`` (their last lines stay visible), so a 5,000-line print
does not make the panel thousands of pixels tall.
"""

from __future__ import annotations

import json
from typing import Any

from ..sandbox.report import warning
from ..timeline.state import CellItem, PromptItem, SessionState
from ..util.textbounds import head_tail
from . import theme
from .packages_view import is_install, packages_html
from .render_outputs import (
    FOLD_LINES,
    HTML_CLASS,
    MAX_TEXT,
    PRE,
    TAIL_LINES,
    esc,
    folded,
    merge_streams,
    output_html,
    traceback_html,
)
from .sanitize import clean_html

__all__ = [
    "FOLD_LINES",
    "HTML_CLASS",
    "MAX_TEXT",
    "MUTED",
    "PRE",
    "RED",
    "TAIL_LINES",
    "arguments_html",
    "banner_html",
    "cell_header",
    "cell_html",
    "code_html",
    "edit_html",
    "esc",
    "folded",
    "markdown_html",
    "merge_streams",
    "output_html",
    "plan_html",
    "request_html",
    "status_html",
    "traceback_html",
]

RED = theme.ERROR
MUTED = theme.MUTED
_STATUS_ICON = {"pending": "○", "in_progress": "◐", "done": "●"}
_RUN_STATUS = {
    "running": ("running", theme.RUNNING),
    "answered": ("done", theme.OK),
    "cancelled": ("cancelled", theme.WARN),
    "max_steps": ("stopped: step budget", theme.WARN),
    "max_wall_time": ("stopped: time budget", theme.WARN),
    "max_tokens": ("stopped: token budget", theme.WARN),
    "malformed": ("stopped: malformed tool calls", RED),
    "model_error": ("model error", RED),
    "error": ("error", RED),
    "interrupted": ("interrupted", RED),
}


def code_html(code: str, language: str = "python") -> str:
    """Syntax-highlighted source (``python``, or ``shell``: a tool's ``ToolTraits.language``)
    on the editor's background, in the editor's colours."""
    style = (
        f"{PRE}background:{theme.CODE_BG};border:1px solid {theme.CODE_BORDER};border-radius:2px"
    )
    return f'<pre class="codeagent-code" style="{style}">{theme.highlight(code, language)}</pre>'


def cell_header(cell: CellItem, target: str = "") -> str:
    """ "Cell 3 · step 2 · error · 0.4 s · fix for cell 2"; ``target`` names the user's
    cell an edit replaces (``In [7]``)."""
    parts = [f"<b>Cell {cell.number}</b>", f"step {cell.step}"]
    if cell.language == "shell":
        parts.append("shell")
    if cell.edit:
        parts.append(f"edit of {esc(target)}" if target else "edit of your cell")
    color = {"ok": theme.OK, "running": theme.RUNNING}.get(cell.status, RED)
    parts.append(f'<span style="color:{color}">{esc(cell.status)}</span>')
    if cell.finished and cell.duration_s:
        parts.append(f"{cell.duration_s:.1f} s")
    if cell.fixes is not None:
        parts.append(f"fix for cell {cell.fixes}")
    if cell.decision is not None:
        parts.append("accepted" if cell.decision else "rejected")
    note = f' <span style="color:{MUTED}">({esc(cell.note)})</span>' if cell.note else ""
    return " · ".join(parts) + note


def edit_html(edit: dict[str, Any], target: str = "") -> str:
    """An ``edit_cell`` proposal: the reason (Markdown, sanitized) over a unified diff whose
    lines are escaped text, coloured by their first character. ``target`` is the cell as
    the user sees it (``In [7]``); without it, the edit's own ``label`` (the notebook's
    count when the agent read it), else the cell's id."""
    target = target or str(edit.get("label") or "")
    cell_id = esc(str(edit.get("cell_id", "")))
    name = f"<b>{esc(target)}</b>" if target else f"<code>{cell_id}</code>"
    return (
        f'<div class="codeagent-edit" data-cell-id="{cell_id}">'
        f'<div style="font-size:12px">Edit of your cell {name}:</div>'
        f"{markdown_html(str(edit.get('reason', '')))}"
        f"{diff_html(str(edit.get('diff', '')))}</div>"
    )


def diff_html(diff: str) -> str:
    """A unified diff as escaped text, each line coloured by its first character (theme
    colours): an ``edit_cell`` proposal's, an ``edit_file`` change's."""
    colors = {"+": theme.ADDED, "-": theme.REMOVED, "@": theme.HUNK}
    rows = []
    for row in diff.splitlines()[:400]:
        header = row.startswith(("+++", "---"))
        color = "" if header else colors.get(row[:1], "")
        style = f' style="color:{color}"' if color else (' style="font-weight:bold"' * header)
        rows.append(f"<span{style}>{esc(row)}</span>")
    diff_style = f"{PRE}background:{theme.CODE_BG};border:1px solid {theme.CODE_BORDER}"
    return f'<pre class="codeagent-diff" style="{diff_style}">' + "\n".join(rows) + "</pre>"


def cell_html(cell: CellItem, target: str = "") -> str:
    head = f'<div style="font-size:12px;margin:2px 0">{cell_header(cell, target)}</div>'
    opening = f'<div class="codeagent-cell" data-cell="{cell.number}" data-status="'
    opening += f'{esc(cell.status)}">'
    if cell.edit:
        return f"{opening}{head}{edit_html(cell.edit, target)}</div>"
    outputs = "".join(output_html(o) for o in merge_streams(cell.outputs))
    return (
        f"{opening}{head}{code_html(cell.code, cell.language)}"
        f'<div class="codeagent-outputs">{outputs}</div></div>'
    )


def request_html(item: PromptItem, css: str = "codeagent-request") -> str:
    """A request as its user reads it. A prompt written for the model (``%agent fix``: the
    cell, its traceback, what to call) shows its ``title`` ("Fix In [9]" over the error's
    last line) with the prompt itself folded under it; a user's own words show as they are
    (Markdown, escaped and sanitized like the model's)."""
    label = "Request" if item.run_index == 0 else "Follow-up"
    if not item.title:
        body = markdown_html(item.text)
        return f'<div class="{css}" style="margin-top:6px"><b>{label}:</b>{body}</div>'
    head, _, error = item.title.partition(": ")
    error_line = (
        f'<div class="codeagent-request-error" style="{PRE}color:{RED}">{esc(error)}</div>'
        if error
        else ""
    )
    asked = (
        f'<details class="codeagent-request-prompt"><summary style="font-size:11px;'
        f'color:{MUTED}">what the agent was asked</summary>{markdown_html(item.text)}</details>'
    )
    return (
        f'<div class="{css}" data-title="true" style="margin-top:6px">'
        f'<b class="codeagent-request-title">{esc(head)}</b>{error_line}{asked}</div>'
    )


def plan_html(plan: tuple[dict[str, str], ...]) -> str:
    if not plan:
        return ""
    rows = "".join(
        f'<li data-status="{esc(p["status"])}" style="list-style:none;'
        f"{'font-weight:bold;' if p['status'] == 'in_progress' else ''}"
        f'{"color:" + MUTED + ";" if p["status"] == "done" else ""}">'
        f"{_STATUS_ICON.get(p['status'], '○')} {esc(p['step'])}</li>"
        for p in plan
    )
    ul = f'<ul style="margin:2px 0;padding-left:4px">{rows}</ul>'
    return f'<div class="codeagent-plan" style="font-size:12px"><b>Plan</b>{ul}</div>'


def status_html(state: SessionState, now: float, note: str = "") -> str:
    """ "running · step 3 · 12.4 s · 1,234 tokens (1,000 in / 234 out)".

    Counts the server did not send are estimated, and shown so: "~1,234 tokens (estimated:
    1,000 in / 234 out)" and "~$0.0012", so that a guess never reads as a bill.
    """
    label, color = _RUN_STATUS.get(state.status, (state.status, MUTED))
    if state.status == "idle":
        label, color = "ready", MUTED
    elif state.running and state.pending_approvals:
        label, color = "waiting for your approval", theme.WARN
    parts = [
        f'<span class="codeagent-run-status" data-status="{esc(state.status)}" '
        f'style="color:{color};font-weight:bold">{esc(label)}</span>'
    ]
    if state.status != "idle":
        parts += [
            f"step {state.step}",
            f"{state.elapsed(now):.1f} s",
            _tokens_html(state),
        ]
        if state.cost is not None:
            parts.append(("~" if state.tokens_estimated else "") + f"${state.cost:,.4f}")
    if state.model:
        parts.append(esc(state.model))
    extra = state.retry or note
    tail = f' <span style="color:{MUTED}">— {esc(extra)}</span>' if extra else ""
    return f'<div class="codeagent-status" style="font-size:12px">{" · ".join(parts)}{tail}</div>'


def _tokens_html(state: SessionState) -> str:
    split = f"{state.prompt_tokens:,} in / {state.completion_tokens:,} out"
    tokens = state.prompt_tokens + state.completion_tokens
    if state.tokens_estimated:
        return (
            f'<span class="codeagent-tokens" data-estimated="true">~{tokens:,} tokens '
            f"(estimated: {split})</span>"
        )
    return f'<span class="codeagent-tokens">{tokens:,} tokens ({split})</span>'


def arguments_html(arguments: Any) -> str:
    """A tool call's input, shown before the user approves it."""
    if isinstance(arguments, dict) and set(arguments) == {"code"}:
        return code_html(str(arguments["code"]))
    if isinstance(arguments, dict) and set(arguments) == {"command"}:
        return code_html(str(arguments["command"]), "shell")
    if is_install(arguments):
        return packages_html(arguments)
    text = json.dumps(arguments, indent=2, ensure_ascii=False, default=str)
    return f'<pre style="{PRE}">{esc(head_tail(text, MAX_TEXT))}</pre>'


def markdown_html(text: str) -> str:
    """Model text as HTML: Markdown through mistune (tables and strikethrough included)
    with raw HTML escaped, then the same allow-list as sandbox HTML (links and image URLs
    are the model's too); plain preformatted text if mistune is missing."""
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune ships with every jupyter_server
        return f'<div style="white-space:pre-wrap;font-size:13px">{esc(text)}</div>'
    to_html = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
    body = clean_html(str(to_html(text)))
    return f'<div class="codeagent-text jp-RenderedHTMLCommon" style="{_TEXT_STYLE}">{body}</div>'


_TEXT_STYLE = "font-size:13px;padding:0;overflow-x:auto"


def banner_html(state: SessionState) -> str:
    """The red line at the top of the panel while the session's sandbox is unconfined.

    Empty until a run has started (before that nothing was reported, which is not the same
    as unconfined) and whenever the sandbox has pid and filesystem isolation.
    """
    if state.status == "idle":
        return ""
    text = warning(state.enforcement)
    if text is None:
        return ""
    return (
        f'<div class="codeagent-unconfined" role="alert" style="background:{theme.BANNER_BG};'
        f"color:{theme.BANNER_TEXT};font-weight:bold;font-size:12px;padding:4px 8px;"
        f'border-radius:3px">{esc(text)}</div>'
    )

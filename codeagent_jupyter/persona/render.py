"""A session's timeline as chat messages: pure functions from the fold to Markdown bodies.

Jupyter AI's chat renders a message body with JupyterLab's Markdown renderer. Its sanitizer
drops scripts and handlers but lets any ``<img src>`` through: a remote image in a body is
fetched the moment the message shows, a way out for a model steered by hostile data. So no
text from the sandbox or the model reaches a body as Markdown or HTML of its own; a body
is made of two kinds of blocks only:

- **fenced code blocks** for the code of a cell: literal in Markdown (the fence is longer
  than any run of backticks inside), highlighted by the chat, and given jupyterlab-chat's
  code toolbar (copy, insert above or below the active cell, replace the selection): the
  way an agent cell reaches the user's active notebook;
- **one-line HTML blocks** (``<div>…</div>`` with every line break written ``&#10;``, so
  Markdown takes the block whole and reads nothing inside it as Markdown) for everything
  else, built by the panel's own renderers: escaped text, the model's Markdown rendered and
  sanitized (raw HTML escaped, images only ``data:``), outputs as the panel shows them
  (streams and tracebacks escaped and folded, images as checked ``data:`` URLs, HTML
  tables through the allow-list).
"""

from __future__ import annotations

import re
from typing import Any

from ..events import tokens_label
from ..sandbox.report import warning
from ..timeline.state import (
    ApprovalItem,
    CellItem,
    FinishedItem,
    Item,
    NoteItem,
    SessionState,
    TextItem,
    ToolItem,
)
from ..widget import render
from ..widget.handoff import cell_source

MAX_OUTPUT_CHARS = 1_500_000
"""Roughly what one cell's outputs may add to a chat message (images count most); past
it, a line says how many outputs are only in the session notebook."""
_BACKTICKS = re.compile(r"`+")
_RUN_WORDS = {
    "answered": "done",
    "cancelled": "stopped",
    "max_steps": "stopped: step budget",
    "max_wall_time": "stopped: time budget",
    "max_tokens": "stopped: token budget",
    "malformed": "stopped: malformed tool calls",
    "model_error": "model error",
    "error": "error",
    "interrupted": "interrupted",
}


def fence(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that nothing inside can close."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{info}\n{text.rstrip(chr(10))}\n{bar}"


def html_block(fragment: str, kind: str = "") -> str:
    """``fragment`` (already safe HTML) as one Markdown HTML block: a ``<div>`` on one line,
    so no blank line can end it early and nothing in it is read as Markdown. ``kind`` adds
    a class (``codeagent-chat-<kind>``) that says what the block is."""
    flat = fragment.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "&#10;")
    css = f" codeagent-chat-{kind}" if kind else ""
    return f'<div class="codeagent-chat{css}">{flat}</div>'


def line(text: str) -> str:
    """A line of plain text (escaped)."""
    return html_block(render.esc(text))


def join(*blocks: str) -> str:
    return "\n\n".join(b for b in blocks if b)


def started_body(session_id: str, model: str, resumed: bool = False) -> str:
    """The first reply: the request is taken, where it runs, which model answers it."""
    verb = "Carrying on in" if resumed else "Working on it in"
    return html_block(
        f"{verb} a sandbox: session <code>{render.esc(session_id)}</code> · model "
        f"<code>{render.esc(model or 'default')}</code>"
    )


def plan_body(plan: tuple[dict[str, str], ...]) -> str:
    return html_block(render.plan_html(plan)) if plan else ""


def cell_body(
    cell: CellItem, preloaded: tuple[str, ...] | None, brought: tuple[str, ...] = ()
) -> str:
    """A cell: its header, its code as it should land in the user's notebook (the imports
    of the sandbox's preloaded names it uses added on top, as the panel's Accept adds
    them), then its outputs as the panel shows them (bounded)."""
    header = html_block(render.cell_header(cell))
    if cell.edit:
        return join(header, html_block(render.edit_html(cell.edit)))
    source = cell_source(cell, preloaded, brought) if cell.code.strip() else ""
    info = "python" if cell.language == "python" else ""
    note = ""
    if source and source != cell.notebook_source:
        note = html_block(
            "<i>Lines above the cell's own code bring in what the sandbox had already "
            "imported, so the cell runs in your kernel too.</i>"
        )
    return join(header, fence(source, info) if source else "", note, _outputs(cell))


def _outputs(cell: CellItem) -> str:
    shown, left_out, budget = [], 0, MAX_OUTPUT_CHARS
    for output in render.merge_streams(cell.outputs):
        piece = render.output_html(output)
        if len(piece) > budget:
            left_out += 1
            continue
        budget -= len(piece)
        shown.append(piece)
    if left_out:
        plural = "s" if left_out > 1 else ""
        shown.append(f"<p><i>[{left_out} output{plural} only in the session notebook]</i></p>")
    return html_block("".join(shown)) if shown else ""


def text_body(item: TextItem) -> str:
    """The model's words (a step's comment, or the answer), rendered as the panel does."""
    return html_block(render.markdown_html(item.text)) if item.text.strip() else ""


def tool_body(item: ToolItem) -> str:
    """Any other tool call in one line: its name, status and a short result."""
    status = "running" if not item.finished else item.status
    result = " ".join(item.result.split())
    result = result if len(result) <= 200 else result[:199] + "…"
    tail = f" · {render.esc(result)}" if item.finished and result else ""
    helpers = "".join(f"<br/>{render.esc(group.title)}" for group in item.helpers)
    return html_block(f"<code>{render.esc(item.name)}</code> · {render.esc(status)}{tail}{helpers}")


def approval_body(item: ApprovalItem) -> str:
    """A tool call under the ``ask`` policy: what it would do and how to answer here."""
    if item.approved is None:
        ask = (
            "Reply <code>@codeagent approve</code>, <code>@codeagent approve for session"
            "</code> or <code>@codeagent deny</code>."
        )
    else:
        ask = "<i>approved</i>" if item.approved else "<i>denied</i>"
        if item.approved and item.remember == "session":
            ask = "<i>approved for the rest of the session</i>"
    return html_block(
        f"<b>Approval needed</b> for <code>{render.esc(item.name)}</code>:"
        f"{render.arguments_html(item.arguments)}{ask}"
    )


def network_ask_body(host: str, port: int, method: str, timeout_s: float) -> str:
    """The sandbox asks to reach an unlisted host: which, and how to answer here (by the
    host, so an answer never lands on a question the user did not read)."""
    name = render.esc(host)
    what = f"{render.esc(method[:16])} to port {port}" if port else render.esc(method[:16])
    wait = f" Unanswered in {timeout_s:g} s it is denied." if timeout_s else ""
    return html_block(
        f"<b>Network</b>: the sandbox asks to reach <code>{name}</code> ({what}). Reply "
        f"<code>@codeagent approve {name}</code> (once), <code>@codeagent approve {name} "
        f"for session</code> or <code>@codeagent deny {name}</code>.{wait}"
    )


def note_body(item: NoteItem) -> str:
    problems = "".join(f"<br/>{render.esc(p)}" for p in item.problems)
    return html_block(f"<i>{render.esc(item.text)}</i>{problems}")


def finished_body(item: FinishedItem, state: SessionState) -> str:
    """The end of a run: the answer when the loop had to give it, then one status line."""
    words = _RUN_WORDS.get(item.status, item.status)
    parts = [words, f"{item.steps} step{'s' * (item.steps != 1)}", f"{item.duration_s:.1f} s"]
    total = state.prompt_tokens + state.completion_tokens
    if total:
        parts.append(tokens_label(total, state.tokens_estimated))
    status = " · ".join(render.esc(p) for p in parts)
    reason = f" ({render.esc(item.reason)})" if item.reason and item.status != "answered" else ""
    answer = text_body(TextItem(item.key, item.steps, item.answer, True)) if item.answer else ""
    return join(answer, html_block(f"<i>{status}{reason}</i>", "end"))


def unconfined_body(state: SessionState) -> str:
    """The warning every surface shows while the sandbox runs without isolation."""
    text = warning(state.enforcement) if state.status != "idle" else None
    return html_block(f"<b>{render.esc(text)}</b>") if text else ""


def item_body(item: Item, state: SessionState, brought: tuple[str, ...] = ()) -> str | None:
    """The message of one timeline item; None for items the chat does not repeat (the
    user's own request is already there)."""
    match item:
        case CellItem():
            return cell_body(item, state.preloaded, brought)
        case TextItem():
            return text_body(item)
        case ToolItem():
            return tool_body(item)
        case ApprovalItem():
            return approval_body(item)
        case NoteItem():
            return note_body(item)
        case FinishedItem():
            return finished_body(item, state)
    return None


def error_body(message: str, status: int | None = None) -> str:
    """A request the server refused, in one line (``codeagent: … (429)``)."""
    code = f" ({status})" if status else ""
    return line(f"codeagent: {message}{code}")


def help_body() -> str:
    rows = [
        ("@codeagent REQUEST", "run the request in a sandbox; later messages follow up in it"),
        ("@codeagent new REQUEST", "start over in a fresh sandbox"),
        ("@codeagent approve | approve for session | deny", "answer a pending approval"),
        (
            "@codeagent approve HOST | approve HOST for session | deny HOST",
            "answer the sandbox's question about a host",
        ),
        ("@codeagent stop", "stop the run (the stop button of the chat does the same)"),
    ]
    items = "".join(f"<li><code>{render.esc(a)}</code>: {render.esc(b)}</li>" for a, b in rows)
    return html_block(
        "<b>codeagent</b> runs its code in a sandbox kernel (no network, resource limits, "
        f"a session notebook), never in your kernel.<ul>{items}</ul>"
        "Attach a notebook to the message to work in its folder with its cells as context. "
        "Each cell comes with the chat's code toolbar: insert it below the active cell of "
        "your notebook."
    )


def usage_numbers(state: SessionState) -> dict[str, Any]:
    """The session's token totals (and cost, when the server has a price) for the chat's
    usage display."""
    usage: dict[str, Any] = {
        "input_tokens": state.prompt_tokens,
        "output_tokens": state.completion_tokens,
        "total_tokens": state.prompt_tokens + state.completion_tokens,
    }
    if state.cost is not None:
        usage.update(cost_amount=round(state.cost, 6), cost_currency="USD")
    return usage

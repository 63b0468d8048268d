"""What the panel shows, as a pure function of a session's event stream.

``reduce(state, event)`` never mutates its input and never looks at anything but the event,
so a panel that re-attaches (events replayed from ``since=0``) shows exactly what a panel that
watched live showed, and the whole view can be tested without a browser or a kernel.
Events arrive as the JSON dicts the server sends (``Event.to_dict()``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from .view import (
    CODE_TOOLS,
    HIDDEN_TOOLS,
    RUNNING,
    ApprovalItem,
    CellItem,
    FinishedItem,
    Item,
    PanelState,
    PromptItem,
    TextItem,
    ToolItem,
)

__all__ = [
    "ApprovalItem",
    "CellItem",
    "FinishedItem",
    "Item",
    "PanelState",
    "PromptItem",
    "TextItem",
    "ToolItem",
    "fold",
    "reduce",
]


def fold(events: Iterable[dict[str, Any]], state: PanelState | None = None) -> PanelState:
    """Reduce a whole stream (e.g. a replay) to the state it leads to."""
    state = state or PanelState()
    for event in events:
        state = reduce(state, event)
    return state


def reduce(state: PanelState, event: dict[str, Any]) -> PanelState:
    """The state after ``event``. Events already seen (by ``seq``) are ignored."""
    seq = int(event.get("seq", -1))
    if seq <= state.last_seq:
        return state
    handler = _HANDLERS.get(str(event.get("type", "")))
    new = handler(state, event) if handler else state
    return replace(new, last_seq=seq)


# -- handlers (each returns a new state) --------------------------------------------------


def _run_started(s: PanelState, e: dict[str, Any]) -> PanelState:
    item = PromptItem(f"prompt-{e['seq']}", e.get("prompt", ""), int(e.get("run_index", 0)))
    return replace(
        s,
        items=(*s.items, item),
        status=RUNNING,
        reason="",
        model=e.get("model") or s.model,
        step=0,
        run_started_at=e.get("time"),
        run_finished_at=None,
        retry="",
        enforcement=dict(e.get("enforcement") or {}),
        price=((e.get("config") or {}).get("extra_context") or {}).get("price") or s.price,
    )


def _plan_updated(s: PanelState, e: dict[str, Any]) -> PanelState:
    steps = tuple(
        {"step": str(p.get("step", "")), "status": str(p.get("status", "pending"))}
        for p in e.get("steps") or []
    )
    return replace(s, plan=steps)


def _text_delta(s: PanelState, e: dict[str, Any]) -> PanelState:
    step = int(e.get("step", 0))
    index = _find(
        s, lambda i: isinstance(i, TextItem) and i.step == step and not i.is_answer, this_run=True
    )
    current = s.items[index] if index is not None else None
    if isinstance(current, TextItem) and index == len(s.items) - 1:
        return _put(s, index, replace(current, text=current.text + e.get("text", "")))
    item = TextItem(f"text-{e['seq']}", step, e.get("text", ""))
    return replace(s, items=(*s.items, item), step=max(s.step, step))


def _assistant_message(s: PanelState, e: dict[str, Any]) -> PanelState:
    step = int(e.get("step", 0))
    message = e.get("message") or {}
    content = message.get("content") or ""
    is_answer = not message.get("tool_calls")
    s = replace(s, step=max(s.step, step), retry="")
    index = _find(s, lambda i: isinstance(i, TextItem) and i.step == step, this_run=True)
    if index is not None:
        current = s.items[index]
        assert isinstance(current, TextItem)
        if not content:
            return _drop(s, index) if not current.text.strip() else s
        return _put(s, index, replace(current, text=content, is_answer=is_answer))
    if not content.strip():
        return s
    item = TextItem(f"text-{e['seq']}", step, content, is_answer)
    return replace(s, items=(*s.items, item))


def _model_retry(s: PanelState, e: dict[str, Any]) -> PanelState:
    if not e.get("attempt"):  # attempt 0: a note (e.g. streaming turned off), not a failure
        return replace(s, retry=f"note: {e.get('reason', '')}")
    retry = (
        f"model request failed ({e.get('reason', '')}); retry {e.get('attempt', 0)} "
        f"in {float(e.get('wait_s', 0)):.1f} s"
    )
    return replace(s, retry=retry)


def _approval_requested(s: PanelState, e: dict[str, Any]) -> PanelState:
    item = ApprovalItem(
        f"approval-{e['seq']}",
        e.get("tool_call_id", ""),
        int(e.get("step", 0)),
        e.get("name", ""),
        e.get("arguments"),
    )
    return replace(s, items=(*s.items, item))


def _approval_decided(s: PanelState, e: dict[str, Any]) -> PanelState:
    return _update(s, ApprovalItem, e.get("tool_call_id"), approved=bool(e.get("approved")))


def _tool_call_started(s: PanelState, e: dict[str, Any]) -> PanelState:
    name = e.get("name", "")
    tcid = e.get("tool_call_id", "")
    step = int(e.get("step", 0))
    args = e.get("arguments")
    if name in HIDDEN_TOOLS:
        return s
    if name in CODE_TOOLS:
        key = "code" if name == "run_cell" else "command"
        code = str(args.get(key, "")) if isinstance(args, dict) else ""
        return replace(s, items=(*s.items, _new_cell(s, tcid, step, name, code)))
    item = ToolItem(f"tool-{tcid}", tcid, step, name, args)
    return replace(s, items=(*s.items, item))


def _new_cell(s: PanelState, tcid: str, step: int, tool: str, code: str) -> CellItem:
    cells = s.cells
    previous = cells[-1] if cells else None
    fixes = previous.number if previous and previous.status in ("error", "timeout") else None
    return CellItem(f"cell-{tcid}", tcid, step, len(cells) + 1, tool, code, fixes=fixes)


def _cell_output(s: PanelState, e: dict[str, Any]) -> PanelState:
    output = dict(e.get("output") or {})
    return _update(s, CellItem, e.get("tool_call_id"), add_output=output)


def _tool_call_finished(s: PanelState, e: dict[str, Any]) -> PanelState:
    tcid = e.get("tool_call_id", "")
    name = e.get("name", "")
    status = e.get("status") or "ok"
    if name in HIDDEN_TOOLS:
        return s
    index = _find(s, lambda i: isinstance(i, (CellItem, ToolItem)) and i.tool_call_id == tcid)
    if index is not None and isinstance(s.items[index], CellItem):
        current = s.items[index]
        assert isinstance(current, CellItem)
        outputs = e.get("outputs")
        done = replace(
            current,
            code=e.get("code") if e.get("code") is not None else current.code,
            outputs=tuple(outputs) if outputs else current.outputs,
            status=status,
            execution_count=e.get("execution_count"),
            duration_s=float(e.get("duration_s") or 0.0),
            note=e.get("note") or (e.get("result", "")[:200] if status == "refused" else ""),
        )
        return _put(s, index, done)
    if index is None:  # never started (refused, or denied at approval): one line
        asked = _find(s, lambda i: isinstance(i, ApprovalItem) and i.tool_call_id == tcid)
        args = s.items[asked].arguments if asked is not None else None  # type: ignore[union-attr]
        item = ToolItem(f"tool-{tcid}", tcid, int(e.get("step", 0)), name, args)
        s, index = replace(s, items=(*s.items, item)), len(s.items)
    current = s.items[index]
    assert isinstance(current, ToolItem)
    return _put(s, index, replace(current, status=status, result=e.get("result", "")))


def _usage(s: PanelState, e: dict[str, Any]) -> PanelState:
    return replace(
        s,
        prompt_tokens=int(e.get("total_prompt_tokens", s.prompt_tokens)),
        completion_tokens=int(e.get("total_completion_tokens", s.completion_tokens)),
        tokens_estimated=s.tokens_estimated or bool(e.get("total_estimated") or e.get("estimated")),
    )


def _run_finished(s: PanelState, e: dict[str, Any]) -> PanelState:
    status = e.get("status", "")
    answer = e.get("answer")
    items = tuple(
        replace(i, status="cancelled") if isinstance(i, CellItem) and not i.finished else i
        for i in s.items
    )
    has_answer = any(isinstance(i, TextItem) and i.is_answer and i.text == answer for i in items)
    item = FinishedItem(
        f"finished-{e['seq']}",
        status,
        e.get("reason", ""),
        None if has_answer else answer,
        int(e.get("steps", 0)),
        float(e.get("duration_s") or 0.0),
    )
    usage = e.get("usage") or {}
    return replace(
        s,
        items=(*items, item),
        status=status,
        reason=e.get("reason", ""),
        step=int(e.get("steps", s.step)),
        run_finished_at=e.get("time"),
        retry="",
        prompt_tokens=int(usage.get("prompt_tokens", s.prompt_tokens)),
        completion_tokens=int(usage.get("completion_tokens", s.completion_tokens)),
        tokens_estimated=s.tokens_estimated or bool(usage.get("estimated")),
    )


def _cell_decision(s: PanelState, e: dict[str, Any]) -> PanelState:
    return _update(s, CellItem, e.get("cell_id"), decision=bool(e.get("accepted")))


_HANDLERS = {
    "run_started": _run_started,
    "plan_updated": _plan_updated,
    "text_delta": _text_delta,
    "assistant_message": _assistant_message,
    "model_retry": _model_retry,
    "approval_requested": _approval_requested,
    "approval_decided": _approval_decided,
    "tool_call_started": _tool_call_started,
    "cell_output": _cell_output,
    "tool_call_finished": _tool_call_finished,
    "usage": _usage,
    "run_finished": _run_finished,
    "cell_decision": _cell_decision,
}


# -- tuple helpers ------------------------------------------------------------------------


def _find(s: PanelState, pred: Callable[[Any], bool], *, this_run: bool = False) -> int | None:
    """Index of the last item matching ``pred`` (only in the current run if ``this_run``)."""
    for index in range(len(s.items) - 1, -1, -1):
        item = s.items[index]
        if pred(item):
            return index
        if this_run and isinstance(item, PromptItem):
            return None
    return None


def _update(s: PanelState, kind: type, tool_call_id: Any, **changes: Any) -> PanelState:
    """Change the last ``kind`` item of ``tool_call_id``; events for unknown ids change nothing.

    ``add_output`` appends one output to a cell instead of replacing a field.
    """
    index = _find(s, lambda i: isinstance(i, kind) and i.tool_call_id == tool_call_id)
    if index is None:
        return s
    current: Any = s.items[index]
    if "add_output" in changes:
        changes["outputs"] = (*current.outputs, changes.pop("add_output"))
    return _put(s, index, replace(current, **changes))


def _put(s: PanelState, index: int, item: Item) -> PanelState:
    return replace(s, items=(*s.items[:index], item, *s.items[index + 1 :]))


def _drop(s: PanelState, index: int) -> PanelState:
    return replace(s, items=(*s.items[:index], *s.items[index + 1 :]))

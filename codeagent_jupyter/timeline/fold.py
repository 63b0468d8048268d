"""A session's state as a pure function of its event stream: ``reduce`` and ``fold``.

The one reading of a session's events into state: the server answers ``GET /sessions/{id}``,
cell decisions and approvals from it, and the panel draws it. ``reduce(state, event)`` never
mutates its input and looks at nothing but the event, so a panel that re-attaches (events
replayed from ``since=0``) shows exactly what a panel that watched live showed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from .. import events as ev
from .network import answer_line
from .state import (
    RUNNING,
    ApprovalItem,
    CellItem,
    FinishedItem,
    HelperGroup,
    Item,
    NoteItem,
    PromptItem,
    SessionState,
    TextItem,
    ToolItem,
)

"""A proposed edit of one of the user's cells: a cell item whose code is the new source."""

__all__ = ["SessionState", "fold", "reduce"]


def fold(events: Iterable[ev.Event], state: SessionState | None = None) -> SessionState:
    """Reduce a whole stream (e.g. a replay) to the state it leads to."""
    state = state or SessionState()
    for event in events:
        state = reduce(state, event)
    return state


IGNORED_EVENTS: frozenset[type[ev.Event]] = frozenset()
"""Events the timeline does not fold: none (``tests/core/test_sinks_cover_events.py``); the
``case _`` below is for types of a newer writer."""


def reduce(state: SessionState, event: ev.Event) -> SessionState:
    """The state after ``event``. Events already seen (by ``seq``) are ignored."""
    if event.seq <= state.last_seq:
        return state
    match event:
        case ev.RunStarted():
            new = _run_started(state, event)
        case ev.PlanUpdated():
            steps = tuple(
                {"step": str(p.get("step", "")), "status": str(p.get("status", "pending"))}
                for p in event.steps
            )
            new = replace(state, plan=steps)
        case ev.TextDelta():
            new = _text_delta(state, event)
        case ev.AssistantMessage():
            new = _assistant_message(state, event)
        case ev.ModelRetry():
            new = replace(state, retry=_retry_line(event))
        case ev.ModelNote():
            new = replace(state, retry=f"note: {event.text}")
        case ev.ApprovalRequested():
            item = ApprovalItem(
                f"approval-{event.seq}", event.tool_call_id, event.step, event.name, event.arguments
            )
            new = replace(state, items=(*state.items, item))
        case ev.ApprovalDecided():
            new = _update(
                state,
                ApprovalItem,
                event.tool_call_id,
                approved=event.approved,
                remember=event.remember,
            )
        case ev.ToolCallStarted():
            new = _tool_call_started(state, event)
        case ev.CellOutput():
            new = _update(state, CellItem, event.tool_call_id, add_output=dict(event.output))
        case ev.ToolCallFinished():
            new = _tool_call_finished(state, event)
        case ev.UsageUpdated():
            new = replace(
                state,
                prompt_tokens=event.total_prompt_tokens,
                completion_tokens=event.total_completion_tokens,
                tokens_estimated=state.tokens_estimated or event.total_estimated or event.estimated,
            )
        case ev.RunFinished():
            new = _run_finished(state, event)
        case ev.CellDecision():
            new = _update(state, CellItem, event.tool_call_id, decision=event.accepted)
        case ev.HelperEvent():
            new = _helper_event(state, event)
        case ev.PackagesInstalled():
            note = NoteItem(f"installed-{event.seq}", event.summary(), ())
            new = replace(state, items=(*state.items, note))
        case ev.SessionRestored():
            note = NoteItem(f"restored-{event.seq}", event.summary, tuple(event.problems))
            new = replace(state, items=(*state.items, note))
        case ev.NetworkRequest():
            note = NoteItem(f"network-{event.seq}", f"Network: {event.summary()}", ())
            network = state.network.with_request(event)
            new = replace(state, items=(*state.items, note), network=network)
        case ev.NetworkApprovalRequested():
            new = replace(state, network=state.network.with_ask(event))
        case ev.NetworkApprovalDecided():
            note = NoteItem(f"network-{event.seq}", answer_line(event), ())
            network = state.network.with_answer(event)
            new = replace(state, items=(*state.items, note), network=network)
        case _:
            new = state
    return replace(new, last_seq=event.seq)


def _run_started(s: SessionState, e: ev.RunStarted) -> SessionState:
    extra = e.config.get("extra_context") or {}
    price = extra.get("price")
    files = extra.get("instruction_files")
    applied = tuple(str(f) for f in files) if isinstance(files, list) else s.instructions
    return replace(
        s,
        items=(*s.items, PromptItem(f"prompt-{e.seq}", e.prompt, e.run_index, e.title)),
        status=RUNNING,
        reason="",
        model=e.model or s.model,
        step=0,
        run_started_at=e.time,
        run_finished_at=None,
        retry="",
        enforcement=dict(e.enforcement),
        price=price or s.price,
        preloaded=tuple(e.preloaded) if e.preloaded is not None else s.preloaded,
        instructions=applied,
    )


def _retry_line(e: ev.ModelRetry) -> str:
    if not e.attempt:  # attempt 0: a note (e.g. streaming turned off), not a failure
        return f"note: {e.reason}"
    return f"model request failed ({e.reason}); retry {e.attempt} in {e.wait_s:.1f} s"


def _text_delta(s: SessionState, e: ev.TextDelta) -> SessionState:
    index = _find(
        s, lambda i: isinstance(i, TextItem) and i.step == e.step and not i.is_answer, this_run=True
    )
    current = s.items[index] if index is not None else None
    if isinstance(current, TextItem) and index == len(s.items) - 1:
        return _put(s, index, replace(current, text=current.text + e.text))
    item = TextItem(f"text-{e.seq}", e.step, e.text)
    return replace(s, items=(*s.items, item), step=max(s.step, e.step))


def _assistant_message(s: SessionState, e: ev.AssistantMessage) -> SessionState:
    content = e.message.get("content") or ""
    is_answer = not e.message.get("tool_calls")
    s = replace(s, step=max(s.step, e.step), retry="")
    index = _find(s, lambda i: isinstance(i, TextItem) and i.step == e.step, this_run=True)
    if index is not None:
        current = s.items[index]
        assert isinstance(current, TextItem)
        if not content:
            return _drop(s, index) if not current.text.strip() else s
        return _put(s, index, replace(current, text=content, is_answer=is_answer))
    if not content.strip():
        return s
    item = TextItem(f"text-{e.seq}", e.step, content, is_answer)
    return replace(s, items=(*s.items, item))


def _tool_call_started(s: SessionState, e: ev.ToolCallStarted) -> SessionState:
    traits = e.tool
    if traits.shown_as == "plan":
        return s
    if traits.shown_as == "cell":
        cell = _new_cell(s, e.tool_call_id, e.step, e.name, e.shown_code() or "")
        cell = replace(cell, language=traits.language or "python")
        return replace(s, items=(*s.items, cell))
    item = ToolItem(f"tool-{e.tool_call_id}", e.tool_call_id, e.step, e.name, e.arguments)
    item = replace(item, starts_agents=traits.starts_agents)
    return replace(s, items=(*s.items, item))


def _new_cell(s: SessionState, tcid: str, step: int, tool: str, code: str) -> CellItem:
    cells = s.cells
    previous = cells[-1] if cells else None
    fixes = previous.number if previous and previous.status in ("error", "timeout") else None
    return CellItem(f"cell-{tcid}", tcid, step, len(cells) + 1, tool, code, fixes=fixes)


def _tool_call_finished(s: SessionState, e: ev.ToolCallFinished) -> SessionState:
    tcid = e.tool_call_id
    if e.tool.shown_as == "plan":
        return s
    index = _find(s, lambda i: isinstance(i, (CellItem, ToolItem)) and i.tool_call_id == tcid)
    found = s.items[index] if index is not None else None
    if isinstance(found, (CellItem, ToolItem)) and found.finished:
        # a call reusing a finished call's id (refused): its own line, never that one's
        item = ToolItem(f"tool-{tcid}-{e.seq}", tcid, e.step, e.name, None)
        s, index = replace(s, items=(*s.items, item)), len(s.items)
    elif index is not None and isinstance(s.items[index], CellItem):
        current = s.items[index]
        assert isinstance(current, CellItem)
        done = replace(
            current,
            code=e.code if e.code is not None else current.code,
            outputs=tuple(e.outputs) if e.outputs else current.outputs,
            status=e.status or "ok",
            execution_count=e.execution_count,
            duration_s=float(e.duration_s or 0.0),
            note=e.note or (e.result[:200] if e.status == "refused" else ""),
            ran=e.code is not None,
            edit=e.edit if e.edit is not None else current.edit,
        )
        return _put(s, index, done)
    if index is None:  # never started (refused, or denied at approval): one line
        asked = _find(s, lambda i: isinstance(i, ApprovalItem) and i.tool_call_id == tcid)
        args = s.items[asked].arguments if asked is not None else None  # type: ignore[union-attr]
        item = ToolItem(f"tool-{tcid}", tcid, e.step, e.name, args)
        s, index = replace(s, items=(*s.items, item)), len(s.items)
    current = s.items[index]
    assert isinstance(current, ToolItem)
    diff = str((e.edit or {}).get("diff", ""))  # a file's edit (a cell's is a CellItem's)
    done = replace(current, status=e.status or "ok", result=e.result, diff=diff)
    return _put(s, index, done)


def _helper_event(s: SessionState, e: ev.HelperEvent) -> SessionState:
    """A helper's event, folded into its own state under the ``delegate`` call's item."""
    index = _find(s, lambda i: isinstance(i, ToolItem) and i.tool_call_id == e.parent_tool_call_id)
    inner = e.inner()
    if index is None or inner is None:
        return s
    call = s.items[index]
    assert isinstance(call, ToolItem)
    groups = list(call.helpers)
    at = next((n for n, g in enumerate(groups) if g.child == e.child), None)
    if at is None:  # helpers start in any order; their groups keep the order of the tasks
        groups.append(HelperGroup(e.child, e.task, SessionState()))
        groups.sort(key=lambda g: _label_key(g.child))
        at = next(n for n, g in enumerate(groups) if g.child == e.child)
    groups[at] = replace(groups[at], state=reduce(groups[at].state, inner))
    return _put(s, index, replace(call, helpers=tuple(groups)))


def _label_key(label: str) -> tuple[int, ...]:
    """``"1-10"`` -> ``(1, 10)``: helper labels in numeric order (others last)."""
    parts = label.split("-")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else (1 << 30,)


def _run_finished(s: SessionState, e: ev.RunFinished) -> SessionState:
    items = tuple(
        replace(i, status="cancelled") if isinstance(i, CellItem) and not i.finished else i
        for i in s.items
    )
    has_answer = any(isinstance(i, TextItem) and i.is_answer and i.text == e.answer for i in items)
    item = FinishedItem(
        f"finished-{e.seq}",
        e.status,
        e.reason,
        None if has_answer else e.answer,
        e.steps,
        float(e.duration_s or 0.0),
    )
    usage = e.usage or {}
    return replace(
        s,
        items=(*items, item),
        status=e.status,
        reason=e.reason,
        step=e.steps,
        run_finished_at=e.time,
        retry="",
        prompt_tokens=int(usage.get("prompt_tokens", s.prompt_tokens)),
        completion_tokens=int(usage.get("completion_tokens", s.completion_tokens)),
        tokens_estimated=s.tokens_estimated or bool(usage.get("estimated")),
    )


# -- tuple helpers ------------------------------------------------------------------------


def _find(s: SessionState, pred: Callable[[Any], bool], *, this_run: bool = False) -> int | None:
    """Index of the last item matching ``pred`` (only in the current run if ``this_run``)."""
    for index in range(len(s.items) - 1, -1, -1):
        item = s.items[index]
        if pred(item):
            return index
        if this_run and isinstance(item, PromptItem):
            return None
    return None


def _update(s: SessionState, kind: type, tool_call_id: Any, **changes: Any) -> SessionState:
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


def _put(s: SessionState, index: int, item: Item) -> SessionState:
    return replace(s, items=(*s.items[:index], item, *s.items[index + 1 :]))


def _drop(s: SessionState, index: int) -> SessionState:
    return replace(s, items=(*s.items[:index], *s.items[index + 1 :]))

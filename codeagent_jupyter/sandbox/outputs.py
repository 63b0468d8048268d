"""Turn IOPub messages into bounded nbformat outputs.

The recording keeps up to ``output_bytes`` of real outputs (then a visible marker). Their
text (``ExecResult.text``, ``textbounds.render_outputs``) is rendered from these outputs,
once, and a tool bounds it for the model (``AgentConfig.result_chars``).
"""

from __future__ import annotations

import json
from typing import Any

from ..core.ports import OutputCallback
from ..util.nbschema import new_output, output_from_msg
from ..util.textbounds import head_tail

TRACEBACK_LIMIT = 20_000
_OUTPUT_TYPES = {"stream", "display_data", "execute_result", "error"}


def collapse_cr(text: str) -> str:
    """Keep what a terminal would show of ``\\r``-redrawn lines (progress bars)."""
    if "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    out = []
    for line in lines:
        parts = [p for p in line.split("\r") if p]
        out.append(parts[-1] if parts else "")
    return "\n".join(out)


def _size(output: dict[str, Any]) -> int:
    if output["output_type"] == "stream":
        return len(output["text"].encode())
    if output["output_type"] == "error":
        return sum(len(line) for line in output.get("traceback", []))
    values = output["data"].values()
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in values)


class OutputCollector:
    """Accumulates the outputs of one execution within a byte budget.

    When streams overflow, the head is kept up to the budget and the last few KB of each
    stream are kept too (after the truncation marker): the end of a long log is usually
    where the result or the error is.
    """

    def __init__(self, budget: int, on_output: OutputCallback | None = None) -> None:
        self.budget = budget
        self.used = 0
        self.dropped = 0
        self.tail_limit = min(budget // 10, 16_384)
        self._tails: dict[str, str] = {}
        self.outputs: list[dict[str, Any]] = []
        self._on_output = on_output
        self._clear_pending = False

    def add(self, msg: dict[str, Any]) -> None:
        """Record one IOPub message (non-output messages are ignored)."""
        msg_type = msg["header"]["msg_type"]
        if msg_type == "clear_output":
            if msg["content"].get("wait"):
                self._clear_pending = True
            else:
                self.outputs.clear()
            return
        if msg_type not in _OUTPUT_TYPES:
            return
        if self._clear_pending:
            self.outputs.clear()
            self._clear_pending = False
        output = output_from_msg(msg)
        if output["output_type"] == "error":
            # A traceback is the most useful output there is: always kept, but capped.
            output["traceback"] = _cap_lines(list(output.get("traceback", [])), TRACEBACK_LIMIT)
            self._keep(output)
            return
        size = _size(output)
        room = self.budget - self.used
        if size > room:
            if output["output_type"] == "stream":
                kept = output["text"].encode()[: max(room, 0)].decode(errors="ignore")
                self._keep_tail(output["name"], output["text"][len(kept) :])
                if not kept:
                    return
                output["text"] = kept
                size = len(kept.encode())
            else:
                self.dropped += size
                return
        self.used += size
        self._keep(output)

    def _keep(self, output: dict[str, Any]) -> None:
        if self._on_output is not None:
            self._on_output(output)
        last = self.outputs[-1] if self.outputs else None
        if (
            output["output_type"] == "stream"
            and last is not None
            and last["output_type"] == "stream"
            and last["name"] == output["name"]
        ):
            last["text"] = collapse_cr(last["text"] + output["text"])
            return
        stored = type(output)(output)  # the callback's copy must not change when merged
        if stored["output_type"] == "stream":
            stored["text"] = collapse_cr(stored["text"])
        self.outputs.append(stored)

    def _keep_tail(self, name: str, text: str) -> None:
        tail = self._tails.get(name, "") + text
        if len(tail) > self.tail_limit:
            self.dropped += len(tail[: -self.tail_limit].encode())
            tail = tail[-self.tail_limit :]
        self._tails[name] = tail

    def finish(self) -> list[dict[str, Any]]:
        """The outputs, with a truncation marker (then each stream's tail) if anything was cut."""
        tails, self._tails = self._tails, {}
        if self.dropped:
            marker = (
                f"\n[output truncated: {self.dropped} more bytes not kept "
                f"(limit {self.budget} bytes per cell)]\n"
            )
            node = new_output("stream", name="stderr", text=marker)
            self.outputs.append(node)
            if self._on_output is not None:
                self._on_output(node)
            self.dropped = 0
        for name, tail in tails.items():
            self._keep(_stream(name, tail))
        return self.outputs


def _stream(name: str, text: str) -> dict[str, Any]:
    return new_output("stream", name=name, text=text)


def _cap_lines(lines: list[str], limit: int) -> list[str]:
    total = sum(len(line) for line in lines)
    if total <= limit:
        return lines
    head = head_tail("\n".join(lines), limit)
    return head.split("\n")

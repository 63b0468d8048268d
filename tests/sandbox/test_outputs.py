"""Output shaping without a kernel: what a model and a recording get to see."""

from __future__ import annotations

import base64
import struct

from codeagent_jupyter.sandbox.outputs import OutputCollector, collapse_cr
from codeagent_jupyter.util.textbounds import head_tail, render_outputs


def _msg(msg_type: str, **content: object) -> dict:
    return {"header": {"msg_type": msg_type}, "content": content, "parent_header": {}}


def test_progress_bar_redraws_collapse_to_last_state() -> None:
    assert collapse_cr("10%\r50%\r100%\ndone\n") == "100%\ndone\n"
    assert collapse_cr("a\r\nb") == "a\nb"


def test_bound_text_keeps_head_and_tail_with_elided_count() -> None:
    text = "\n".join(f"line {i}" for i in range(2000))
    out = head_tail(text, 400)
    assert len(out) < 500
    assert out.startswith("line 0\n") and out.endswith("line 1999")
    assert "characters elided" in out


def test_collector_budget_marker_and_stream_merge() -> None:
    seen: list[dict] = []
    c = OutputCollector(budget=100, on_output=seen.append)
    c.add(_msg("stream", name="stdout", text="a" * 60))
    c.add(_msg("stream", name="stdout", text="b" * 60))
    c.add(_msg("stream", name="stdout", text="c" * 60))
    c.add(_msg("error", ename="ValueError", evalue="x", traceback=["\x1b[31mValueError\x1b[0m: x"]))
    outs = c.finish()
    assert outs[0]["text"] == "a" * 60 + "b" * 40  # merged, cut at the budget
    assert outs[1]["output_type"] == "error"  # tracebacks survive the budget
    assert "output truncated: 70 more bytes" in outs[2]["text"]
    assert outs[3] == {"output_type": "stream", "name": "stdout", "text": "c" * 10}  # the tail
    assert len(seen) == 5
    text = render_outputs(outs)
    assert "\x1b" not in text and "ValueError: x" in text


def test_images_and_html_become_placeholders() -> None:
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 640, 480)
    c = OutputCollector(budget=10_000)
    data = {"image/png": base64.b64encode(png + b"\0" * 20).decode(), "text/plain": "<Figure>"}
    c.add(_msg("display_data", data=data, metadata={}))
    c.add(_msg("display_data", data={"text/html": "<b>x</b>"}, metadata={}))
    assert render_outputs(c.finish()) == "[image/png 640x480]\n[text/html output]"

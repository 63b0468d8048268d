"""The panel's body: the timeline's scroller and the prompt box (the header is ``header``).

The timeline scrolls inside a bounded height so that the header (Stop, a pending approval)
and the prompt box stay on screen however long the run gets; a column-reverse scroller
keeps its view at the bottom as items arrive (the newest output stays in sight) and lets
the user scroll back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from .header import button

TIMELINE_HEIGHT = "60vh"
PLACEHOLDER = "Ask the agent, e.g. plot monthly revenue from @sales.csv (or point at @df, @In[3])"


def timeline() -> tuple[w.VBox, w.VBox]:
    """(the box the items go in, the scroller that holds it)."""
    items = w.VBox([], layout=w.Layout(width="100%", flex="0 0 auto"))
    items.add_class("codeagent-items")
    scroller = w.VBox(
        [items],
        layout=w.Layout(
            width="100%", max_height=TIMELINE_HEIGHT, overflow="auto", flex_flow="column-reverse"
        ),
    )
    scroller.add_class("codeagent-timeline")
    return items, scroller


def composer(
    on_send: Callable[[], Any], on_typing: Callable[[dict[str, Any]], Any]
) -> tuple[w.Textarea, w.Button, w.HBox]:
    """(the prompt box, Send, the row holding both; it wraps in a narrow side panel)."""
    prompt = w.Textarea(
        placeholder=PLACEHOLDER,
        layout=w.Layout(flex="1 1 14em", height="60px"),
        continuous_update=True,
    )
    prompt.add_class("codeagent-prompt")
    prompt.observe(on_typing, "value")
    send = button("Send", "codeagent-send", on_send, button_style="primary")
    row = w.HBox([prompt, send], layout=w.Layout(width="100%", flex_flow="row wrap"))
    return prompt, send, row

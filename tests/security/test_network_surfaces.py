"""Hostile host names, URLs, methods and rules on every surface that shows the network.

The real broker refuses a host outside its strict syntax before anyone is asked (the
panel test sends one raw through the sandbox's proxy: ``tests/widget/test_panel_network``).
These events carry what it would never let through, as a forged or future event stream
could: each attack string as host, URL, method and rule, folded as the panel folds them and
drawn by the network card, the "Network" section, the chat's question and the change set
line. Nothing may come out as live markup.
"""

from __future__ import annotations

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.persona import render as persona
from codeagent_jupyter.record.changes import ChangeSet
from codeagent_jupyter.record.changes_network import network_of
from codeagent_jupyter.record.changes_text import markdown
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.timeline.state import NoteItem
from codeagent_jupyter.widget.network_view import ask_html, section_html, section_title
from tests.widget.test_render import ATTACKS, assert_inert


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_network_surface_shows_the_attack_as_text(attack: str) -> None:
    hostile = ATTACKS[attack]
    state = fold(
        [
            ev.NetworkApprovalRequested(
                seq=1, host=hostile, port=443, method=hostile, rule=hostile, timeout_s=5
            ),
            ev.NetworkRequest(
                seq=2, method=hostile, url=f"http://{hostile}/?q={hostile}", rule=hostile
            ),
            ev.NetworkApprovalDecided(seq=3, host=hostile, answer=hostile),
            ev.NetworkApprovalRequested(seq=4, host=hostile, port=80, method="GET"),
        ]
    )
    network = state.network
    assert network.asks and network.requests == 1
    card = ask_html(network.asks[0], 0)
    table = section_html(network)
    for fragment in (card, table, persona.network_ask_body(hostile, 443, hostile, 5)):
        assert_inert(fragment)
    notes = [i for i in state.items if isinstance(i, NoteItem)]
    assert len(notes) == 2  # the request's line and the answer's, in the timeline and chat
    for note in notes:
        assert_inert(persona.note_body(note))
    assert len(section_title(network)) <= 200  # an Accordion title: plain text, bounded
    entry = {"type": "network_request", "url": f"http://{hostile}/", "allowed": False}
    summary = network_of({"events": [entry]})
    assert summary is not None
    assert_inert(markdown(ChangeSet(network=summary)))

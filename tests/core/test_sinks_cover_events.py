"""Every sink handles every event kind, or says it ignores it: a new ``Event`` subclass fails
here until each sink has a ``case`` for it or lists it in its ``IGNORED_EVENTS``.

The sinks dispatch with ``match event: case ev.Kind():``; this reads those cases from their
source, so an event a sink would silently drop is found without running a session.
"""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

from codeagent_jupyter import events as ev

SINKS = {
    "codeagent_jupyter.cli.printer": (),
    "codeagent_jupyter.cli.terminal": ("codeagent_jupyter.cli.printer",),  # super().emit first
    "codeagent_jupyter.timeline.fold": (),
    "codeagent_jupyter.record.recorder": (),
}
"""Sink module -> the modules whose cases it inherits."""


def event_kinds() -> set[str]:
    return {cls.__name__ for cls in ev.Event.__subclasses__()} - {"ChildEvent"}


def cases(module_name: str) -> set[str]:
    """The event classes a module's ``match`` statements name in a ``case ev.X()``."""
    tree = ast.parse(inspect.getsource(importlib.import_module(module_name)))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.match_case):
            for pattern in ast.walk(node.pattern):
                if isinstance(pattern, ast.MatchClass) and isinstance(pattern.cls, ast.Attribute):
                    found.add(pattern.cls.attr)
    return found


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_every_event_is_handled_or_ignored_on_purpose(sink: str) -> None:
    module = importlib.import_module(sink)
    handled = cases(sink).union(*(cases(parent) for parent in SINKS[sink]))
    owner = SINKS[sink][0] if SINKS[sink] else sink
    ignored = {cls.__name__ for cls in importlib.import_module(owner).IGNORED_EVENTS}
    assert event_kinds() - handled - ignored == set(), f"{sink} drops these events"
    assert handled & ignored == set(), f"{sink} both handles and ignores these"
    assert hasattr(module, "IGNORED_EVENTS") or SINKS[sink]


def test_the_check_sees_a_missing_case() -> None:
    """A sink without a case for an event is found (the check can fail)."""
    assert "ModelNote" in cases("codeagent_jupyter.cli.printer")
    assert "PackagesInstalled" not in cases("codeagent_jupyter.cli.terminal")

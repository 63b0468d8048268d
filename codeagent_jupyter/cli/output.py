"""The CLI's one way to write a line for people: everything passes ``visible`` first.

The run's trace has its own printers (``printer.py``, ``terminal.py``, which make every
line visible the same way); everything else the commands print goes through here: the
answer, the changed files, ``codeagent diff``, the session's path, warnings and errors. A
file name, an answer or an error message may hold bytes the sandbox or a model chose; on a
terminal they are shown, never obeyed. Colour and Markdown styling are added afterwards,
by ``rich`` from ``Text`` objects, only when the stream is a terminal.
"""

from __future__ import annotations

import html
import re
import sys
from typing import TextIO

from ..util.visible import visible


def say(text: str, stream: TextIO | None = None) -> None:
    """Writes ``text`` and a newline, every control character in it made visible."""
    stream = stream or sys.stdout
    stream.write(visible(text) + "\n")
    stream.flush()


def warn(text: str) -> None:
    """A line on stderr (warnings, errors): the same writer, the other stream."""
    say(text, sys.stderr)


def _console(stream: TextIO) -> object:
    from rich.console import Console

    return Console(file=stream, force_terminal=True, highlight=False, soft_wrap=False)


def _terminal(stream: TextIO) -> bool:
    from .terminal import wants_live_view

    return wants_live_view(stream)


def answer(text: str, stream: TextIO | None = None) -> None:
    """The model's answer: rendered as Markdown on a terminal, the text itself elsewhere.

    Links are not made clickable (a link's text and target may differ, and the target is
    the model's choice); the text is made visible before the Markdown is parsed, character
    references to controls included."""
    stream = stream or sys.stdout
    if not _terminal(stream):
        say(text, stream)
        return
    from rich.markdown import Markdown

    console = _console(stream)
    source = _ENTITY.sub(_entity_shown, visible(text))
    console.print(Markdown(source, hyperlinks=False))  # type: ignore[attr-defined]
    stream.flush()


_ENTITY = re.compile(r"&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});")
"""A character reference, which Markdown decodes *after* ``visible`` saw the text."""


def _entity_shown(match: re.Match[str]) -> str:
    """``&#x202e;`` or ``&rlm;`` would become the control itself: its visible spelling
    instead. Every other reference is left for Markdown to decode."""
    char = html.unescape(match.group())
    return visible(char) if len(char) == 1 and visible(char) != char else match.group()


def diff(text: str, stream: TextIO | None = None) -> None:
    """A change set's text (``codeagent diff``): coloured line by line on a terminal."""
    stream = stream or sys.stdout
    if not _terminal(stream):
        say(text, stream)
        return
    from .file_steps import diff_line

    console = _console(stream)
    for line in text.split("\n"):
        console.print(diff_line(line), soft_wrap=True)  # type: ignore[attr-defined]
    stream.flush()

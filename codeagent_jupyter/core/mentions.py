"""``@``-mentions in a request: ``@df`` (a variable), ``@data/sales.csv`` (a file or a
folder), ``@In[7]`` or ``@cell:3`` (a notebook cell).

Parsing only, no access to anything: the user's kernel resolves variables (as ``--with``
does) and the server resolves files and cells (``mentioned``). A mention is an ``@`` at the
start of a word: an e-mail address (``ana@example.org``) is not one, and nothing inside a
fenced code block or an inline code span is (a decorator in pasted code stays code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VARIABLE = "variable"
"""``@name``: a variable of the user's kernel, else a file or folder of that name."""
PATH = "path"
CELL = "cell"

MAX_MENTIONS = 20
"""Mentions resolved in one message; more is a mistake the user hears about."""

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_MENTION = re.compile(
    r"(?<![\w@.\-/\\])@"
    r"(?:In\s?\[(?P<count>\d{1,6})\]|cell:(?P<position>\d{1,6})|(?P<word>[\w.\-/]+))"
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,79}$")
_TRAILING = ".,;:!?)-"


@dataclass(frozen=True)
class Mention:
    """One mention: its ``kind``, the ``value`` named (a name, a relative path, or a cell
    number) and how it was written (``text``, for messages)."""

    kind: str
    value: str
    text: str


def _blank_code(text: str) -> str:
    """``text`` with code blocks and spans blanked out (same length, so offsets hold)."""
    return _CODE.sub(lambda m: " " * len(m.group(0)), text)


def parse(text: str) -> list[Mention]:
    """The mentions in ``text``, in order, each once."""
    found: list[Mention] = []
    for match in _MENTION.finditer(_blank_code(text)):
        mention = _classify(match)
        if mention is not None and mention not in found:
            found.append(mention)
    return found


def _classify(match: re.Match[str]) -> Mention | None:
    if match.group("count") is not None:
        return Mention(CELL, f"In[{int(match.group('count'))}]", match.group(0))
    if match.group("position") is not None:
        return Mention(CELL, f"cell:{int(match.group('position'))}", match.group(0))
    word = match.group("word").rstrip(_TRAILING)
    if not word:
        return None
    if _IDENTIFIER.match(word):
        return Mention(VARIABLE, word, "@" + word)
    if ("/" in word or "." in word) and word.isascii():
        return Mention(PATH, word, "@" + word)
    return None  # "@2x", "@-": not a mention


def is_name(word: str) -> bool:
    """Whether ``word`` is written as ``@name`` mentions a variable (an identifier)."""
    return bool(_IDENTIFIER.match(word))


def variable_names(text: str) -> list[str]:
    """The names of ``@name`` mentions: the user's kernel copies those it has (``--with``)."""
    return [m.value for m in parse(text) if m.kind == VARIABLE]

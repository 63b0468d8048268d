"""Text from the sandbox, a model or a shared notebook, made safe to write to a terminal.

A terminal obeys the control characters it is sent: ``ESC ] 52`` writes the user's
clipboard, ``ESC ] 0`` the window title, ``ESC ] 8`` makes a link say one thing and open
another, ``ESC [ 8 m`` hides text, a C1 byte (``\\x9b``) starts a sequence without any ESC,
and a bidi override (U+202E) shows characters in another order than they are. None of that
may reach a terminal from bytes someone else wrote, so every such character is *shown*
instead (``^[``, ``\\x9b``, ``\\u202e``): the user sees that it was there, and the terminal
obeys nothing. Colour that the CLI adds itself is applied after this, never before.
"""

from __future__ import annotations

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Characters that reorder or mark the direction of text: overrides, embeddings, isolates
and the invisible direction marks."""


def _table(*, keep_cr: bool) -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if code in (0x09, 0x0A) or (keep_cr and code == 0x0D):
            continue
        table[code] = "^" + chr(code + 0x40)  # caret notation: ESC is ^[, NUL is ^@
    table[0x7F] = "^?"
    for code in range(0x80, 0xA0):
        table[code] = f"\\x{code:02x}"
    for code in _BIDI:
        table[code] = f"\\u{code:04x}"
    return table


_VISIBLE = _table(keep_cr=False)
_VISIBLE_KEEP_CR = _table(keep_cr=True)


def visible(text: str, *, keep_cr: bool = False) -> str:
    """``text`` with every C0 and C1 control (but newline and tab) and every bidi control
    replaced by a visible spelling of it. ``keep_cr`` keeps carriage returns, for the one
    caller that draws a redrawn line itself."""
    return text.translate(_VISIBLE_KEEP_CR if keep_cr else _VISIBLE)


def is_visible(text: str) -> bool:
    """Whether ``text`` holds nothing ``visible`` would change (for tests and checks)."""
    return visible(text) == text

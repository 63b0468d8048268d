"""How a shell command becomes a notebook cell: one rule for the session notebook, the cells a
user accepts and ``run_command``'s own notebook cell."""

from __future__ import annotations


def command_source(command: str) -> str:
    """The notebook cell that re-runs a shell command: ``!command``, or ``%%bash`` when the
    command spans lines or uses ``$``/braces (IPython would expand them in a ``!`` line)."""
    plain = not any(c in command for c in "\n${}")
    return f"!{command.strip()}" if plain else f"%%bash\n{command}"

"""The ``policy`` hook: no package installs and no network-looking commands.

A classroom or a locked-down server wants the agent to work with what is installed and
never to fetch from the network, also where the sandbox's own network cut is missing. This
denies, with a reason the model can act on, ``run_command`` commands and ``run_cell`` code
that install packages (``pip``/``conda``/``apt`` installs, ``%pip``) or look like network use
(``curl``, ``wget``, ``ssh``, ``git clone``, a URL, …). It is a filter, not a boundary: the
sandbox's network namespace is the boundary; this keeps the agent from trying.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .base import Allow, Deny, ToolCall

INSTALL = [
    (r"\bpip3?\s+install\b|%pip\b|\bpython3?\s+-m\s+pip\s+install\b", "pip install"),
    (r"\b(mamba|micromamba|conda)\s+install\b|%conda\b", "conda install"),
    (r"\bapt(-get)?\s+(install|update|upgrade)\b|\bdpkg\s+-i\b", "apt"),
    (r"\bnpm\s+(install|i)\b", "npm install"),
]
NETWORK = [
    (r"\b(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp)\b", "a network tool"),
    (r"\bgit\s+(clone|fetch|pull|push)\b", "git over the network"),
    (r"\b(https?|ftp)://", "a URL"),
]


class PolicyHook:
    """Denies installs and network-looking code; ``block_network=False`` keeps only installs."""

    name = "policy"

    def __init__(
        self,
        block_installs: bool = True,
        block_network: bool = True,
        extra_patterns: Iterable[str] = (),
        tools: Iterable[str] = ("run_command", "run_cell"),
    ) -> None:
        installs = INSTALL if block_installs else []
        network = NETWORK if block_network else []
        extra = [(p, f"the pattern {p!r}") for p in extra_patterns]
        self.code_rules = _compile(installs + extra)
        """Checked on all of the code: installs from Python are installs too."""
        self.shell_rules = _compile(installs + network + extra)
        """Checked on shell commands: ``run_command``, ``!lines`` and ``%%bash`` cells."""
        self.tools = frozenset(tools)

    def before_tool(self, call: ToolCall) -> Allow | Deny:
        if call.name not in self.tools:
            return Allow()
        code = str(call.arguments.get("code", ""))
        checks = [(self.code_rules, code), (self.shell_rules, _shell(call.name, call.arguments))]
        for rules, text in checks:
            for pattern, what in rules:
                found = pattern.search(text)
                if not found:
                    continue
                return Deny(
                    f"{what} is not allowed on this server ({found.group(0)!r}); work with the "
                    "packages and files already there"
                )
        return Allow()


def _compile(rules: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p, re.IGNORECASE), what) for p, what in rules]


def _shell(tool: str, arguments: dict[str, Any]) -> str:
    """The shell part of a call: a command, or a cell's ``!`` lines and shell cell magics."""
    if tool == "run_command":
        return str(arguments.get("command", ""))
    code = str(arguments.get("code", ""))
    if code.lstrip().startswith(("%%bash", "%%sh", "%%script")):
        return code
    return "\n".join(line for line in code.splitlines() if line.lstrip().startswith("!"))

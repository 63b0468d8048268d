"""The ``policy`` hook: no package installs and no network-looking commands.

A classroom or a locked-down server wants the agent to work with what is installed and
never to fetch from the network. This denies, with a reason the model can act on, the calls
of every tool whose traits say the policy checks it (``ToolTraits.policy_checked``: by
default every tool that runs code, in the kernel or on the host, so a new tool is checked
unless it says otherwise) that install packages (``pip``/``conda``/``apt`` installs,
``%pip``, ``%conda``, ``python -m pip``, pip imported from Python) or run a network-looking
command (``curl``, ``wget``, ``ssh``, ``git clone``, a URL, …). What is checked is the code
the call would run (``ToolCall.code``): a shell tool's command; a Python tool's code, and
every form in which a cell reaches the shell: ``!``, ``out = !…``, ``%sx``, ``%%bash``,
``get_ipython().system``, ``os.system``, ``subprocess.run([...])`` and the like (see
``commands``); a tool that shows no code has all of its arguments checked against every rule.

It is a filter on what the model asks for, not a boundary: code that assembles its command
at run time gets past it. The boundary is the sandbox itself, which has no network; this
keeps the agent from trying, and says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..traits import code_before_traits, traits_for
from .base import Allow, Deny, ToolCall
from .commands import cell_commands

INSTALL = [
    (r"\bpip[\d.]*\s+install\b|%pip\b|\bpython[\d.]*\s+-m\s+pip\b|\bimport pip\b", "pip install"),
    (r"\bfrom pip\b|\b(run_module|import_module|__import__)\(\s*[\"']pip\b", "pip install"),
    (r"\buv\s+(pip|add|tool)\b|\bpipx\s+install\b|\beasy_install\b|%uv\b", "pip install"),
    (r"\b(mamba|micromamba|conda)\s+install\b|%(conda|mamba|micromamba)\b", "conda install"),
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
        tools: Iterable[str] = (),
    ) -> None:
        installs = INSTALL if block_installs else []
        network = NETWORK if block_network else []
        extra = [(p, f"the pattern {p!r}") for p in extra_patterns]
        self.code_rules = _compile(installs + extra)
        """Checked on all of the code: installs from Python are installs too."""
        self.shell_rules = _compile(installs + network + extra)
        """Checked on commands: ``run_command``'s, and those a cell would run (``commands``)."""
        self.tools = frozenset(tools)
        """Tools checked besides those whose traits ask for it (by name: the option)."""

    def before_tool(self, call: ToolCall) -> Allow | Deny:
        traits = traits_for(call.name, call.traits)
        if not traits.policy_checked and call.name not in self.tools:
            return Allow()
        code = (
            call.code if call.traits is not None else code_before_traits(call.name, call.arguments)
        )
        for rules, text in self._checks(traits.language, code, call.arguments):
            for pattern, what in rules:
                found = pattern.search(text)
                if not found:
                    continue
                return Deny(
                    f"{what} is not allowed on this server ({found.group(0)!r}); work with the "
                    "packages and files already there"
                )
        return Allow()

    def _checks(self, language: str, code: str | None, arguments: Any) -> list[Checked]:
        """What to check against which rules: a shell tool's command against the shell's;
        a Python tool's code against the code's, and the command lines it would run against
        the shell's; anything else (no code shown) all of its arguments against all."""
        if code is not None and language == "shell":
            return [(self.shell_rules, code)]
        if code is not None and language == "python":
            return [(self.code_rules, code)] + [(self.shell_rules, t) for t in _shell(code)]
        text = code if code is not None else json.dumps(arguments, default=str)
        return [(self.code_rules, text), (self.shell_rules, text)]


Checked = tuple[list[tuple[re.Pattern[str], str]], str]


def _compile(rules: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p, re.IGNORECASE), what) for p, what in rules]


def _shell(code: str) -> list[str]:
    """Every command line a cell would run (all of the cell when it is not valid IPython:
    checked whole rather than not at all)."""
    commands = cell_commands(code)
    return [code] if commands is None else [command.text for command in commands]

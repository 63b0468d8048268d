"""What a tool is (``ToolTraits``), in the words events carry: declared on each tool
(``tools/``), carried by its ``ToolCallStarted`` and ``ToolCallFinished``, read by every layer
above the tools instead of the tool's name.

Part of the vocabulary beside ``events``: it imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

ToolRuns = Literal["kernel", "workspace", "host", "none"]
"""Where a tool's call runs: in the sandbox kernel, on the workspace's files (confined, on the
host), outside the sandbox with the host's privileges, or nowhere (a note, a plan)."""


@dataclass(frozen=True)
class ToolTraits:
    """What a tool is, declared once on the tool (``tools/registry.py``) and carried by its
    events, so that no layer above the tools tells tools apart by their names.

    The defaults fail closed: a tool that says nothing runs outside the sandbox, is seen by
    the policy hook and writes nothing the recorder would re-run.
    """

    runs: ToolRuns = "host"
    writes_workspace: bool = False
    """A call may change the workspace: snapshotted after, and re-run on resume."""
    approval: Literal["auto", "ask"] = "auto"
    """The approval it gets when the configuration names no other for it."""
    policy_checked: bool | None = None
    """The policy hook checks its calls; unset: every tool that runs code (``kernel``,
    ``host``) is checked, so a new tool is covered unless it says otherwise."""
    language: Literal["python", "shell", ""] = ""
    """What its display code is (``ToolCallStarted.code``): highlighted and handed to a
    notebook as such (``shell``: as ``!command``)."""
    shown_as: Literal["cell", "line", "plan"] = "line"
    """How people see a call: a code cell (the panel's cells, a user accepts them), one line
    with its outcome, or the plan's checklist (no line of its own)."""
    over_mcp: bool = True
    """Offered to other agents over MCP; false for a tool of our own agent's (its plan, a
    proposal to the user's notebook, its helper agents)."""
    starts_agents: bool = False
    """Its calls run agents whose events arrive under it (``HelperEvent``): shown grouped."""

    def __post_init__(self) -> None:
        if self.policy_checked is None:
            object.__setattr__(self, "policy_checked", self.runs in ("kernel", "host"))

    @classmethod
    def from_json(cls, data: Any) -> ToolTraits | None:
        """The traits of an event's JSON form (unknown keys of newer writers ignored)."""
        if isinstance(data, ToolTraits) or data is None:
            return data
        if not isinstance(data, dict):
            return None
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


UNKNOWN_TOOL = ToolTraits()
"""The traits of a tool that declares none: outside the sandbox, checked by the policy."""

RECORDED_BEFORE_TRAITS: dict[str, ToolTraits] = {
    "run_cell": ToolTraits("kernel", True, language="python", shown_as="cell"),
    "run_command": ToolTraits("kernel", True, language="shell", shown_as="cell"),
    "write_file": ToolTraits("workspace", True),
    "edit_file": ToolTraits("workspace", True),
    "read_file": ToolTraits("workspace"),
    "list_files": ToolTraits("workspace"),
    "search_files": ToolTraits("workspace"),
    "view_image": ToolTraits("workspace"),
    "update_plan": ToolTraits("none", shown_as="plan", over_mcp=False),
    "edit_cell": ToolTraits("none", language="python", shown_as="cell", over_mcp=False),
    "install_packages": ToolTraits("host", policy_checked=False),
    "delegate": ToolTraits("host", True, policy_checked=False, over_mcp=False, starts_agents=True),
}
"""The built-in tools' traits for events and notebooks written before events carried them
(old recordings still load, fold and resume); ``tests/tools/test_registry.py`` keeps it equal
to what the tools declare. Never consulted for a call that carries its traits."""


CODE_ARGUMENT_BEFORE_TRAITS: dict[str, str] = {
    "run_cell": "code",
    "run_command": "command",
    "edit_cell": "new_source",
}
"""Where an older recording's ``ToolCallStarted`` holds its display code (it has no ``code``)."""


def code_before_traits(name: str, arguments: Any) -> str | None:
    """The display code of a call recorded (or built) without traits: the built-in tool's
    argument that held it, or None."""
    args = arguments if isinstance(arguments, dict) else {}
    value = args.get(CODE_ARGUMENT_BEFORE_TRAITS.get(name, ""))
    return value if isinstance(value, str) else None


def traits_for(name: str, carried: Any = None) -> ToolTraits:
    """A call's traits: those its event carried, else (an older recording) the built-in
    tool's of that name, else the fail-closed ``UNKNOWN_TOOL``."""
    traits = ToolTraits.from_json(carried)
    if traits is not None:
        return traits
    return RECORDED_BEFORE_TRAITS.get(name, UNKNOWN_TOOL)

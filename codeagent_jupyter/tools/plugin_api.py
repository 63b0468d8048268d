"""The API a third-party package uses to add a tool: ``@tool`` on a typed function.

A plugin tool says, once, what it is: its name, its description (the function's docstring),
its arguments (the function's typed parameters, made into a closed JSON schema), where it
runs and its prompt line. Where it runs decides what the host does for it:

- ``runs="kernel"``: the function *returns the Python code* the call runs, and that code runs
  in the session's sandbox kernel like a ``run_cell`` (same limits, outputs, recording). The
  plugin's own code only builds a string on the host; everything it does runs confined.
- ``runs="host"``: the function runs in the host process, outside the sandbox, and returns
  the text the model is shown. It is asked for approval by default (``approval="ask"``).

The package publishes the tool under the entry-point group ``codeagent_jupyter.tools``, the
entry point's name being the tool's name::

    [project.entry-points."codeagent_jupyter.tools"]
    describe_dataframe = "codeagent_describe_df:describe_dataframe"

An installed plugin is offered to the model only where the administrator enables it by name
(``c.CodeAgent.tools``, ``codeagent run --tool NAME``, ``codeagent mcp --tool NAME``).
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

RUNS = ("kernel", "host")
APPROVALS = ("allow", "ask")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a tool name may be (the OpenAI API's own rule)."""
MAX_DESCRIPTION = 2_000
"""Characters of a plugin's description sent to the model (it is part of every request)."""

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class PluginError(ValueError):
    """A plugin tool declared wrongly: said in one line naming the tool."""


@dataclass(frozen=True)
class PluginTool:
    """One tool a plugin adds. ``function`` takes the call's arguments as keywords and
    returns the code to run (``kernel``) or the result text (``host``, may be async)."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    runs: Literal["kernel", "host"] = "kernel"
    approval: Literal["allow", "ask"] = "allow"
    prompt: str = ""
    """One line for the system prompt: when the model should use the tool."""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise PluginError(f"plugin tool name {self.name!r} must match {NAME_PATTERN.pattern}")
        if self.runs not in RUNS:
            raise PluginError(f"plugin tool {self.name}: runs must be one of {RUNS}")
        if self.approval not in APPROVALS:
            raise PluginError(f"plugin tool {self.name}: approval must be one of {APPROVALS}")
        if self.parameters.get("type") != "object":
            raise PluginError(f"plugin tool {self.name}: parameters must be an object schema")

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry (the description bounded)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description[:MAX_DESCRIPTION],
                "parameters": self.parameters,
            },
        }


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    runs: Literal["kernel", "host"] = "kernel",
    description: str | None = None,
    prompt: str = "",
    approval: Literal["allow", "ask"] | None = None,
) -> Any:
    """Declare a plugin tool from a typed function (``@tool`` or ``@tool(runs="host")``).

    The schema comes from the signature: ``str``, ``int``, ``float``, ``bool``, ``list[...]``
    of those, ``X | None`` for an optional one; a parameter without a default is required.
    ``Annotated[str, "what it is"]`` gives a parameter its description. ``approval`` defaults
    to ``ask`` for a host tool (it runs outside the sandbox) and ``allow`` for a kernel tool.
    """

    def make(fn: Callable[..., Any]) -> PluginTool:
        doc = inspect.cleandoc(fn.__doc__ or "")
        return PluginTool(
            name=name or fn.__name__,
            description=description or doc.split("\n\n")[0].replace("\n", " ").strip(),
            parameters=schema_of(fn),
            function=fn,
            runs=runs,
            approval=approval or ("ask" if runs == "host" else "allow"),
            prompt=prompt,
        )

    return make(function) if function is not None else make


def schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """A closed object schema of ``fn``'s keyword-usable parameters."""
    hints = typing.get_type_hints(fn, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise PluginError(f"{fn.__name__}: parameter {param.name!r} must be a keyword")
        if param.name not in hints:
            raise PluginError(f"{fn.__name__}: parameter {param.name!r} needs a type hint")
        prop, optional = _property(hints[param.name], f"{fn.__name__}: {param.name}")
        if param.default is param.empty and not optional:
            required.append(param.name)
        elif param.default is not param.empty and param.default is not None:
            prop["default"] = param.default
        properties[param.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _property(hint: Any, where: str) -> tuple[dict[str, Any], bool]:
    """The JSON schema of one annotation, and whether ``None`` is allowed."""
    description = ""
    if typing.get_origin(hint) is typing.Annotated:
        hint, *meta = typing.get_args(hint)
        description = next((m for m in meta if isinstance(m, str)), "")
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            raise PluginError(f"{where}: only X | None unions are supported")
        hint = args[0]
    if hint in _JSON_TYPES:
        prop: dict[str, Any] = {"type": _JSON_TYPES[hint]}
    elif typing.get_origin(hint) is list and typing.get_args(hint):
        item, _ = _property(typing.get_args(hint)[0], where)
        prop = {"type": "array", "items": item}
    else:
        raise PluginError(f"{where}: type {hint!r} is not supported (str, int, float, bool, list)")
    if description:
        prop["description"] = description
    return prop, optional

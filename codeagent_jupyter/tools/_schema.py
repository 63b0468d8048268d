"""Tool definitions, and their arguments checked against the JSON schemas with jsonschema.

A tool is a handler, a JSON schema and what the tool is (``ToolTraits``: where it runs,
whether it writes the workspace, its approval), with how its calls show (``code``), the
notebook cell they become (``cell``) and its line of the system prompt: all declared once,
here, so no layer above the tools needs its name. The built-in schemas are written by hand
(what the model reads is a prompt, and its bytes are cached); ``Tool.function`` builds one
from a typed function for new tools. Arguments are validated by ``jsonschema`` (a
dependency of nbformat), and its first error is said in one line the model can act on
(``read_file: 'start_line' must be >= 1, got 0``).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ToolArgumentError
from ..traits import UNKNOWN_TOOL, ToolTraits

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

Handler = Callable[..., Awaitable[Any]]
Describe = Callable[[dict[str, Any]], "str | None"]
"""``arguments -> text``: a call's display code, or its notebook cell."""

_TYPE_NAMES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "array",
    dict: "object",
    type(None): "null",
}


@dataclass(frozen=True)
class Tool:
    """One function offered to the model: ``parameters`` is an object JSON schema.

    ``handler`` is called as ``handler(toolbox, on_output=, limit=, **arguments)`` by
    ``ToolBox`` (a tool of a toolset of its own, like ``delegate``, is run by that toolset).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    traits: ToolTraits = UNKNOWN_TOOL
    """What the tool is; the default fails closed (runs outside the sandbox, policy-checked)."""
    code: Describe | None = None
    """A call's display code (``ToolCallStarted.code``): what the CLI prints under its header
    and the panel shows as its cell while it runs."""
    cell: Describe | None = None
    """The notebook cell a call that ran becomes (a tool that writes the workspace: its
    re-run recreates the change); None: a note."""
    prompt: str = ""
    """Its line under "How to work" in the system prompt (none when empty)."""
    prompt_rank: int = 100
    """Where that line goes: lower first (the built-in tools use 10, 20, …)."""

    def describe(self, arguments: Any) -> tuple[str | None, str | None]:
        """``(display code, notebook cell)`` of a call. The arguments are the model's, not
        yet checked: what does not fit gives None rather than an error."""
        args = arguments if isinstance(arguments, dict) else {}
        return _safely(self.code, args), _safely(self.cell, args)

    @classmethod
    def function(
        cls,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        traits: ToolTraits = UNKNOWN_TOOL,
        **options: Any,
    ) -> Tool:
        """A tool from a typed async function ``fn(toolbox, *, arg: type, …)``: its name,
        its docstring's first paragraph as the description, and a closed object schema of
        its keyword arguments (``str``, ``int``, ``float``, ``bool``, ``list[str]``; one with
        a default is optional). ``options``: the other fields (``code``, ``cell``, ``prompt``,
        ``prompt_rank``)."""
        hints = typing.get_type_hints(fn)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind is not inspect.Parameter.KEYWORD_ONLY or param.name in _PASSED:
                continue
            properties[param.name] = _json_type(hints.get(param.name, str), param.name)
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
        doc = inspect.getdoc(fn) or ""
        description = " ".join(doc.split("\n\n")[0].split())
        parameters = obj(required, **properties)

        async def handler(box: Any, *, on_output: Any, limit: int, **args: Any) -> Any:
            kwargs = {"on_output": on_output, "limit": limit}
            wanted = {k: v for k, v in kwargs.items() if k in inspect.signature(fn).parameters}
            return await fn(box, **wanted, **args)

        return cls(name or fn.__name__, description, parameters, handler, traits, **options)

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry; built from constants, so identical on every call."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def check(value: Any, schema: dict[str, Any], name: str) -> Any:
    """Return ``value`` normalised (integral floats -> int) or raise ToolArgumentError.

    jsonschema is imported here, at the first call: its import (a third of a second) is
    then off the path of the CLI's first model request, which only needs the schemas."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        raise ToolArgumentError(_say(error, name))
    return _normalise(value, schema)


def _say(error: ValidationError, name: str) -> str:
    """One line for the first thing wrong, naming where (``update_plan: 'steps'[0]``)."""
    where = name
    for part in error.absolute_path:
        where += f"[{part}]" if isinstance(part, int) else f": {part!r}"
    value, rule, limit = error.instance, error.validator, error.validator_value
    if rule == "type":
        return f"{where} must be {_article(str(limit))}, got {_kind(value)}"
    if rule == "enum":
        return f"{where} must be one of {', '.join(repr(v) for v in limit)}, got {value!r}"
    if rule == "minimum":
        return f"{where} must be >= {limit}, got {value}"
    if rule == "minLength":
        return f"{where} must not be empty"
    if rule == "minItems":
        return f"{where} must have at least {limit} item(s)"
    if rule == "required":
        missing = next(k for k in limit if k not in value)
        return f"{where}: missing required argument {missing!r}"
    if rule == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in known)
        return f"{where}: unknown argument {extra[0]!r} (expected: {', '.join(known) or 'none'})"
    return f"{where}: {error.message}"


def _normalise(value: Any, schema: dict[str, Any]) -> Any:
    """JSON has one number type: an integer argument sent as 3.0 is passed on as 3."""
    kind = schema.get("type")
    if kind == "integer" and isinstance(value, float):
        return int(value)
    if kind == "array":
        return [_normalise(item, schema.get("items", {})) for item in value]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _normalise(v, props[k]) if k in props else v for k, v in value.items()}
    return value


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def obj(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    """Shorthand for a closed object schema (no extra keys allowed)."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PASSED = ("on_output", "limit")
"""Keyword arguments ``ToolBox`` passes itself: never part of the schema."""

_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    list[str]: {"type": "array", "items": {"type": "string"}},
}


def _json_type(hint: Any, name: str) -> dict[str, Any]:
    """The JSON schema of one argument's type hint (``X | None``: as ``X``, optional)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = args[0] if len(args) == 1 else hint
    schema = _JSON_TYPES.get(hint)
    if schema is None:
        raise TypeError(f"argument {name!r}: type {hint!r} has no JSON schema here")
    return dict(schema)


def _safely(describe: Describe | None, args: dict[str, Any]) -> str | None:
    """A description of the model's arguments, or None when they do not fit it."""
    if describe is None:
        return None
    try:
        text = describe(args)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return text if isinstance(text, str) else None

"""Tool definitions and a small argument checker for the JSON schemas they use.

A tool is a handler plus an explicit JSON schema: the schema is what the model reads, so it
is written by hand as a prompt, not derived. The checker covers exactly the subset of JSON
Schema our tools use (object/string/integer/boolean/array, ``required``, ``enum``,
``minimum``, no extra keys) so bad calls get a one-line message the model can act on,
without a validation dependency.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ToolArgumentError

Handler = Callable[..., Awaitable[Any]]

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
    """One function offered to the model: ``parameters`` is an object JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler

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


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _is(value: Any, expected: str) -> bool:
    if expected == "integer":
        # JSON has one number type: accept 3.0 as 3, but never booleans.
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "array": list, "object": dict}[expected]
    return isinstance(value, python)


def check(value: Any, schema: dict[str, Any], where: str) -> Any:
    """Return ``value`` normalised (integral floats -> int) or raise ToolArgumentError."""
    expected = schema.get("type")
    if expected and not _is(value, expected):
        raise ToolArgumentError(f"{where} must be {_article(expected)}, got {_kind(value)}")
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        raise ToolArgumentError(f"{where} must be one of {allowed}, got {value!r}")
    if expected == "integer":
        value = int(value)
    if "minimum" in schema and value < schema["minimum"]:
        raise ToolArgumentError(f"{where} must be >= {schema['minimum']}, got {value}")
    if expected == "string" and schema.get("minLength", 0) > len(value):
        raise ToolArgumentError(f"{where} must not be empty")
    if expected == "array":
        if len(value) < schema.get("minItems", 0):
            raise ToolArgumentError(f"{where} must have at least {schema['minItems']} item(s)")
        items = schema.get("items", {})
        return [check(item, items, f"{where}[{i}]") for i, item in enumerate(value)]
    if expected == "object":
        return _check_object(value, schema, where)
    return value


def _check_object(value: dict[str, Any], schema: dict[str, Any], where: str) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in value]
    if missing:
        raise ToolArgumentError(f"{where}: missing required argument {missing[0]!r}")
    if schema.get("additionalProperties") is False:
        extra = sorted(k for k in value if k not in props)
        if extra:
            known = ", ".join(props) or "none"
            raise ToolArgumentError(f"{where}: unknown argument {extra[0]!r} (expected: {known})")
    return {k: check(v, props[k], f"{where}: {k!r}") if k in props else v for k, v in value.items()}


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

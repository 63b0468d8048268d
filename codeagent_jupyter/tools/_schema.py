"""Tool definitions, and their arguments checked against the JSON schemas with jsonschema.

A tool is a handler plus an explicit JSON schema: the schema is what the model reads, so it
is written by hand as a prompt, not derived. Arguments are validated by ``jsonschema`` (a
dependency of nbformat), and its first error is said in one line the model can act on
(``read_file: 'start_line' must be >= 1, got 0``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ToolArgumentError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

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

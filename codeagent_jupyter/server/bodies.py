"""Request bodies of the HTTP API: a JSON schema each, checked with jsonschema.

A bad body is answered 400 with one line saying what is wrong (an unknown field, a missing
one, a wrong type, an empty prompt). A field sent as ``null`` counts as not sent.
"""

from __future__ import annotations

from typing import Any

from ..util.strict_schema import StrictValidator as _Validator
from .errors import ApiError
from .livecells import CELLS


def body_schema(required: dict[str, str], optional: dict[str, str]) -> dict[str, Any]:
    """A closed object schema: field name -> JSON type; required strings must not be blank."""
    properties: dict[str, Any] = {}
    for name, kind in required.items():
        properties[name] = {"type": kind, **({"pattern": r"\S"} if kind == "string" else {})}
    properties |= {name: {"type": kind} for name, kind in optional.items()}
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


WARM = body_schema({}, {"notebook_path": "string"})
START = body_schema(
    {"prompt": "string"},
    {"notebook_path": "string", "model": "string", "limits": "object", "max_steps": "integer"},
)
_TEXT = {"type": "string", "maxLength": 200}
NAMESPACE_ENTRY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,79}$"},
        "type": _TEXT,
        "shape": {"type": "array", "items": {"type": "integer"}, "maxItems": 8},
        "len": {"type": "integer"},
        "dtype": _TEXT,
        "n_columns": {"type": "integer"},
        "columns": {
            "type": "array",
            "maxItems": 20,
            "items": {"type": "array", "items": _TEXT, "minItems": 2, "maxItems": 2},
        },
    },
    "required": ["name", "type"],
    "additionalProperties": False,
}
"""One variable of the user's kernel (``variables.describe``): names and shapes, no values."""
START["properties"]["namespace"] = {"type": "array", "items": NAMESPACE_ENTRY, "maxItems": 200}
START["properties"]["uploads"] = {
    "type": "array",
    "items": {"type": "string", "pattern": "^[0-9a-f]{1,64}$"},
    "maxItems": 20,
}
START["properties"]["kernel_id"] = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}
START["properties"]["cells"] = CELLS
START["properties"]["cells_complete"] = {"type": "boolean"}
START["properties"]["title"] = {"type": "string", "maxLength": 200}
"""How the request reads to people (``%agent fix``: "Fix In [9]: …"), when the prompt was
written for the model; shown by the panel and the session list, never sent to the model."""
MESSAGE = body_schema({"text": "string"}, {})
MESSAGE["properties"]["uploads"] = START["properties"]["uploads"]
"""Variables first mentioned in a follow-up: uploaded, loaded before the message runs."""
APPROVAL = body_schema({"approve": "boolean"}, {"remember": "string"})
APPROVAL["properties"]["remember"]["enum"] = ["session"]
"""``remember: "session"`` with ``approve: true`` allows the tool for the rest of the session."""


def check_body(body: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """``body`` (``null`` fields dropped) if it fits ``schema``; else ``ApiError(400)``."""
    if body is None:
        body = {}
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if v is not None}
    errors = list(_Validator(schema).iter_errors(body))
    if not errors:
        return body
    order = list(schema["properties"])

    def rank(error: Any) -> tuple[int, int]:
        field = error.absolute_path[0] if error.absolute_path else None
        if error.validator == "type" and field is None:
            return (0, 0)
        if error.validator == "additionalProperties":
            return (1, 0)
        if error.validator == "required":
            return (2, min(order.index(k) for k in error.validator_value if k not in body))
        return (2, order.index(field) if field in order else len(order))

    error = min(errors, key=rank)
    if error.validator == "type" and not error.absolute_path:
        raise ApiError(400, "the request body must be a JSON object")
    if error.validator == "additionalProperties":
        unknown = sorted(set(body) - set(order))
        raise ApiError(400, f"unknown field(s): {', '.join(unknown)}")
    if error.validator == "required":
        missing = next(k for k in order if k in error.validator_value and k not in body)
        raise ApiError(400, f"missing field: {missing}")
    field = error.absolute_path[0]
    if error.validator == "pattern":
        raise ApiError(400, f"field {field} must not be empty")
    if error.validator == "enum":
        allowed = ", ".join(repr(v) for v in error.validator_value)
        raise ApiError(400, f"field {field} must be {allowed}")
    raise ApiError(400, f"field {field} has the wrong type")

"""A jsonschema validator for settings and request bodies: an ``integer`` is a JSON integer.

JSON Schema counts ``3.0`` as an integer, and Python counts ``True`` as one. A count a user
wrote as ``3.0`` or ``true`` is a mistake to point out, not a value to take, so this
validator (Draft 2020-12 otherwise) accepts only ints that are not bools. Shared by the
server's request bodies and the class policy, so both refuse the same things.
"""

from __future__ import annotations

from jsonschema import Draft202012Validator, validators

StrictValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)
    ),
)

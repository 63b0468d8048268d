"""Building and checking one cell or output against nbformat's v4 schema, fast.

``nbformat.validate(node, ref=…)`` checks a part of a notebook with ``jsonschema`` (its fast
validator only takes whole notebooks), which costs milliseconds per cell or output, and
nbformat's builders (``new_code_cell``, ``new_output``, ``output_from_msg``) call it on every
node they build: on every tool call of a session, more than the call itself. Here each
definition of the same schema file is compiled once with ``fastjsonschema`` (what nbformat
itself uses for whole notebooks); a node it rejects goes through ``nbformat.validate``, whose
verdict (and error) stands. The builders here make the same nodes and check them that way.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import fastjsonschema
import nbformat
from nbformat.corpus.words import generate_corpus_id
from nbformat.notebooknode import NotebookNode


@functools.cache
def _checker(ref: str) -> Callable[[Any], Any]:
    schema = json.loads((files("nbformat.v4") / "nbformat.v4.schema.json").read_text())
    root = {"$ref": f"#/definitions/{ref}", "definitions": schema["definitions"]}
    return fastjsonschema.compile(root)


def validate(node: Any, ref: str) -> None:
    """Raise nbformat's ``ValidationError`` when ``node`` is not a valid ``ref`` (a cell
    type's ``code_cell``/``markdown_cell``, or an output type)."""
    try:
        _checker(ref)(node)
    except fastjsonschema.JsonSchemaException:
        nbformat.validate(node, ref=ref, version=4)  # nbformat's verdict, and its message


def new_code_cell(source: str = "", **fields: Any) -> Any:
    """A code cell as ``nbformat.v4.new_code_cell`` builds it, unchecked: its builder checks
    every cell with ``jsonschema`` (milliseconds, on each recorded call); callers check the
    finished cell with ``validate`` instead."""
    cell = NotebookNode(
        id=generate_corpus_id(),
        cell_type="code",
        metadata=NotebookNode(),
        execution_count=None,
        source=source,
        outputs=[],
    )
    cell.update(fields)
    return cell


def new_markdown_cell(source: str = "", **fields: Any) -> Any:
    """A markdown cell as ``nbformat.v4.new_markdown_cell`` builds it, unchecked (see
    ``new_code_cell``)."""
    cell = NotebookNode(
        id=generate_corpus_id(), cell_type="markdown", source=source, metadata=NotebookNode()
    )
    cell.update(fields)
    return cell


_OUTPUT_DEFAULTS: dict[str, Callable[[], dict[str, Any]]] = {
    "stream": lambda: {"name": "stdout", "text": ""},
    "display_data": lambda: {"metadata": NotebookNode(), "data": NotebookNode()},
    "execute_result": lambda: {
        "metadata": NotebookNode(),
        "data": NotebookNode(),
        "execution_count": None,
    },
    "error": lambda: {"ename": "NotImplementedError", "evalue": "", "traceback": []},
}

_FROM_MSG = {
    "execute_result": ("metadata", "data", "execution_count"),
    "display_data": ("metadata", "data"),
    "stream": ("name", "text"),
    "error": ("ename", "evalue", "traceback"),
}


def new_output(output_type: str, **fields: Any) -> Any:
    """An output as ``nbformat.v4.new_output`` builds it (the same defaults), checked with
    ``validate``: ``ValidationError`` when it is not a valid ``output_type``."""
    defaults = _OUTPUT_DEFAULTS.get(output_type)
    output = NotebookNode(output_type=output_type, **(defaults() if defaults else {}))
    output.update(fields)
    validate(output, output_type)
    return output


def output_from_msg(msg: dict[str, Any]) -> Any:
    """The output of a kernel's IOPub message, as ``nbformat.v4.output_from_msg`` makes it
    (``ValueError`` for a message that is no output, ``KeyError`` for a missing field,
    ``ValidationError`` for an invalid one: a kernel's messages are not trusted)."""
    msg_type = msg["header"]["msg_type"]
    names = _FROM_MSG.get(msg_type)
    if names is None:
        raise ValueError(f"Unrecognized output msg type: {msg_type!r}")
    content = msg["content"]
    return new_output(msg_type, **{name: content[name] for name in names})

"""Checking one cell or output against nbformat's v4 schema, fast.

``nbformat.validate(node, ref=…)`` checks a part of a notebook with ``jsonschema`` (its fast
validator only takes whole notebooks), which costs milliseconds per cell: on every tool call
of a session, more than the call itself. Here each definition of the same schema file is
compiled once with ``fastjsonschema`` (what nbformat itself uses for whole notebooks); a node
it rejects goes through ``nbformat.validate``, whose verdict (and error) stands.
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

"""ToolBox: stable schemas, argument checking with one-line messages, and the plan tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ConfigError, ToolArgumentError, ToolError
from codeagent_jupyter.tools import ToolBox

ALL = ["run_cell", "run_command", "read_file", "write_file", "edit_file", "list_files"]
ALL += ["search_files"]


def test_schemas_are_stable_and_openai_shaped(tmp_path: Path):
    tb = ToolBox(None, tmp_path)
    first = json.dumps(tb.schemas())
    tb.schemas()[0]["function"]["name"] = "mutated"  # callers get copies
    assert json.dumps(tb.schemas()) == first == json.dumps(ToolBox(None, tmp_path).schemas())
    names = [s["function"]["name"] for s in tb.schemas()]
    assert names == [*ALL, "update_plan"] and tb.names == set(names)
    for schema in tb.schemas():
        assert schema["type"] == "function"
        fn = schema["function"]
        assert len(fn["description"]) > 40
        assert fn["parameters"]["type"] == "object"
        assert fn["parameters"]["additionalProperties"] is False
        assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])


def test_enabled_subset_keeps_order_and_rejects_unknown(tmp_path: Path):
    tb = ToolBox(None, tmp_path, enabled=["update_plan", "read_file"])
    assert [s["function"]["name"] for s in tb.schemas()] == ["read_file", "update_plan"]
    with pytest.raises(ConfigError, match="unknown tool"):
        ToolBox(None, tmp_path, enabled=["rm_rf"])


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("nope", {}, "unknown tool 'nope'; available: run_cell, run_command, read_file"),
        ("read_file", {}, "read_file: missing required argument 'path'"),
        ("read_file", {"path": 3}, "read_file: 'path' must be a string, got integer"),
        ("read_file", {"path": "a", "start_line": "2"}, "'start_line' must be an integer, got"),
        ("read_file", {"path": "a", "start_line": True}, "must be an integer, got boolean"),
        ("read_file", {"path": "a", "start_line": 0}, "'start_line' must be >= 1, got 0"),
        ("read_file", {"path": "a", "mode": "r"}, "unknown argument 'mode' (expected: path,"),
        ("write_file", {"path": "a"}, "missing required argument 'content'"),
        ("run_cell", {"code": None}, "'code' must be a string, got null"),
        ("search_files", {"pattern": ""}, "'pattern' must not be empty"),
        ("update_plan", {"steps": []}, "'steps' must have at least 1 item"),
        ("update_plan", {"steps": ["a"]}, r"'steps'[0] must be an object, got string"),
        ("update_plan", {"steps": [{"step": "a"}]}, "missing required argument 'status'"),
        (
            "update_plan",
            {"steps": [{"step": "a", "status": "started"}]},
            "'status' must be one of 'pending', 'in_progress', 'done', got 'started'",
        ),
        ("update_plan", {"steps": [{"step": "  ", "status": "done"}]}, "must not be empty"),
    ],
)
async def test_bad_arguments_get_one_line_messages(tmp_path: Path, name, args, message):
    tb = ToolBox(None, tmp_path)
    with pytest.raises(ToolArgumentError) as info:
        await tb.call(name, args)
    text = str(info.value)
    assert message in text and "\n" not in text


async def test_arguments_must_be_an_object(tmp_path: Path):
    with pytest.raises(ToolArgumentError, match="arguments must be a JSON object"):
        await ToolBox(None, tmp_path).call("list_files", ["."])  # type: ignore[arg-type]


async def test_integral_floats_are_accepted_as_integers(tmp_path: Path):
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    res = await ToolBox(None, tmp_path).call(
        "read_file", {"path": "f.txt", "start_line": 2.0, "end_line": 2}
    )
    assert res.text.startswith("2| b")


async def test_update_plan_normalises_and_summarises(tmp_path: Path):
    res = await ToolBox(None, tmp_path).call(
        "update_plan",
        {
            "steps": [
                {"step": " Load   the data ", "status": "done"},
                {"step": "Fit", "status": "in_progress"},
                {"step": "Plot", "status": "pending"},
            ]
        },
    )
    assert res.plan == [
        {"step": "Load the data", "status": "done"},
        {"step": "Fit", "status": "in_progress"},
        {"step": "Plot", "status": "pending"},
    ]
    assert res.text == "ok"  # the model knows its plan: the result adds nothing
    assert res.status == "ok" and res.duration_s >= 0


async def test_code_tools_without_a_sandbox_refuse(tmp_path: Path):
    with pytest.raises(ToolError, match="no sandbox"):
        await ToolBox(None, tmp_path).call("run_cell", {"code": "1"})

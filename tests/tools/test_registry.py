"""Tools say what they are: the layers above ``tools/`` never match a tool's name, every
built-in tool declares its traits once, and the fallback for older recordings agrees.

The grep test reads every module outside ``codeagent_jupyter/tools/`` and fails on a string
constant equal to a built-in tool's name (docstrings aside): a name list there is how a new
tool silently became a workspace writer, or passed the policy hook unchecked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter import traits as tr
from codeagent_jupyter.core.toolset import combine, describe
from codeagent_jupyter.tools import registry
from codeagent_jupyter.tools._schema import Tool
from codeagent_jupyter.tools.toolbox import ToolBox

PACKAGE = Path(registry.__file__).resolve().parents[1]

ALLOWED: dict[str, set[str]] = {
    "traits.py": set(tr.RECORDED_BEFORE_TRAITS),
    # the fallback for recordings made before events carried traits, by its own name
}
"""Modules (relative to the package) that may name built-in tools, and which, with why."""


def _constants(path: Path) -> list[tuple[int, str]]:
    """String constants of a module, docstrings and f-string text excepted."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))  # attribute docstrings
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_no_module_outside_tools_matches_a_tool_name() -> None:
    names = set(registry.BUILTIN)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("tools/"):
            continue
        for line, value in _constants(path):
            if value in names and value not in ALLOWED.get(rel, set()):
                found.append(f"{rel}:{line}: {value!r}")
    assert found == []


def test_the_grep_sees_a_name_list(tmp_path: Path) -> None:
    """The check itself finds the pattern it forbids (a test that cannot fail is a defect)."""
    module = tmp_path / "m.py"
    module.write_text('"""run_cell in a docstring is fine."""\nKERNEL = ("run_cell",)\n')
    assert _constants(module) == [(2, "run_cell")]


def test_every_builtin_declares_traits_and_the_old_table_agrees() -> None:
    """The fallback names only tools that exist, with their own traits (a tool added later
    never needs it: its events carry its traits)."""
    assert set(tr.RECORDED_BEFORE_TRAITS) <= set(registry.BUILTIN)
    for name, traits in tr.RECORDED_BEFORE_TRAITS.items():
        assert registry.BUILTIN[name].traits == traits, name
    for name, tool in registry.BUILTIN.items():
        assert registry.traits_of(name) == tool.traits


def test_a_tool_without_traits_fails_closed() -> None:
    traits = registry.traits_of("a_tool_nobody_declared")
    assert traits.runs == "host" and traits.policy_checked and not traits.writes_workspace
    assert tr.ToolTraits("kernel").policy_checked and tr.ToolTraits("host").policy_checked
    assert not tr.ToolTraits("workspace").policy_checked
    assert not tr.ToolTraits("kernel", policy_checked=False).policy_checked


def test_traits_travel_in_event_json_and_old_events_still_read() -> None:
    started = ev.ToolCallStarted(
        name="x", arguments={}, code="1", traits=tr.ToolTraits("kernel", True, language="python")
    )
    back = ev.Event.from_dict(started.to_dict())
    assert back == started and back.tool.writes_workspace and back.shown_code() == "1"
    old = ev.Event.from_dict(
        {"type": "tool_call_started", "name": "run_command", "arguments": {"command": "ls"}}
    )
    assert old.tool.language == "shell" and old.shown_code() == "ls"
    newer = {**started.to_dict(), "traits": {"runs": "kernel", "a_newer_field": 1}}
    assert ev.Event.from_dict(newer).tool.runs == "kernel"


def test_a_toolbox_describes_its_calls(tmp_path: Path) -> None:
    box = combine([ToolBox(None, tmp_path)])
    traits, code, cell = describe(box, "run_command", {"command": "echo $HOME"})
    assert traits.runs == "kernel" and code == "echo $HOME" and cell == "%%bash\necho $HOME"
    assert describe(box, "run_cell", {"code": 3}) == (traits_of("run_cell"), None, None)
    assert describe(box, "no_such_tool", {}) == (tr.UNKNOWN_TOOL, None, None)


def traits_of(name: str) -> tr.ToolTraits:
    return registry.BUILTIN[name].traits


def test_the_toolbox_prompt_is_the_registry_prompt(tmp_path: Path) -> None:
    from codeagent_jupyter.config import compose_prompt
    from codeagent_jupyter.core.toolset import prompt_lines

    for vision in (False, True):
        box = ToolBox(None, tmp_path, notebook_cells={"a": "1"}, vision=vision)
        assert compose_prompt(prompt_lines(box)) == registry.system_prompt(box.names)


async def _describe_df(box: object, *, name: str, rows: int = 5) -> str:
    """Describe a DataFrame of the kernel: its shape, dtypes and first rows.

    Only the first paragraph is the description."""
    return f"{name}:{rows}"


def test_tool_function_builds_a_closed_schema_from_a_typed_function() -> None:
    tool = Tool.function(
        _describe_df,
        name="describe_dataframe",
        traits=tr.ToolTraits("kernel", language="python", shown_as="cell"),
        code=lambda args: f"{args['name']}.describe()",
    )
    assert tool.schema() == {
        "type": "function",
        "function": {
            "name": "describe_dataframe",
            "description": "Describe a DataFrame of the kernel: its shape, dtypes and first rows.",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "rows": {"type": "integer"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
    }
    assert tool.describe({"name": "df"}) == ("df.describe()", None)
    assert tool.describe({"rows": 1}) == (None, None)  # a model's bad arguments: no code


def test_tool_function_refuses_a_type_it_cannot_say() -> None:
    async def bad(box: object, *, data: dict) -> None:  # type: ignore[type-arg]
        """Bad."""

    with pytest.raises(TypeError, match="'data'"):
        Tool.function(bad)


def test_a_toolset_may_give_plain_prompt_lines(tmp_path: Path) -> None:
    """A toolset that gives its lines as strings gets them after the built-in tools' lines
    and before the images line, in its own order."""
    from codeagent_jupyter.config import compose_prompt
    from codeagent_jupyter.core.toolset import prompt_lines

    class Plain:
        names: set[str] = set()

        def schemas(self) -> list[dict[str, object]]:
            return []

        def prompt_lines(self) -> list[str]:
            return ["first plugin line.", "second plugin line."]

    prompt = compose_prompt(prompt_lines(combine([ToolBox(None, tmp_path), Plain()])))
    at = [
        prompt.index(t) for t in ("update_plan shows", "first plugin", "second plugin", "Images:")
    ]
    assert at == sorted(at)

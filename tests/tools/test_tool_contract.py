"""The model's contract stays byte-identical: the tool schemas and the system prompt, as
captured in ``tests/fixtures/tool_contract`` before tools declared their own traits.

Provider prompt caching and old recordings both depend on these bytes; a change here is a
change of contract, made on purpose by regenerating the fixtures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeagent_jupyter.tools import delegate, install
from codeagent_jupyter.tools.registry import system_prompt
from codeagent_jupyter.tools.toolbox import ToolBox

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool_contract"
SCHEMAS = json.loads((FIXTURES / "schemas.json").read_text(encoding="utf-8"))
PROMPTS = json.loads((FIXTURES / "prompts.json").read_text(encoding="utf-8"))


def _dumped(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_the_standard_tools_schemas_are_unchanged(tmp_path: Path) -> None:
    assert _dumped(ToolBox(None, tmp_path).schemas()) == _dumped(SCHEMAS["toolbox"])
    box = ToolBox(None, tmp_path, notebook_cells={"a": "x"}, vision=True)
    assert _dumped(box.schemas()) == _dumped(SCHEMAS["toolbox_notebook_vision"])


def test_the_other_toolsets_schemas_are_unchanged() -> None:
    assert _dumped([install.SCHEMA]) == _dumped(SCHEMAS["install_packages"])
    assert _dumped([delegate.SCHEMA]) == _dumped(SCHEMAS["delegate"])


@pytest.mark.parametrize("case", sorted(PROMPTS))
def test_the_system_prompt_is_unchanged(case: str) -> None:
    assert system_prompt(set(PROMPTS[case]["tools"])) == PROMPTS[case]["prompt"]

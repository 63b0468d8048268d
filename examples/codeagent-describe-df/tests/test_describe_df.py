"""The plugin's declaration: its schema, and the code it builds for a call."""

from __future__ import annotations

import pytest
from codeagent_describe_df import describe_dataframe

from codeagent_jupyter.tools.plugin_api import PluginTool


def test_it_is_a_kernel_tool_with_one_required_name() -> None:
    assert isinstance(describe_dataframe, PluginTool)
    assert describe_dataframe.runs == "kernel" and describe_dataframe.approval == "allow"
    params = describe_dataframe.parameters
    assert params["required"] == ["name"] and params["properties"]["name"]["type"] == "string"
    assert params["additionalProperties"] is False


def test_the_code_it_builds_describes_the_frame() -> None:
    pd = pytest.importorskip("pandas")
    code = describe_dataframe.function(name="frame")
    scope = {"frame": pd.DataFrame({"a": [1, 2, None]})}
    exec(code, scope)  # the sandbox runs it in the kernel; plain exec is enough here
    assert "_ca_df" not in scope


def test_a_name_that_is_not_a_variable_is_refused() -> None:
    with pytest.raises(ValueError, match="not a variable name"):
        describe_dataframe.function(name="__import__('os').system('x')")

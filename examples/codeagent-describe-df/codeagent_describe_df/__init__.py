"""``describe_dataframe``: a plugin tool that summarises a pandas DataFrame of the kernel.

It runs in the sandbox kernel: the function only builds the code, which the sandbox runs
with the session's limits, so the plugin never touches the data on the host.
"""

from __future__ import annotations

from typing import Annotated

from codeagent_jupyter.tools.plugin_api import tool

MAX_COLUMNS = 50


@tool(
    runs="kernel",
    prompt="use it to learn a DataFrame's shape, columns, types and missing values at once",
)
def describe_dataframe(
    name: Annotated[str, "The name of a pandas DataFrame variable in the kernel."],
) -> str:
    """Describe a pandas DataFrame of the kernel: shape, column types, missing values and
    summary statistics, in one short text."""
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not a variable name")
    return (
        f"_ca_df = {name}\n"
        "print(f'shape: {_ca_df.shape[0]} rows x {_ca_df.shape[1]} columns')\n"
        f"_ca_cols = list(_ca_df.columns)[:{MAX_COLUMNS}]\n"
        "print(_ca_df[_ca_cols].dtypes.to_string())\n"
        "print('missing:', int(_ca_df[_ca_cols].isna().sum().sum()))\n"
        "print(_ca_df[_ca_cols].describe(include='all').to_string())\n"
        "del _ca_df, _ca_cols"
    )

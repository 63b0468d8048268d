"""The package policy and the names a request may carry (no index needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeagent_jupyter.errors import ConfigError, ToolError
from codeagent_jupyter.packages import PackagePolicy, parse_request


@pytest.mark.parametrize("name", ["statsmodels", "scikit-learn>=1.4", "Pkg[extra]==1.0", "a.b_c"])
def test_names_with_versions_and_extras_are_accepted(name: str) -> None:
    assert parse_request(name).name


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("--index-url=http://x", "pip option"),
        ("-e .", "pip option"),
        ("git+https://github.com/x/y", "URL or a path"),
        ("x @ https://h/x.whl", "URL or a path"),
        ("../x", "URL or a path"),
        ("x; sys_platform == 'linux'", "only a name and a version"),
        ("x y", "not a package name"),
        ("", "must be a name"),
    ],
)
def test_anything_but_a_name_is_refused_in_one_line(name: str, said: str) -> None:
    with pytest.raises(ToolError) as refused:
        parse_request(name)
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_deny_wins_over_allow_on_normalised_names() -> None:
    policy = PackagePolicy(allow=("*",), deny=("Evil_Pkg", "crypto*"))
    assert policy.refusal("evil-pkg") and policy.refusal("EVIL.PKG")
    assert policy.refusal("cryptominer")
    assert policy.refusal("statsmodels") is None
    only = PackagePolicy(allow=("stats*", "scikit_learn"))
    assert only.refusal("scikit-learn") is None and only.refusal("Statsmodels") is None
    assert "allow list" in (only.refusal("numpy") or "")


def test_settings_are_checked_with_the_key_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key 'index'"):
        PackagePolicy.from_dict({"index": "x"})
    with pytest.raises(ConfigError, match="'approval' must be 'ask' or 'auto'"):
        PackagePolicy.from_dict({"approval": "never"})
    with pytest.raises(ConfigError, match="'max_mb' must be a positive number"):
        PackagePolicy.from_dict({"max_mb": 0})
    with pytest.raises(ConfigError, match="'deny' must be a list of strings"):
        PackagePolicy.from_dict({"deny": "numpy"})
    with pytest.raises(ConfigError, match="must be an http"):
        PackagePolicy.from_dict({"index_url": "ftp://x"})
    with pytest.raises(ConfigError, match="is not a folder"):
        PackagePolicy.from_dict({"index_url": "", "find_links": [str(tmp_path / "none")]})
    policy = PackagePolicy.from_dict({"index_url": "", "find_links": [str(tmp_path)]})
    assert policy.pip_options() == ["--no-index", "--find-links", str(tmp_path)]

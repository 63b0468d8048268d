"""``codeagent run|resume --allow-install``: real processes, a real index on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.cli.test_cli import codeagent, one_line_error
from tests.packages.index import make_wheel
from tests.scripted_model import text, tool_calls


def _model(scripted_model) -> tuple[str, ...]:
    return ("--model", "m", "--base-url", scripted_model.url)


def test_run_installs_and_resume_reinstalls_the_same_version(
    scripted_model, served, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}  # the shared cache, in tmp
    install = {"packages": ["tinyapp"], "reason": "needed"}
    scripted_model.set_script(
        [
            tool_calls(("install_packages", install)),
            tool_calls(("run_cell", {"code": "import tinyapp\nprint('got', tinyapp.__version__)"})),
            text("done"),
        ]
    )
    out = tmp_path / "s.ipynb"
    flags = ("--allow-install", "--index-url", served.url)
    result = codeagent(
        "run",
        "use tinyapp",
        *_model(scripted_model),
        *flags,
        "--workdir",
        str(ws),
        "--out",
        str(out),
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    nb = nbformat.read(out, as_version=4)
    assert "got 1.0\n" in "".join(
        "".join(o.get("text", "")) for c in nb.cells for o in c.get("outputs", [])
    )
    assert {p["name"]: p["version"] for p in nb.metadata.codeagent.packages} == {
        "tinyapp": "1.0",
        "tinydep": "1.0",
    }
    assert (tmp_path / "xdg-cache" / "codeagent-jupyter" / "pip").is_dir()

    served.index.add(make_wheel(tmp_path / "newer", "tinyapp", "2.0", requires=["tinydep"]))
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "import tinyapp\nprint('now', tinyapp.__version__)"})),
            text("still 1.0"),
        ]
    )
    result = codeagent(
        "resume",
        str(out),
        "check",
        *_model(scripted_model),
        *flags,
        "--workdir",
        str(ws),
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "reinstalled tinyapp==1.0, tinydep==1.0" in result.stderr
    nb = nbformat.read(out, as_version=4)
    printed = "".join("".join(o.get("text", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "now 1.0\n" in printed  # the recorded version, not the index's newest


def test_install_flags_without_allow_install_are_a_usage_error(
    scripted_model, tmp_path: Path
) -> None:
    result = codeagent(
        "run",
        "x",
        *_model(scripted_model),
        "--index-url",
        "http://127.0.0.1:1/simple",
        "--workdir",
        str(tmp_path),
    )
    assert result.returncode == 2
    assert one_line_error(result) == (
        "codeagent: error: --index-url and --find-links need --allow-install"
    )


def test_without_allow_install_the_model_has_no_install_tool(
    scripted_model, tmp_path: Path
) -> None:
    scripted_model.set_script([text("nothing to do")])
    result = codeagent("run", "x", *_model(scripted_model), "--workdir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    offered = [t["function"]["name"] for t in scripted_model.requests[-1]["tools"]]
    assert "install_packages" not in offered


def test_under_a_network_policy_the_install_goes_through_the_broker(
    scripted_model, served, tmp_path: Path
) -> None:
    """The egress policy must open the loopback index on purpose (``allow_ranges``): pip
    reaches it through the broker, which refuses loopback otherwise; then it installs."""
    from codeagent_jupyter.sandbox import bubblewrap

    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no --network policy")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
    check = "import tinyapp\nprint('got', tinyapp.__version__)"
    policy = tmp_path / "egress.json"
    for opened, expected in (([], "the egress broker refused GET"), (["127.0.0.1/32"], "got 1.0")):
        policy.write_text(json.dumps({"default": "deny", "allow_ranges": opened}))
        scripted_model.set_script(
            [
                tool_calls(("install_packages", {"packages": ["tinyapp"], "reason": "needed"})),
                tool_calls(("run_cell", {"code": check})),
                text("done"),
            ]
        )
        out = tmp_path / f"s{len(opened)}.ipynb"
        result = codeagent(
            "run", "use tinyapp", *_model(scripted_model), "--allow-install",
            "--index-url", served.url, "--network", "policy", "--egress-policy", str(policy),
            "--workdir", str(ws), "--out", str(out), env=env, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        nb = nbformat.read(out, as_version=4)
        assert expected in json.dumps(nb.metadata.codeagent.events) + json.dumps(
            [c.get("outputs", []) for c in nb.cells]
        )

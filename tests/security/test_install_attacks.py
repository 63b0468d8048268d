"""Attacks on the host's install path, through ``codeagent run`` and ``codeagent resume``
with ``--allow-install`` (real processes, a real index on 127.0.0.1, the scripted model).

Every attack here is on work the host does for the sandbox, with the host's privileges:
pip resolving a plan, a wheel folder the sandbox can write, a session notebook anyone may
edit, the shared wheel cache. The sandbox's own confinement does not matter to them, so the
sandbox runs with ``--isolation none`` and the tests run the same in every lane (bubblewrap
or not, root or not).

- A wheel whose METADATA names a dependency by direct URL (``x @ file:///…`` or ``x @
  http://…/x.tar.gz``) whose build backend writes a marker: pip used to run it while
  resolving. The marker must not appear; the call is refused in one line naming it.
- A cell plants a wheel, and the source tree it points to, in a ``--find-links`` folder
  inside the workspace: refused before anything starts.
- An edited session notebook records ``rt3ok==1.0`` with the URL, index and sha256 of
  another wheel (``rt3evil``), fetched from another index or already in the shared cache
  (another session installed it): ``resume`` must not install it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import nbformat
import pytest

from tests.cli.test_cli import codeagent, one_line_error
from tests.packages.index import PackageIndex, make_wheel
from tests.scripted_model import text, tool_calls

BACKEND = "import pathlib\npathlib.Path({marker!r}).write_text('a build backend ran on the host')\n"
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'


def _source_tree(folder: Path, marker: Path) -> Path:
    """A source tree whose in-tree build backend writes ``marker`` when anything imports it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(PYPROJECT)
    (folder / "backend.py").write_text(BACKEND.format(marker=str(marker)))
    return folder


def _sdist(folder: Path, name: str, marker: Path) -> Path:
    """The same as an sdist ``NAME-1.0.tar.gz``."""
    import tarfile

    tree = _source_tree(folder / f"{name}-1.0", marker)
    (tree / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    path = folder / f"{name}-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        tf.add(tree, arcname=tree.name)
    return path


def _model(scripted_model) -> tuple[str, ...]:
    return ("--model", "m", "--base-url", scripted_model.url, "--isolation", "none")


def _tool_results(scripted_model) -> list[str]:
    return [
        str(m.get("content"))
        for m in scripted_model.requests[-1]["messages"]
        if m.get("role") == "tool"
    ]


@pytest.mark.parametrize("how", ["file-tree", "http-sdist"])
def test_a_direct_url_dependency_is_never_built(scripted_model, tmp_path: Path, how: str) -> None:
    marker = tmp_path / "host-marker"
    index = PackageIndex(tmp_path / "index").start()
    try:
        if how == "file-tree":
            target = _source_tree(tmp_path / "evilsrc", marker).as_uri()
        else:
            index.files.joinpath("evilsrc-1.0.tar.gz").write_bytes(
                _sdist(tmp_path / "sdist", "evilsrc", marker).read_bytes()
            )
            target = f"http://127.0.0.1:{index.port}/files/evilsrc-1.0.tar.gz"
        index.add(make_wheel(tmp_path / "built", "lurer", "1.0", requires=[f"evilsrc @ {target}"]))
        ws = tmp_path / "ws"
        ws.mkdir()
        scripted_model.set_script(
            [tool_calls(("install_packages", {"packages": ["lurer"], "reason": "x"})), text("ok")]
        )
        result = codeagent(
            "run",
            "install lurer",
            *_model(scripted_model),
            "--allow-install",
            "--index-url",
            index.url,
            "--workdir",
            str(ws),
            "--out",
            str(tmp_path / "s.ipynb"),
            env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert not marker.exists(), "a build backend ran on the host"
        [answer] = _tool_results(scripted_model)
        assert "lurer 1.0 names evilsrc by direct URL" in answer.splitlines()[0], answer
        assert not any("evilsrc" in path for _, path in index.log)  # not even fetched
        assert index.body_gets("lurer-1.0-py3-none-any.whl") == 0
    finally:
        index.stop()


PLANT = """
import base64, pathlib
wheels = pathlib.Path("wheels")
wheels.mkdir(exist_ok=True)
(wheels / {name!r}).write_bytes(base64.b64decode({data!r}))
tree = pathlib.Path("plantsrc")
tree.mkdir(exist_ok=True)
(tree / "pyproject.toml").write_text({pyproject!r})
(tree / "backend.py").write_text({backend!r})
print("planted")
"""


@pytest.mark.parametrize("through", ["the-folder", "a-link-to-it"])
def test_a_find_links_folder_the_sandbox_can_write_is_refused(
    scripted_model, tmp_path: Path, through: str
) -> None:
    ws = tmp_path / "ws"
    (ws / "wheels").mkdir(parents=True)
    marker = tmp_path / "host-marker"  # outside the workspace: only the host can write it
    tree = ws / "plantsrc"
    wheel = make_wheel(
        tmp_path / "built", "planted", "1.0", requires=[f"plantsrc @ {tree.as_uri()}"]
    )
    code = PLANT.format(
        name=wheel.name,
        data=base64.b64encode(wheel.read_bytes()).decode(),
        pyproject=PYPROJECT,
        backend=BACKEND.format(marker=str(marker)),
    )
    folder = ws / "wheels"
    if through == "a-link-to-it":
        folder = tmp_path / "classroom-wheels"
        folder.symlink_to(ws / "wheels")
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": code})),
            tool_calls(("install_packages", {"packages": ["planted"], "reason": "x"})),
            text("ok"),
        ]
    )
    result = codeagent(
        "run",
        "plant",
        *_model(scripted_model),
        "--allow-install",
        "--find-links",
        str(folder),
        "--workdir",
        str(ws),
        "--out",
        str(tmp_path / "s.ipynb"),
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
        timeout=300,
    )
    assert not marker.exists(), "a planted build backend ran on the host"
    assert result.returncode == 2, result.stderr
    line = one_line_error(result)
    assert "--find-links" in line and "where the sandbox can write" in line, line
    assert scripted_model.requests == []  # refused before the model was asked anything


def _run(scripted_model, tmp_path: Path, index_url: str, out: Path, *script) -> str:
    scripted_model.set_script(list(script))
    result = codeagent(
        "run",
        "install",
        *_model(scripted_model),
        "--allow-install",
        "--index-url",
        index_url,
        "--workdir",
        str(tmp_path / "ws"),
        "--out",
        str(out),
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("evil_from", ["another-index", "the-shared-cache"])
def test_an_edited_resume_notebook_installs_only_what_it_says(
    scripted_model, tmp_path: Path, evil_from: str
) -> None:
    (tmp_path / "ws").mkdir()
    good = PackageIndex(tmp_path / "good").start()
    evil = PackageIndex(tmp_path / "evil").start()
    try:
        good.add(make_wheel(tmp_path / "g", "rt3ok", "1.0"))
        evil_wheel = evil.add(make_wheel(tmp_path / "e", "rt3evil", "1.0", code="OWNED = 1\n"))
        install = {"packages": ["rt3ok"], "reason": "x"}
        out = tmp_path / "victim.ipynb"
        _run(
            scripted_model,
            tmp_path,
            good.url,
            out,
            tool_calls(("install_packages", install)),
            text("ok"),
        )
        if evil_from == "the-shared-cache":  # another session put rt3evil in the cache
            evil_install = {"packages": ["rt3evil"], "reason": "x"}
            _run(
                scripted_model,
                tmp_path,
                evil.url,
                tmp_path / "other.ipynb",
                tool_calls(("install_packages", evil_install)),
                text("ok"),
            )
        else:  # nothing cached: the notebook's URL is where it would come from
            import shutil

            shutil.rmtree(tmp_path / "cache")
        nb = nbformat.read(out, as_version=4)
        [item] = nb.metadata.codeagent.packages
        assert item["name"] == "rt3ok"
        item.update(
            sha256=_sha(evil_wheel),
            url=f"http://127.0.0.1:{evil.port}/files/{evil_wheel.name}",
            filename=evil_wheel.name,
            index=good.url,  # "one of today's sources"
        )
        nbformat.write(nb, out)
        evil.log.clear()
        probe = "import importlib.util as u\nprint('EVIL', u.find_spec('rt3evil') is not None)"
        scripted_model.set_script([tool_calls(("run_cell", {"code": probe})), text("checked")])
        result = codeagent(
            "resume",
            str(out),
            "check",
            *_model(scripted_model),
            "--allow-install",
            "--index-url",
            good.url,
            "--workdir",
            str(tmp_path / "ws"),
            env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert "reinstalled rt3ok==1.0" not in result.stderr
        assert "could not reinstall the session's packages" in result.stderr
        printed = json.dumps(scripted_model.requests[-1]["messages"])
        assert "EVIL False" in printed and "EVIL True" not in printed
        assert evil.log == []  # the recorded URL was not even asked
    finally:
        good.stop()
        evil.stop()


def test_a_cached_wheel_from_a_source_no_longer_in_the_policy_is_not_reinstalled(
    scripted_model, tmp_path: Path
) -> None:
    """The cache notes where each wheel came from: once the administrator (here the
    flags) drops that index, a resume does not take the wheel from the cache either."""
    (tmp_path / "ws").mkdir()
    good = PackageIndex(tmp_path / "good").start()
    evil = PackageIndex(tmp_path / "evil").start()
    try:
        good.add(make_wheel(tmp_path / "g", "rt3ok", "1.0"))
        evil.add(make_wheel(tmp_path / "e", "rt3evil", "1.0", code="OWNED = 1\n"))
        out = tmp_path / "s.ipynb"
        install = {"packages": ["rt3evil"], "reason": "x"}
        _run(
            scripted_model,
            tmp_path,
            evil.url,
            out,
            tool_calls(("install_packages", install)),
            text("ok"),
        )
        probe = "import importlib.util as u\nprint('EVIL', u.find_spec('rt3evil') is not None)"
        scripted_model.set_script([tool_calls(("run_cell", {"code": probe})), text("checked")])
        result = codeagent(
            "resume",
            str(out),
            "check",
            *_model(scripted_model),
            "--allow-install",
            "--index-url",
            good.url,
            "--workdir",
            str(tmp_path / "ws"),
            env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert "reinstalled rt3evil" not in result.stderr
        assert "could not reinstall the session's packages" in result.stderr
        printed = json.dumps(scripted_model.requests[-1]["messages"])
        assert "EVIL False" in printed and "EVIL True" not in printed
    finally:
        good.stop()
        evil.stop()

"""The guard that keeps test runs in temporary folders (``tests/clean_run.py``), checked on
a real git checkout and a real nested pytest run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir, jupyter_runtime_dir

from tests import clean_run

ROOT = Path(__file__).resolve().parents[1]


def test_this_run_has_its_own_jupyter_folders(tmp_path_factory) -> None:
    """What every test sees: the run's folders, never the user's. The data dir is the
    session's own temporary one (``tests/conftest.py``: the CLI keeps its signing key there)."""
    root = Path(os.environ[clean_run.ROOT_ENV])
    assert Path(jupyter_data_dir()).is_relative_to(tmp_path_factory.getbasetemp())
    assert Path(jupyter_runtime_dir()) == root / "runtime"
    assert Path(os.environ["IPYTHONDIR"]) == root / "ipython"
    home = Path.home()
    assert not root.is_relative_to(home / ".local") and not root.is_relative_to(home / ".jupyter")


def _checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "shot.png").write_bytes(b"old picture")
    (repo / ".gitignore").write_text("build/\n")
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def test_tree_state_sees_a_rewritten_file_and_a_new_one(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    before = clean_run.TreeState.of(repo)
    assert before is not None
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("ignored by git")
    assert clean_run.TreeState.of(repo).changes_since(before) == []  # type: ignore[union-attr]
    (repo / "docs" / "shot.png").write_bytes(b"new picture")
    (repo / "stray.ipynb").write_text("{}")
    after = clean_run.TreeState.of(repo)
    assert after is not None
    assert after.changes_since(before) == ["changed: docs/shot.png", "new: stray.ipynb"]


def test_not_a_checkout_is_not_checked(tmp_path: Path) -> None:
    assert clean_run.TreeState.of(tmp_path) is None


def test_leftovers_in_the_data_folder_are_named(tmp_path: Path) -> None:
    environ: dict[str, str] = {}
    root = clean_run.redirect(environ)
    try:
        assert environ["JUPYTER_DATA_DIR"] == str(root / "data")
        assert clean_run.redirect(environ) == root  # a worker keeps the run's folder
        assert clean_run.leftovers(root) == []
        session = Path(environ["JUPYTER_DATA_DIR"]) / "codeagent" / "sessions" / "abc.ipynb"
        session.parent.mkdir(parents=True)
        session.write_text("{}")
        (Path(environ["JUPYTER_RUNTIME_DIR"]) / "kernel-1.json").write_text("{}")  # comes and goes
        assert clean_run.leftovers(root) == ["JUPYTER_DATA_DIR/codeagent/sessions/abc.ipynb"]
    finally:
        clean_run.remove(root)


def test_a_run_that_writes_into_the_data_folder_fails(tmp_path: Path) -> None:
    """A nested pytest run with this project's conftest: a test that writes a session where
    the user's would be fails the run, though the test itself passed."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    for module in ("clean_run.py", "schedule.py"):  # what the conftest imports
        (tests / module).write_text((ROOT / "tests" / module).read_text())
    (tests / "conftest.py").write_text(
        (ROOT / "tests" / "conftest.py")
        .read_text()
        .replace("from tests.scripted_model import ScriptedModelServer\n", "")
        .split("\n@pytest.fixture\ndef scripted_model")[0]
    )
    (tests / "test_writer.py").write_text(
        "from pathlib import Path\n"
        "from jupyter_core.paths import jupyter_data_dir\n\n"
        "def test_writes_a_session():\n"
        "    target = Path(jupyter_data_dir()) / 'codeagent' / 'sessions' / 'x.ipynb'\n"
        "    target.parent.mkdir(parents=True)\n"
        "    target.write_text('{}')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != clean_run.ROOT_ENV}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    result = subprocess.run(
        [*command, "tests"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "wrote into the Jupyter folders: JUPYTER_DATA_DIR/codeagent/sessions/x.ipynb" in (
        result.stdout
    )

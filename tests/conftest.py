"""Fixtures shared by every test area, and the guard that keeps a run in temporary folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import clean_run, schedule
from tests.scripted_model import ScriptedModelServer

_GUARD = pytest.StashKey[tuple[Path, "clean_run.TreeState | None"]]()


def pytest_configure(config: pytest.Config) -> None:
    """Before anything runs: the run's own Jupyter folders, and what the checkout looks like.

    Test workers inherit both from the process that started them; only that process (or the
    single one with ``-n 0``) checks them at the end.
    """
    root = clean_run.redirect(os.environ)
    if not hasattr(config, "workerinput"):
        config.stash[_GUARD] = (root, clean_run.TreeState.of(Path(config.rootpath)))
    schedule.keep_our_order(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, so the workers finish together (tests/schedule.py)."""
    schedule.longest_first(items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails if it changed the checkout or wrote into its Jupyter data or config."""
    guard = session.config.stash.get(_GUARD, None)
    if guard is None:
        return
    root, before = guard
    clean_run.stop_zygotes(root)
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return
    problems = [f"wrote into the Jupyter folders: {p}" for p in clean_run.leftovers(root)]
    after = clean_run.TreeState.of(Path(session.config.rootpath)) if before else None
    if before is not None and after is not None:
        problems += [f"the checkout: {p}" for p in after.changes_since(before)]
    if not problems:
        clean_run.remove(root)
        return
    shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["tests must write only into temporary folders (tmp_path), but this run:", *shown]
    lines.append(f"(the run's Jupyter folders are kept for a look: {root})")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.section("files written outside temporary folders", sep="=", red=True)
        for line in lines:
            reporter.line(line, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def scripted_model() -> Iterator[ScriptedModelServer]:
    """A started scripted model server with an empty script: call ``set_script`` first."""
    server = ScriptedModelServer([]).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True, scope="session")
def _temporary_jupyter_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every process a test starts gets a temporary Jupyter data dir, never the user's: the
    CLI keeps its signing key there (tests that need their own set ``JUPYTER_DATA_DIR``)."""
    before = os.environ.get("JUPYTER_DATA_DIR")
    os.environ["JUPYTER_DATA_DIR"] = str(tmp_path_factory.mktemp("jupyter-data"))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JUPYTER_DATA_DIR", None)
        else:
            os.environ["JUPYTER_DATA_DIR"] = before

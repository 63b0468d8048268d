"""Fixtures for end-to-end tests: a real JupyterLab server and headless Chromium.

The server is a `jupyter lab` subprocess of this Python environment, on loopback, with its own
token, root, config, settings and runtime directories, so a test sees exactly what a user of
this checkout would see and nothing of the machine's own Jupyter setup.

Override `lab_env` (environment variables) or `lab_config` (traitlets config, as a dict) in a
test module to configure the server, e.g. to point the codeagent server extension at
`model_server`, a scripted model that each test gives its script (a module may override it
to start with one). All are module-scoped, like the server they configure.

Missing Chromium, Playwright or a built labextension skip these tests with the reason, unless
`CODEAGENT_BROWSER_TESTS=required` is set (CI sets it), which turns the skip into a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.paths import jupyter_path

import codeagent_jupyter
from tests.quick_python import python_m
from tests.scripted_model import ScriptedModelServer

CHROMIUM = os.environ.get("CODEAGENT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LABEXTENSION_NAME = "codeagent-jupyter"
BUILT_LABEXTENSION = Path(codeagent_jupyter.__file__).parent / "labextension"
SERVER_START_TIMEOUT = 60.0


def _unavailable(reason: str) -> None:
    """Skip, or fail when the environment promises browser tests can run."""
    if os.environ.get("CODEAGENT_BROWSER_TESTS") == "required":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def _browser_missing() -> str | None:
    """Why the browser cannot run here, or None."""
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} not found: install it with `apt-get install -y chromium`"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: pip install -e '.[test]'"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark everything in this folder `browser`; skip it up front when there is no browser.

    Skipping at collection avoids starting a JupyterLab server for nothing. When browser
    tests are required, the `chromium` fixture reports the same reason as a failure instead.
    """
    here = Path(__file__).parent
    missing = _browser_missing()
    required = os.environ.get("CODEAGENT_BROWSER_TESTS") == "required"
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            if missing and not required:
                item.add_marker(pytest.mark.skip(reason=missing))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so `browser_page` knows whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def artifacts_dir(request: pytest.FixtureRequest) -> Path:
    """Where screenshots go: ``$CODEAGENT_TEST_ARTIFACTS``, else a folder in the system's temp dir.

    Never the checkout: a test run leaves the tree as it found it, ignored folders included.
    """
    default = Path(tempfile.gettempdir()) / "codeagent-test-artifacts"
    path = Path(os.environ.get("CODEAGENT_TEST_ARTIFACTS") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def lab_env() -> dict[str, str]:
    """Extra environment variables for the JupyterLab server (and so its kernels)."""
    return {}


@pytest.fixture(scope="module")
def lab_config() -> dict[str, Any]:
    """Extra traitlets config for the server, e.g. `{"CodeAgent": {"model": "scripted"}}`."""
    return {}


def _lab_config(extra: dict[str, Any]) -> dict[str, Any]:
    """Config that keeps the UI quiet and exposes `window.jupyterapp` for the harness."""
    config: dict[str, Any] = {
        "LabApp": {
            "expose_app_in_browser": True,
            "news_url": None,
            "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
        },
    }
    for section, values in extra.items():
        config.setdefault(section, {}).update(values)
    return config


def _labextension_data_dir(base: Path) -> Path | None:
    """A JUPYTER_PATH entry exposing the labextension built in this checkout, if there is one.

    It comes first in the search path, so the browser runs the current build even when an
    older copy was installed into the environment's share/jupyter. Without a build in the
    package (a regular, non-editable install), the installed copy is used as it is.
    """
    if not (BUILT_LABEXTENSION / "package.json").is_file():
        installed = [
            Path(p) / LABEXTENSION_NAME / "package.json" for p in jupyter_path("labextensions")
        ]
        if any(path.is_file() for path in installed):
            return None
        _unavailable(
            f"labextension {LABEXTENSION_NAME} is neither built nor installed: run "
            "`pip install -e .` (needs node and npm) or "
            "`jlpm --cwd labextension install && jlpm --cwd labextension build`"
        )
    data = base / "data"
    (data / "labextensions").mkdir(parents=True)
    (data / "labextensions" / LABEXTENSION_NAME).symlink_to(
        BUILT_LABEXTENSION, target_is_directory=True
    )
    return data


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"jupyter lab not ready after {SERVER_START_TIMEOUT}s:\n{log.read_text()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets the server shut its kernels down; SIGKILL the group if it hangs."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def jupyterlab_server(
    tmp_path_factory: pytest.TempPathFactory,
    lab_env: dict[str, str],
    lab_config: dict[str, Any],
) -> Iterator[tuple[str, str, Path]]:
    """A running `jupyter lab`; yields `(base_url, token, root_dir)`.

    `base_url` ends with "/"; every request needs `?token=...` (or the Authorization header).
    """
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "root"
    config_dir = base / "config"
    for path in (root, config_dir):
        path.mkdir()
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(_lab_config(lab_config)))
    # Answer JupyterLab's "get notified about news?" question up front: its toast covers cells.
    notification = base / "settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    data_dir = _labextension_data_dir(base)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTER_DATA_DIR": str(base / "jupyter-data"),  # session notebooks, signing secrets
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),  # the user kernels' history
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "npm_config_logs_max": "0",  # JupyterLab asks npm for its prefix: no log in ~/.npm
        "JUPYTER_PATH": os.pathsep.join(
            p for p in (str(data_dir or ""), os.environ.get("JUPYTER_PATH", "")) if p
        ),
        **lab_env,
    }
    log = base / "jupyterlab.log"
    command = [
        *python_m("jupyterlab"),
        "--no-browser",
        "--ServerApp.allow_root=True",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
    ]
    with log.open("wb") as log_file:
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=root,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_ready(f"{base_url}api/status?token={token}", proc, log)
        yield base_url, token, root
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (Playwright's own browser download is not used).

    Its own config and cache folders (crash reports, dconf) are temporary, not the user's.
    """
    missing = _browser_missing()
    if missing:
        _unavailable(missing)
    from playwright.sync_api import sync_playwright

    home = tmp_path_factory.mktemp("chromium")
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, env=env
        )
        yield browser
        browser.close()


@pytest.fixture
def screenshot(request: pytest.FixtureRequest, artifacts_dir: Path) -> Callable[..., Path]:
    """`screenshot(page, "name")` saves `<artifacts>/<test>-<name>.png`; returns the path."""

    def take(page: Any, name: str) -> Path:
        path = artifacts_dir / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def browser_page(
    request: pytest.FixtureRequest, chromium: Any, screenshot: Callable[..., Path]
) -> Iterator[Any]:
    """A fresh page (own cookies and storage); screenshot saved when the test fails."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        try:
            screenshot(page, "failure")
        except Exception as error:  # a dead page must not hide the test's own failure
            print(f"could not save failure screenshot: {error}")
    context.close()


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    """The module's scripted model (no script yet: each test sets its own)."""
    server = ScriptedModelServer([]).start()
    yield server
    server.stop()

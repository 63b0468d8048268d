"""A wheel folder under the server's root, where sessions' sandboxes write: a wheel planted
there (naming a source tree whose build backend leaves a marker) must not be installed,
nor anything of it built. ``POST /codeagent/api/sessions/ID/packages`` on the real server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.packages.index import make_wheel
from tests.scripted_model import text
from tests.security.server.conftest import TokenUsers, as_user
from tests.security.test_install_attacks import _source_tree
from tests.server.helpers import Api, of_type

ALICE = as_user("alice-token")


@pytest.fixture
def jp_server_config(jp_server_config: Any, jp_root_dir: Path) -> Any:
    folder = jp_root_dir / "class-wheels"  # the administrator's offline folder, misplaced
    folder.mkdir()
    jp_server_config["CodeAgent"]["packages"] = {
        "index_url": "",
        "find_links": [str(folder)],
        "cache_dir": str(jp_root_dir.parent / "wheel-cache"),
    }
    return jp_server_config


@pytest.mark.codeagent(allow_unconfined=True)  # about the host's installs: every lane
@pytest.mark.server_app(identity_provider_class=TokenUsers)
async def test_a_wheel_folder_under_the_server_root_is_refused(
    api: Api, scripted_model: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "host-marker"
    tree = _source_tree(jp_root_dir / "plantsrc", marker)  # as a sandbox could write them
    make_wheel(jp_root_dir / "class-wheels", "planted", "1.0", requires=[f"x @ {tree.as_uri()}"])
    scripted_model.set_script([text("ready")])
    code, session = await api.call(
        "POST", "sessions", {"prompt": "wait"}, headers=ALICE, request_timeout=240
    )
    assert code == 201, session
    sid = session["id"]
    for _ in range(1200):
        code, detail = await api.call("GET", f"sessions/{sid}", headers=ALICE)
        if of_type(detail["events"], "run_finished") and detail["state"] == "idle":
            break
        await asyncio.sleep(0.2)
    code, body = await api.call(
        "POST",
        f"sessions/{sid}/packages",
        {"packages": ["planted"], "reason": "x"},
        headers=ALICE,
        request_timeout=240,
    )
    assert not marker.exists(), "a planted build backend ran on the host"
    assert code == 400, body
    assert "\n" not in body["message"] and "where the sandbox can write" in body["message"], body

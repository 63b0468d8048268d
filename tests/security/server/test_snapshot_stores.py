"""One user filling the snapshot store must not cost another user their snapshots.

The attack, as it was found: Alice's files filled the server's one snapshot
store, and Bob's next files were skipped ("snapshot store is full"): nobody's later work
could be restored on resume or fork. Here, for real, on one server with a small quota:
Alice's sparse files cost almost nothing (the store compresses), her real data fills her
own store and her next file is skipped with the quota as the reason, which health and the
session summary report; Bob's snapshots are taken all the while. Once Alice's first session
is closed, her next session's snapshot collects its oldest snapshots, never Bob's; and
deleting a session releases what only it held.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.scripted_model import text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api

ALICE, BOB = as_user("alice-token"), as_user("bob-token")
QUOTA_MB = 8
REASON = f"snapshot store is full (snapshot_quota_mb: {QUOTA_MB} MiB per user)"
SPARSE = """
for i in range(4):  # 48 MiB each by length, one byte written
    with open(f"sparse{i}.bin", "wb") as f:
        f.seek((48 << 20) - 1)
        f.write(bytes([i + 1]))
"""


def _random(name: str, mib: int) -> str:
    return f"import os\nopen({name!r}, 'wb').write(os.urandom({mib} << 20))\n"


CODE = {
    "alice one": SPARSE + _random("r1.bin", 5),
    "alice two": _random("r2.bin", 5),
    "bob one": _random("b.bin", 1),
    "alice three": _random("r3.bin", 5),
}


def _respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Stateless: the code of the request just asked, then an answer."""
    last = messages[-1]
    if last["role"] == "tool":
        return text("done")
    asked = str(last.get("content") or "")
    code = next((c for key, c in CODE.items() if asked.endswith(key)), None)
    return tool_calls(("run_cell", {"code": code})) if code else text("nothing to do")


async def _finish(api: Api, sid: str, who: dict[str, str], since: int = 0) -> list[dict]:
    ws = await api.ws_fetch(
        "codeagent", "api", "sessions", sid, "events", headers=who, params={"since": str(since)}
    )
    try:
        return await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=300)
    finally:
        ws.close()


async def _snapshots(api: Api, sid: str, who: dict[str, str]) -> list[dict[str, Any]]:
    code, notebook = await api.call("GET", f"sessions/{sid}/notebook", headers=who)
    assert code == 200, notebook
    return notebook["metadata"]["codeagent"]["snapshots"]


async def _store(api: Api, who: dict[str, str]) -> dict[str, Any]:
    code, health = await api.call("GET", "health", headers=who)
    assert code == 200, health
    return health["snapshots"]


async def _start(api: Api, prompt: str, folder: str, who: dict[str, str]) -> dict[str, Any]:
    body = {"prompt": prompt, "notebook_path": f"{folder}/work.ipynb"}
    code, session = await api.call("POST", "sessions", body, headers=who)
    assert code == 201, session
    return session


@pytest.mark.server_app(identity_provider_class=TokenUsers)
@pytest.mark.codeagent(
    snapshot_quota_mb=QUOTA_MB,
    limits={"cell_timeout": 60, "memory_mb": 1024, "disk_mb": 512},
    allow_unconfined=True,  # about the stores, not isolation: also where bwrap is missing
)
async def test_one_users_full_store_never_costs_another_user_snapshots(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    for folder in ("alice1", "alice2", "bob"):
        (jp_root_dir / folder).mkdir()
        nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / folder / "work.ipynb")
    scripted_model.set_script(_respond)

    one = (await _start(api, "alice one", "alice1", ALICE))["id"]
    await _finish(api, one, ALICE)
    code, sent = await api.call(
        "POST", f"sessions/{one}/messages", {"text": "alice two"}, headers=ALICE
    )
    assert code == 202, sent
    await _finish(api, one, ALICE, since=sent["next_seq"])
    taken = await _snapshots(api, one, ALICE)
    # Her own store is full: the 5 MiB file is skipped, with the quota as the reason.
    assert taken[-1]["skipped"] == {"r2.bin": REASON}, taken[-1]
    first = next(e for e in taken if "sparse0.bin" in e.get("changed", []))
    assert first["skipped"] == {}  # 192 MiB of sparse files and 5 MiB of data: stored
    assert (await _store(api, ALICE))["used_mb"] < 7  # the sparse files cost almost nothing

    bob = (await _start(api, "bob one", "bob", BOB))["id"]
    await _finish(api, bob, BOB)
    bobs = await _snapshots(api, bob, BOB)
    assert "b.bin" in bobs[-1]["changed"] and bobs[-1]["skipped"] == {}  # taken, whole
    bob_store = await _store(api, BOB)
    assert bob_store["skipped"] == 0 and 0.9 < bob_store["used_mb"] < 2

    alice_store = await _store(api, ALICE)  # health says it, to her
    assert alice_store["skipped"] >= 1 and alice_store["why"] == REASON
    assert alice_store["quota_mb"] == QUOTA_MB and alice_store["used_mb"] <= QUOTA_MB
    code, summary = await api.call("GET", f"sessions/{one}", headers=ALICE)
    assert summary["snapshots"]["skipped"] == 1 and summary["snapshots"]["why"] == [REASON]

    # Closed, her first session's snapshots are what her next capture may collect.
    assert (await api.call("POST", f"sessions/{one}/pause", headers=ALICE))[0] == 200
    two = (await _start(api, "alice three", "alice2", ALICE))["id"]
    await _finish(api, two, ALICE)
    assert (await _snapshots(api, two, ALICE))[-1]["skipped"] == {}  # r3.bin stored
    assert (await _store(api, ALICE))["used_mb"] <= QUOTA_MB
    assert await _store(api, BOB) == bob_store  # never another user's

    # Resumed, the collected session says in one line that its files are gone.
    code, sent = await api.call(
        "POST", f"sessions/{one}/messages", {"text": "again"}, headers=ALICE
    )
    assert code == 202, sent
    events = await _finish(api, one, ALICE, since=sent["next_seq"])
    restored = next(e for e in events if e["type"] == "session_restored")
    assert any(
        p.startswith("files not restored: snapshot") and "collected" in p
        for p in restored["problems"]
    ), restored["problems"]

    # Deleting a session releases what only it held.
    before = (await _store(api, ALICE))["used_mb"]
    assert (await api.call("DELETE", f"sessions/{two}", headers=ALICE))[0] == 200
    after = (await _store(api, ALICE))["used_mb"]
    assert after <= before - 4.9, (before, after)  # r3.bin's 5 MiB, held by it alone
    assert json.dumps(await _store(api, BOB)) == json.dumps(bob_store)

"""Variables on a follow-up (``POST sessions/{id}/messages`` with ``uploads``), attacked.

Another user's upload id is not a way into their data: 404, and the upload stays theirs,
still waiting. A message to a busy session claims nothing (409): the caller's upload is
still there for the next message. Real server, real sandboxes; scripted model.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from typing import Any

import pytest

from tests.scripted_model import text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api

ALICE, BOB = as_user("alice-token"), as_user("bob-token")
users = pytest.mark.server_app(identity_provider_class=TokenUsers)


async def _upload(api: Api, name: str, value: Any, headers: dict[str, str]) -> str:
    data = pickle.dumps(value, protocol=5)
    params = {"name": name, "format": "pickle", "sha256": hashlib.sha256(data).hexdigest()}
    response = await api.fetch(
        "codeagent", "api", "uploads", method="POST", body=data, params=params, headers=headers
    )
    assert response.code == 201, response.body
    return str(json.loads(response.body)["id"])


async def _run_to_end(api: Api, sid: str, since: int = 0) -> list[dict[str, Any]]:
    ws = await api.ws_fetch(
        "codeagent", "api", "sessions", sid, "events", params={"since": str(since)}, headers=ALICE
    )
    try:
        return await api.read_until(ws, lambda e: e["type"] == "run_finished")
    finally:
        ws.close()


@users
@pytest.mark.codeagent(allow_unconfined=True)
async def test_a_message_takes_only_the_callers_uploads_and_claims_none_when_refused(
    api: Api, scripted_model: Any
) -> None:
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "import time; time.sleep(4)"})), text("done")]
    )
    code, started = await api.call("POST", "sessions", {"prompt": "work"}, headers=ALICE)
    assert code == 201, started
    sid = started["id"]
    bobs = await _upload(api, "ledger", {"bob": "private"}, BOB)
    alices = await _upload(api, "mine", 41, ALICE)

    # Busy: 409, and nothing claimed.
    busy = {"text": "use @mine", "uploads": [alices]}
    code, body = await api.call("POST", f"sessions/{sid}/messages", busy, headers=ALICE)
    assert code == 409 and "busy" in body["message"], body

    first = await _run_to_end(api, sid)  # the first run ends; the session is idle and live
    theirs = {"text": "read @ledger", "uploads": [bobs]}
    code, body = await api.call("POST", f"sessions/{sid}/messages", theirs, headers=ALICE)
    assert code == 400 and "unknown mention @ledger" in body["message"], body  # not hers
    theirs = {"text": "go on", "uploads": [bobs]}
    code, body = await api.call("POST", f"sessions/{sid}/messages", theirs, headers=ALICE)
    assert code == 404 and "no upload" in body["message"], body

    # Alice's own upload, kept through the 409, loads now; Bob's is still his to use.
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print('mine', mine + 1)"})), text("42")]
    )
    code, body = await api.call("POST", f"sessions/{sid}/messages", busy, headers=ALICE)
    assert code == 202, body
    events = await _run_to_end(api, sid, len(first))
    outputs = str([e.get("outputs") for e in events if e["type"] == "tool_call_finished"])
    assert "mine 42" in outputs and "private" not in outputs
    code, bob_session = await api.call(
        "POST", "sessions", {"prompt": "mine", "uploads": [bobs]}, headers=BOB
    )
    assert code == 201, bob_session

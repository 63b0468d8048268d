"""What the hub takes away, the gateway stops at once: revoked and expired tokens, removed
users, a student moved into a group with AI off.

The attack: a student whose token the hub no longer recognises keeps spending the class key
for as long as the gateway trusts its cached answer about the token (HubAuth's own default:
300 s); a student moved into an exam room with AI off keeps getting answers as long. The
hub here is real; the gateway's cache window is set to 1 s
(``c.CodeAgentGateway.auth_cache_seconds``) and every test first makes the gateway cache a
good answer, changes the hub through its REST API, then polls (with a generous bound, never
a timed assertion) until the gateway refuses; the provider must see none of the refused
requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.hub.real_hub import Hub, running_hub

pytestmark = pytest.mark.timeout(300)
WINDOW_S = 1
REFUSED_WITHIN_S = 60.0
"""How long a poll waits for the refusal: far beyond the window, far below HubAuth's 300 s."""
OFF = "AI is switched off for this class by the instructor"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    config = f"c.CodeAgentGateway.auth_cache_seconds = {WINDOW_S}\n"
    yield from running_hub(tmp_path_factory.mktemp("hub-revoke"), gateway_config=config)


def until(hub: Hub, ask: Callable[[], httpx.Response], refused: Callable[[Any], bool]) -> Any:
    """Ask until ``refused(response)``; the response. Fails after ``REFUSED_WITHIN_S``."""
    deadline = time.monotonic() + REFUSED_WITHIN_S
    seen: list[int] = []
    while time.monotonic() < deadline:
        response = ask()
        if refused(response):
            return response
        seen.append(response.status_code)
        time.sleep(0.2)
    raise AssertionError(f"still served after {REFUSED_WITHIN_S:g}s: statuses {seen[-5:]}")


def new_token(hub: Hub, user: str, **body: Any) -> tuple[str, str]:
    """``(token, token id)`` of a fresh hub API token of ``user``."""
    response = hub.admin("POST", f"/users/{user}/tokens", json={"note": "test", **body})
    assert response.status_code == 201, response.text
    return response.json()["token"], response.json()["id"]


def served_then_refused(hub: Hub, token: str, change: Callable[[], None], status: int) -> Any:
    """The token is served (the gateway caches the hub's answer), ``change`` happens on the
    hub, then the gateway refuses with ``status`` and forwards nothing more."""
    assert hub.chat(token).status_code == 200
    change()
    response = until(hub, lambda: hub.chat(token), lambda r: r.status_code != 200)
    assert response.status_code == status, response.text
    forwarded = len(hub.upstream.server.requests)
    again = hub.chat(token)
    assert again.status_code == status
    assert len(hub.upstream.server.requests) == forwarded  # refused before the provider
    return response.json()["error"]


def test_the_default_window_is_short() -> None:
    from codeagent_jupyter.hub.app import CodeAgentGateway

    assert 1 <= CodeAgentGateway().auth_cache_seconds <= 10


def test_a_revoked_token_is_refused(hub: Hub) -> None:
    token, token_id = new_token(hub, "alice")

    def revoke() -> None:
        assert hub.admin("DELETE", f"/users/alice/tokens/{token_id}").status_code == 204

    error = served_then_refused(hub, token, revoke, 401)
    assert error["code"] == "invalid_token" and "not valid" in error["message"]
    # Only that token: alice's other tokens still work.
    assert hub.chat(hub.login("alice")).status_code == 200


def test_an_expired_token_is_refused(hub: Hub) -> None:
    token, _ = new_token(hub, "bob", expires_in=6)
    error = served_then_refused(hub, token, lambda: None, 401)
    assert error["code"] == "invalid_token"


def test_a_removed_user_is_refused(hub: Hub) -> None:
    assert hub.admin("POST", "/users/erin").status_code == 201
    added = hub.admin("POST", "/groups/students/users", json={"users": ["erin"]})
    assert added.status_code == 200, added.text
    token, _ = new_token(hub, "erin")

    def remove() -> None:
        assert hub.admin("DELETE", "/users/erin").status_code == 204

    error = served_then_refused(hub, token, remove, 401)
    assert error["code"] == "invalid_token"


def test_a_student_moved_into_an_ai_off_group_is_refused_and_back(hub: Hub) -> None:
    hub.write_policy(groups={"exam-room": {"ai_enabled": False}})
    alice = hub.login("alice")
    members = "/groups/exam-room/users"

    def into_exam_room() -> None:
        assert hub.admin("POST", members, json={"users": ["alice"]}).status_code == 200

    error = served_then_refused(hub, alice, into_exam_room, 403)
    assert error["message"] == OFF
    assert hub.chat(hub.login("bob")).status_code == 200  # not in the exam room
    # Out of the exam room again: served again after the window.
    assert hub.admin("DELETE", members, json={"users": ["alice"]}).status_code == 200
    until(hub, lambda: hub.chat(alice), lambda r: r.status_code == 200)

"""``POST /codeagent/api/sessions/{id}/packages``: the user installs packages into a
session's sandbox between runs, without the model.

The same policy as the model's ``install_packages`` (``c.CodeAgent.packages``: allow and
deny lists, wheels only, ``max_mb``), through the session's own install tool (so the model
sees them as installed); the user's request is the approval, whatever ``approval`` says.
The install is published as a ``packages_installed`` event, which the session notebook
records in its installed set: a resume, fork or replay reinstalls it.

Answers: 200 with the installed wheels; 404 for another user's session (or none); 409
while a run (or a resume) is going or once the sandbox is gone; 400 for a bad body or a
name that is not a package name, or a package with no wheel; 403 when installs are off on
this server, or a package is not allowed; 413 over ``max_mb``.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized

from .. import events as ev
from ..errors import ToolError
from ..packages.fetch import OverLimit
from ..packages.policy import parse_request
from .bodies import body_schema
from .errors import ApiError
from .handlers import _ID, BaseHandler

PACKAGES = body_schema({"packages": "array", "reason": "string"}, {})
PACKAGES["properties"]["packages"] |= {
    "items": {"type": "string", "minLength": 1, "maxLength": 200},
    "minItems": 1,
    "maxItems": 50,
}
PACKAGES["properties"]["reason"]["maxLength"] = 2000


def _status(error: ToolError) -> int:
    """The HTTP status of a refusal: what the caller can act on."""
    if isinstance(error, OverLimit):
        return 413
    text = str(error)
    if "deny list" in text or "allow list" in text:
        return 403
    return 400


async def install_from_user(manager: Any, session: Any, packages: list[str], reason: str) -> dict:
    """Install ``packages`` into ``session``'s sandbox now; the event and its JSON form."""
    if manager.settings.package_policy() is None:
        raise ApiError(403, "package installs are off on this server (c.CodeAgent.packages)")
    if session.running or session.restoring is not None or session.state == "starting":
        raise ApiError(409, f"session {session.id} is running; install between runs")
    tool = getattr(session, "installs", None)
    if session.closed or session.sandbox is None or tool is None:
        raise ApiError(409, f"session {session.id} has no sandbox now; send it a message first")
    for name in packages:
        try:
            parse_request(name)
        except ToolError as e:
            raise ApiError(400, str(e)) from None
    session.touch()
    try:
        outcome = await tool.install_now(packages)
    except ToolError as e:
        raise ApiError(_status(e), str(e)) from None
    session.touch()
    event = session.bus.publish(ev.PackagesInstalled, packages=outcome, reason=reason)
    return {**event.to_dict(), "summary": event.summary()}


class PackagesHandler(BaseHandler):
    """``{"packages": [...], "reason": "..."}`` → the installed wheels (200)."""

    @authorized
    async def post(self, session_id: str) -> None:
        session = self.session(session_id, change=True)  # 404 before 400
        body = self.json_body(PACKAGES)
        self.reply(await install_from_user(self.manager, session, body["packages"], body["reason"]))


def routes() -> list[tuple[str, type]]:
    return [(f"/codeagent/api/sessions/{_ID}/packages", PackagesHandler)]

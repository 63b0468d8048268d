"""HTTP and WebSocket handlers under ``/codeagent/api``: thin translations to ``SessionManager``.

Every handler is behind the server's authentication and authorizes against the resource
``codeagent`` (so a custom ``Authorizer`` can grant or deny the agent separately). Errors are
JSON ``{"message": ..., "reason": ...}`` with the status the caller can act on.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from .. import events as ev
from . import bodies
from .bodies import check_body
from .errors import ApiError
from .net_approvals import answer_of
from .offloop import off_loop
from .policy import Caller, groups_of

AUTH_RESOURCE = "codeagent"
SERVER_OWNER = "server-owner"
_ID = r"([^/]+)"


def owner_for(identity_provider: Any, username: str) -> str:
    """The owner a user of this server counts as, under ``identity_provider``.

    Jupyter's own token/password login has one principal, whoever holds the secret, yet it
    names every cookie-less API request a fresh anonymous user; so behind it all requests
    are one owner. Other identity providers (JupyterHub, custom ones) name real users.
    The one rule for HTTP requests and for chat messages (``persona``).
    """
    if type(identity_provider).__module__.startswith("jupyter_server."):
        return SERVER_OWNER
    return username


def owner_of(handler: Any) -> str:
    """Who a request counts as: the owner of the sessions it creates, the only one who
    may see or change them (see ``caller_of``), and whose open sessions are capped."""
    user = handler.current_user
    return owner_for(handler.identity_provider, str(getattr(user, "username", user)))


def caller_of(handler: Any) -> Caller:
    """The owner name and the groups the identity provider gives the current user."""
    return Caller(owner_of(handler), groups_of(handler.current_user))


class BaseHandler(APIHandler):
    """JSON in, JSON out; an ``ApiError`` (a tornado ``HTTPError``) becomes its status and
    ``{"message", "reason"}`` through ``APIHandler.write_error``."""

    auth_resource = AUTH_RESOURCE

    @property
    def manager(self) -> Any:
        return self.settings["codeagent_manager"]

    @property
    def owner(self) -> str:
        return owner_of(self)

    @property
    def caller(self) -> Caller:
        return caller_of(self)

    def session(self, session_id: str, *, change: bool = False) -> Any:
        """The caller's session (404 when it is someone else's, 403 for a read-only reader)."""
        return self.manager.get(session_id, self.caller, change=change)

    def json_body(self, schema: dict[str, Any]) -> dict[str, Any]:
        # A body far beyond any acceptable prompt (even fully \u-escaped) is not parsed.
        limit = 6 * self.manager.settings.max_prompt_chars + 65536
        if len(self.request.body or b"") > limit:
            raise ApiError(413, f"the request body is larger than {limit} bytes")
        return check_body(self.get_json_body(), schema)

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.finish(json.dumps(data, default=str))


class HealthHandler(BaseHandler):
    @authorized
    async def get(self) -> None:
        await self.manager.ensure_pool()
        owner = self.owner
        await self.manager.snapshots_settled(owner)  # its store's use, captures asked for in
        self.reply(self.manager.health(owner))


class WarmHandler(BaseHandler):
    @authorized
    async def post(self) -> None:
        body = self.json_body(bodies.WARM)
        self.reply(await self.manager.warm(self.owner, body.get("notebook_path")))


class SessionsHandler(BaseHandler):
    @authorized
    async def get(self) -> None:
        await self.manager.follow_paths()
        self.reply(self.manager.list(self.caller))

    @authorized
    async def post(self) -> None:
        body = self.json_body(bodies.START)
        session = await self.manager.create(
            self.owner,
            body["prompt"],
            notebook_path=body.get("notebook_path"),
            model=body.get("model"),
            limits=body.get("limits"),
            max_steps=body.get("max_steps"),
            namespace=body.get("namespace"),
            uploads=body.get("uploads"),
            kernel_id=body.get("kernel_id"),
            cells=body.get("cells"),
            cells_complete=body.get("cells_complete", False),
            title=body.get("title", ""),
        )
        self.set_header("Location", self.request.path.rstrip("/") + "/" + session.id)
        self.reply(session.summary(), status=201)


class SessionHandler(BaseHandler):
    @authorized
    async def get(self, session_id: str) -> None:
        session = self.session(session_id)
        await self.manager.follow_paths()
        self.reply(session.detail())

    @authorized
    async def delete(self, session_id: str) -> None:
        session = await self.manager.delete(session_id, self.caller)
        self.reply(session.summary())


class MessagesHandler(BaseHandler):
    @authorized
    async def post(self, session_id: str) -> None:
        self.session(session_id, change=True)  # 404 before 400 for an unknown session
        body = self.json_body(bodies.MESSAGE)
        uploads = body.get("uploads", [])
        session = await self.manager.send(session_id, self.caller, body["text"], uploads=uploads)
        self.reply(session.summary(), status=202)


class ForkHandler(BaseHandler):
    """``{"prompt", "step"?}``: a new session from the state after that step (201)."""

    @authorized
    async def post(self, session_id: str) -> None:
        from .revive import FORK

        self.session(session_id, change=True)
        body = self.json_body(FORK)
        session = await self.manager.fork(session_id, self.caller, body["prompt"], body.get("step"))
        self.set_header("Location", self.request.path.rsplit("/", 2)[0] + "/" + session.id)
        self.reply(session.summary(), status=201)


class PauseHandler(BaseHandler):
    """Stop after the step in flight and release the sandbox; a message resumes."""

    @authorized
    async def post(self, session_id: str) -> None:
        self.reply((await self.manager.pause(session_id, self.caller)).summary())


class CancelHandler(BaseHandler):
    @authorized
    async def post(self, session_id: str) -> None:
        session = self.session(session_id, change=True)
        cancelled = session.cancel()
        self.reply({"cancelled": cancelled, **session.summary()})


class ApprovalHandler(BaseHandler):
    @authorized
    async def post(self, session_id: str, tool_call_id: str) -> None:
        session = self.session(session_id, change=True)
        body = self.json_body(bodies.APPROVAL)
        remember = body.get("remember", "")
        session.decide_approval(tool_call_id, body["approve"], remember)
        reply = {"tool_call_id": tool_call_id, "approved": body["approve"]}
        self.reply({**reply, "remember": remember} if remember else reply)


class NetworkApprovalHandler(BaseHandler):
    """The owner's answer about a host the sandbox asked to reach (``default: ask``), in
    the tool approvals' body: ``approve`` false denies, true allows once, or for the
    session with ``remember: "session"``."""

    @authorized
    async def post(self, session_id: str, host: str) -> None:
        session = self.session(session_id, change=True)
        body = self.json_body(bodies.APPROVAL)
        remember = body.get("remember", "")
        decided = session.network.decide(host, answer_of(body["approve"], remember))
        reply = {**decided, "approved": body["approve"]}
        self.reply({**reply, "remember": remember} if remember and body["approve"] else reply)


class CellDecisionHandler(BaseHandler):
    @authorized
    async def post(self, session_id: str, cell_id: str, decision: str) -> None:
        accepted = decision == "accept"
        self.reply(self.manager.decide_cell(session_id, self.caller, cell_id, accepted))


class NotebookHandler(BaseHandler):
    @authorized
    async def get(self, session_id: str) -> None:
        session = self.session(session_id)
        await session.settled()  # a run that just ended: its last snapshot and change set
        try:
            # the notebook holds what the sandbox printed (megabytes): read off the loop
            text = await off_loop(session.path.read_text, encoding="utf-8")
        except FileNotFoundError:
            raise ApiError(404, f"session {session_id} has no notebook on disk yet") from None
        self.set_header("Content-Disposition", f'inline; filename="{session.id}.ipynb"')
        self.finish(text)


class EventsHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):  # type: ignore[misc]
    """Streams a session's events as JSON text messages: first from ``since``, then live."""

    auth_resource = AUTH_RESOURCE

    def set_default_headers(self) -> None:
        """JupyterHandler's headers (CSP, …) do not apply to a WebSocket upgrade."""

    @ws_authenticated
    async def get(self, session_id: str) -> None:  # type: ignore[override]
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "read", AUTH_RESOURCE)
        )
        if not allowed:
            raise web.HTTPError(403)
        self.session = self.settings["codeagent_manager"].get(session_id, caller_of(self))
        try:
            self.since = int(self.get_argument("since", "0"))
        except ValueError:
            raise web.HTTPError(400, "since must be a whole number") from None
        if self.since < 0:
            raise web.HTTPError(400, "since must not be negative")
        await super().get(session_id)

    def open(self, session_id: str) -> None:  # type: ignore[override]
        super().open()
        self.session.bus.subscribe(self._send, self.since, on_end=self._end, first=True)
        if self.session.closed:
            self._end()  # a finished session: replayed, then closed

    def _send(self, event: ev.Event) -> None:
        """Write one event now (called from the session's event bus)."""
        try:
            sent = self.write_message(json.dumps(event.to_dict(), default=str))
        except WebSocketClosedError:
            self.session.bus.unsubscribe(self._send)
            return
        sent.add_done_callback(_consume)

    def _end(self) -> None:
        self.close(1000, "session closed")

    def on_message(self, message: str | bytes) -> None:
        """Clients only listen; anything they send is ignored."""

    def on_close(self) -> None:
        session = getattr(self, "session", None)
        if session is not None:
            session.bus.unsubscribe(self._send)


def _consume(future: Any) -> None:
    """A write to a client that went away fails; that is expected, not worth a log line."""
    if not future.cancelled():
        future.exception()


def route_table() -> list[tuple[str, type]]:
    """Routes relative to the server's base_url (the ExtensionApp prefixes it)."""
    api = "/codeagent/api"
    s = f"{api}/sessions/{_ID}"
    return [
        (f"{api}/health", HealthHandler),
        (f"{api}/warm", WarmHandler),
        (f"{api}/sessions/?", SessionsHandler),
        (f"{s}/?", SessionHandler),
        (f"{s}/events", EventsHandler),
        (f"{s}/messages", MessagesHandler),
        (f"{s}/cancel", CancelHandler),
        (f"{s}/fork", ForkHandler),
        (f"{s}/pause", PauseHandler),
        (f"{s}/approvals/{_ID}", ApprovalHandler),
        (f"{s}/approvals/network/{_ID}", NetworkApprovalHandler),
        (f"{s}/cells/{_ID}/(accept|reject)", CellDecisionHandler),
        (f"{s}/notebook", NotebookHandler),
    ]

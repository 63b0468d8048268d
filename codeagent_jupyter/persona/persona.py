"""``@codeagent`` in Jupyter AI's chat: our agent, in a sandbox, as a Jupyter AI persona.

Jupyter AI finds this class through the ``jupyter_ai.personas`` entry point (this module
is loaded only by ``jupyter_ai_persona_manager``; nothing else in the package imports
Jupyter AI) and makes one per chat. A message addressed to it starts a session through
the server extension's ``SessionManager``, exactly as ``POST /codeagent/api/sessions``
does: the model, its key and the limits are the server's (``c.CodeAgent.…``, or the class
gateway on JupyterHub), never the chat's. The persona publishes that model as its only one,
so the chat shows what answers; a model a chat message names is not taken (and not shown as
the persona's). Later messages follow up in the same sandbox.

What the chat shows comes from the session's event stream (``mirror``). The persona keeps
Jupyter AI's contract for a reply: ``process_message`` lasts as long as the run, so the
chat shows the persona at work and its stop button calls ``cancel_response``, which stops
the run like the panel's Stop. A tool call waiting for approval ends the reply early, so
that the next message (``@codeagent approve``) can answer it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_ai_persona_manager import BasePersona, PersonaDefaults
from jupyter_ai_persona_manager.awareness_models import (
    ModelConfiguration,
    ModelOption,
    ModelSpec,
    Usage,
)
from jupyterlab_chat.models import Message, NewMessage

from ..server.errors import ApiError
from ..server.handlers import owner_for
from ..server.net_approvals import answer_of
from ..server.policy import Caller
from . import render
from .mirror import APPROVAL, ChatMirror
from .requests import APPROVE, DENY, HELP, NEW, STOP, Asked, notebook_of, parse

NAME = "codeagent"
"""The persona's name in the chat, and so its mention: ``@codeagent``."""
AVATAR = Path(__file__).with_name("avatar.svg")
METADATA_KEY = "codeagent"
"""The chat's metadata entry naming each owner's session in it (kept in the .chat file)."""


class CodeAgentPersona(BasePersona):
    """Runs the request in a sandbox kernel and shows the plan, each cell and the answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mirrors: dict[str, ChatMirror] = {}
        self._active: tuple[str, Caller] | None = None
        """The session whose run the current reply follows (what stop stops)."""

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name=NAME,
            description=(
                "Plans, writes and runs Python in a sandbox kernel (no network, resource "
                "limits, a session notebook), never in your kernel."
            ),
            avatar_path=str(AVATAR),
            system_prompt="The codeagent server extension's own (c.CodeAgent settings).",
        )

    # -- Jupyter AI's entry points ----------------------------------------------------------

    async def prepare(self) -> None:
        """Before the first message (or when the chat selects the persona): the chat is
        told the persona's model, the server's."""
        self._publish_model()

    async def apply_model_spec(self, spec: ModelSpec) -> None:
        """A model named by a chat message (Jupyter AI's model picker) is not taken: the
        sessions run the server's model. Jupyter AI would record the named one as the
        persona's current model; the server's is published again instead."""
        if spec.id is not None and spec.id != self.get_model():
            self._publish_model()

    async def process_message(self, message: Message) -> None:
        asked = parse(message.body, self.as_user().mention_name)
        manager = self._manager()
        if manager is None:
            self.send_message(
                render.error_body("the codeagent server extension is not running in this server")
            )
            return
        caller = Caller(owner_for(self._identity_provider(), str(message.sender)))
        try:
            await self._answer(asked, message, manager, caller)
        except ApiError as e:
            self.send_message(render.error_body(e.message, e.status))
        finally:
            self.clear_status()

    async def cancel_response(self) -> None:
        """The chat's stop button: the run stops as with the panel's Stop (a session still
        being rebuilt is paused instead)."""
        if self._active is not None:
            await self._stop(*self._active)

    async def shutdown(self) -> None:
        """Stop following sessions (they go on, and the panel can still show them)."""
        for mirror in self._mirrors.values():
            mirror.detach()
        self._mirrors.clear()
        await super().shutdown()

    # -- one message ----------------------------------------------------------------------

    async def _answer(self, asked: Asked, message: Message, manager: Any, caller: Caller) -> None:
        if asked.kind == HELP:
            self.send_message(render.help_body())
            return
        session = self._session_of(manager, caller)
        if asked.kind == STOP:
            stopped = session is not None and await self._stop(session.id, caller)
            self.send_message(render.line("Stopped." if stopped else "Nothing is running."))
            return
        if asked.kind in (APPROVE, DENY):
            await self._decide(session, asked, caller)
            return
        self.set_status("is starting a sandbox...")
        if session is None or asked.kind == NEW or session.deleted:
            notebook = notebook_of(message.attachments, self.chat.get_attachments())
            session = await manager.create(  # "@alice" in a chat is a person: left as text
                caller.name, asked.text, notebook_path=notebook, strict_mentions=False
            )
            self._remember(caller.name, session.id)
            self.send_message(render.started_body(session.id, session.model))
            await self._follow(session, caller, 0)
            return
        mirror = self._mirror(session)  # before the run starts: the earlier turns are shown
        after = session.bus.next_seq
        session = await manager.send(session.id, caller, asked.text, strict_mentions=False)
        await self._follow(session, caller, after, mirror)

    async def _follow(
        self, session: Any, caller: Caller, after: int, mirror: ChatMirror | None = None
    ) -> None:
        """Show the run until it ends, or until a tool call waits for the user's answer."""
        mirror = mirror or self._mirror(session)
        self._active = (session.id, caller)
        self.set_status("is working in a sandbox...")
        try:
            why = await mirror.wait(after)
        finally:
            self._active = None
            self.clear_status()
        if why != APPROVAL:
            state = session.view
            self.report_usage(Usage(**render.usage_numbers(state)))

    async def _decide(self, session: Any, asked: Asked, caller: Caller) -> None:
        pending = session.view.pending_approvals if session is not None else []
        if asked.host or (not pending and session is not None and session.network.pending):
            await self._answer_host(session, asked, caller)
            return
        if not pending:
            self.send_message(render.line("No tool call is waiting for approval."))
            return
        after = session.bus.next_seq
        for item in pending:
            session.decide_approval(item.tool_call_id, asked.kind == APPROVE, asked.remember)
        await self._follow(session, caller, after)

    async def _answer_host(self, session: Any, asked: Asked, caller: Caller) -> None:
        """An answer about the host the user named (never whichever host waits now)."""
        waiting = session.network.pending if session is not None else []
        host = asked.host
        if not host:  # a bare "approve" while only a host waits: ask them to name it
            named = ", ".join(waiting)
            self.send_message(render.line(f"Name the host to answer: {named}."))
            return
        answer = answer_of(asked.kind == APPROVE, asked.remember)
        after = session.bus.next_seq if session is not None else 0
        try:
            if session is None:
                raise ApiError(404, f"no network approval is waiting for {host!r}")
            session.network.decide(host, answer)
        except ApiError as e:
            self.send_message(render.error_body(e.message, e.status))
            return
        await self._follow(session, caller, after)

    async def _stop(self, session_id: str, caller: Caller) -> bool:
        manager = self._manager()
        if manager is None:
            return False
        session = manager.get(session_id, caller, change=True)
        if session.running:
            return bool(session.cancel())
        if session.busy:  # still being rebuilt from its notebook: pause it
            await manager.pause(session_id, caller)
            return True
        return False

    def _publish_model(self) -> None:
        """The server's model (``c.CodeAgent.model``, or the class gateway's default) as
        the persona's current and only model; none where the server has none configured."""
        manager = self._manager()
        name = manager.models.info().get("name") if manager is not None else None
        option = ModelOption(id=name, description="set by the server") if name else None
        self.report_model_configuration(
            ModelConfiguration(current=name, options=[option] if option else [])
        )

    # -- where things are -----------------------------------------------------------------

    def _mirror(self, session: Any) -> ChatMirror:
        mirror = self._mirrors.get(session.id)
        if mirror is None:
            sender = self.id
            mirror = ChatMirror(
                self.chat,
                session,
                new_message=lambda body: NewMessage(body=body, sender=sender),
                message=lambda mid, body, at: Message(
                    id=mid, body=body, time=at, sender=sender, raw_time=False
                ),
            )
            mirror.attach()
            self._mirrors[session.id] = mirror
        return mirror

    def _session_of(self, manager: Any, caller: Caller) -> Any:
        """``caller``'s session in this chat (None when there is none, or it is gone)."""
        entry = self.chat.get_metadata().get(METADATA_KEY)
        sessions = entry.get("sessions") if isinstance(entry, dict) else None
        session_id = sessions.get(caller.name) if isinstance(sessions, dict) else None
        if not isinstance(session_id, str):
            return None
        try:
            return manager.get(session_id, caller, change=True)
        except ApiError:
            return None

    def _remember(self, owner: str, session_id: str) -> None:
        entry = self.chat.get_metadata().get(METADATA_KEY)
        sessions = dict(entry.get("sessions") or {}) if isinstance(entry, dict) else {}
        sessions[owner] = session_id
        self.chat.set_metadata(METADATA_KEY, {"sessions": sessions})

    def _serverapp(self) -> Any:
        """The Jupyter server: the persona manager's extension app holds it; a persona made
        outside one (Jupyter AI's one-shot message route) finds the running server."""
        app = getattr(getattr(self.parent, "parent", None), "serverapp", None)
        if app is None:
            from jupyter_server.serverapp import ServerApp

            app = ServerApp.instance() if ServerApp.initialized() else None
        return app

    def _manager(self) -> Any:
        app = self._serverapp()
        web_app = getattr(app, "web_app", None)
        return web_app.settings.get("codeagent_manager") if web_app is not None else None

    def _identity_provider(self) -> Any:
        return getattr(self._serverapp(), "identity_provider", None)

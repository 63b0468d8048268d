"""The OpenAI-compatible API of the gateway: ``v1/chat/completions`` and ``v1/models``.

Every request carries the student's own JupyterHub token (``Authorization: Bearer …``, as
the ``openai`` client sends its key). JupyterHub's service auth identifies the user
(``HubAuth.user_for_token``) and ``check_scopes`` confirms the token may reach this service;
no cookie is ever used here, so no other site can spend a student's quota.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from tornado import web
from tornado.iostream import StreamClosedError

from .errors import GatewayError
from .service import Gateway

SESSION_HEADER = "X-Codeagent-Session"
"""Optional request header: the agent session a request belongs to (kept in the ledger)."""


class JsonHandler(web.RequestHandler):
    """Errors as OpenAI-style JSON; the gateway and hub auth passed in by the app."""

    def initialize(self, gateway: Gateway, hub_auth: Any) -> None:
        self.gateway = gateway
        self.hub_auth = hub_auth

    def check_xsrf_cookie(self) -> None:
        """Token-only API: no cookie authenticates a request, so there is nothing to forge."""

    def write_json(self, payload: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(payload))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, GatewayError):
            body = exc.body()
            for name, value in exc.headers.items():
                self.set_header(name, value)
        else:
            message = exc.log_message if isinstance(exc, web.HTTPError) else None
            kind = "server_error" if status_code >= 500 else "invalid_request_error"
            body = {
                "error": {
                    "message": message or self._reason,
                    "type": kind,
                    "param": None,
                    "code": None,
                }
            }
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def _handle_request_exception(self, e: BaseException) -> None:
        if isinstance(e, GatewayError):
            if not self._finished:
                self.send_error(e.status, exc_info=(type(e), e, e.__traceback__))
            return
        super()._handle_request_exception(e)

    async def token_user(self) -> dict[str, Any]:
        """The hub user who owns the request's token; 401 without one, 403 without scope."""
        auth = self.hub_auth
        token = auth.get_token(self, in_cookie=False)
        if not token:
            raise GatewayError(
                401,
                "no JupyterHub token: send 'Authorization: Bearer <token>'",
                kind="authentication_error",
                code="missing_token",
            )
        user = await auth.user_for_token(token, session_id="", sync=False)
        if not user:
            raise GatewayError(
                401,
                "this JupyterHub token is not valid (expired or revoked?)",
                kind="authentication_error",
                code="invalid_token",
            )
        if not auth.check_scopes(auth.access_scopes, user) or user.get("kind") != "user":
            scopes = ", ".join(sorted(auth.access_scopes))
            raise GatewayError(
                403,
                f"this token may not use the model gateway (needs {scopes})",
                kind="permission_error",
                code="missing_scope",
            )
        return user


class ChatCompletionsHandler(JsonHandler):
    """``POST v1/chat/completions``: checked against the policy, forwarded, recorded."""

    async def post(self) -> None:
        user = await self.token_user()
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            raise GatewayError(
                400,
                "the body must be a JSON object with a 'model' name",
                kind="invalid_request_error",
            )
        model = body["model"]
        gateway = self.gateway
        day = gateway.admit(user, model)
        session = (self.request.headers.get(SESSION_HEADER) or "")[:200] or None
        with gateway.slot(user):
            reply = await gateway.upstream.chat(
                body, self._start, self._send, keep_text=gateway.store_transcripts
            )
        gateway.record(user, model, day, reply, session=session, request=body)
        if not self._finished:
            self.finish()

    def _start(self, status: int, content_type: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", content_type)
        if content_type.startswith("text/event-stream"):
            self.set_header("Cache-Control", "no-cache")
            self.set_header("X-Accel-Buffering", "no")

    async def _send(self, data: bytes) -> None:
        self.write(data)
        with contextlib.suppress(StreamClosedError):  # the client left: still counted
            await self.flush()


class ModelsHandler(JsonHandler):
    """``GET v1/models``: the models this student may use, the class default first."""

    async def get(self) -> None:
        user = await self.token_user()
        rules, policy = self.gateway.rules(user)
        names = list(rules.allowed_models) or await self.gateway.upstream.models()
        if policy.default_model and rules.allows_model(policy.default_model):
            names = [policy.default_model, *(n for n in names if n != policy.default_model)]
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "class"} for n in names]
        self.write_json({"object": "list", "data": data})


class EgressHandler(JsonHandler):
    """``GET v1/egress``: the class's egress ceiling (``{"egress": {...} | null}``), read by
    each student's server at start; a student's token, as for the models."""

    async def get(self) -> None:
        await self.token_user()
        self.write_json({"egress": self.gateway.policy.current().egress})


class InstructionsHandler(JsonHandler):
    """``GET v1/codeagent/instructions``: the class instructions (the policy's), for a
    student's server to place in its agents' system message."""

    async def get(self) -> None:
        await self.token_user()
        self.write_json({"instructions": self.gateway.policy.current().instructions})


class HealthHandler(JsonHandler):
    """``GET health``: unauthenticated liveness (nothing about users or the provider)."""

    def get(self) -> None:
        error = self.gateway.policy.error
        self.write_json({"ok": error is None, "policy_error": error})

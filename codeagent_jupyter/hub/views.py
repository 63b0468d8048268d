"""What instructors see and do: the usage report and the AI switches.

Hub admins and members of ``c.CodeAgentGateway.instructor_groups`` only; anyone else gets
403. The report is readable with a token (``GET usage``, ``usage?format=csv``) or in a
browser through the hub's OAuth login (the page at the service's root). Switches are
flipped with a token (``POST switch``), never by a cookie, so no page can flip them for a
logged-in instructor.
"""

from __future__ import annotations

import json
from typing import Any

from jupyterhub.services.auth import HubOAuthenticated

from . import report
from .errors import GatewayError
from .handlers import JsonHandler


class InstructorHandler(HubOAuthenticated, JsonHandler):
    """Identifies the user by token or hub login cookie; only instructors pass."""

    async def instructor(self, *, browser: bool = False) -> dict[str, Any] | None:
        """The instructor's user model; ``None`` after redirecting a browser to log in."""
        user = await self.hub_auth.get_user(self, sync=False)
        if not user:
            if browser:
                self.redirect(self.get_login_url())
                return None
            raise GatewayError(
                401,
                "log in to JupyterHub or send a token",
                kind="authentication_error",
                code="missing_token",
            )
        auth = self.hub_auth
        if not auth.check_scopes(auth.access_scopes, user) or not self.gateway.is_instructor(user):
            raise GatewayError(
                403,
                "only instructors (hub admins or an instructor group) may "
                "see or change class settings",
                kind="permission_error",
                code="not_instructor",
            )
        return user

    def report(self) -> dict[str, Any]:
        gateway = self.gateway
        return {
            "students": gateway.ledger.per_student(),
            "days": gateway.ledger.per_day(),
            "switches": gateway.switches(),
            "policy_error": gateway.policy.error,
        }


class UsageHandler(InstructorHandler):
    """``GET usage`` (JSON) and ``GET usage?format=csv`` (or ``usage.csv``)."""

    async def get(self, suffix: str = "") -> None:
        await self.instructor()
        fmt = "csv" if suffix == ".csv" else self.get_argument("format", "json")
        data = self.report()
        if fmt == "csv":
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", 'attachment; filename="usage.csv"')
            self.finish(report.to_csv(data["students"]))
        elif fmt == "json":
            self.write_json(data)
        else:
            raise GatewayError(
                400, f"format must be json or csv, not {fmt!r}", kind="invalid_request_error"
            )


class UsagePageHandler(InstructorHandler):
    """The instructor's page: a table per student and a bar chart per day (no assets)."""

    async def get(self) -> None:
        if await self.instructor(browser=True) is None:
            return
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
        self.finish(report.to_html(self.report()))


class SwitchHandler(InstructorHandler):
    """``POST switch {"enabled": false, "group": "exam-room"}`` (no group: the class)."""

    async def post(self) -> None:
        if not self.hub_auth.get_token(self, in_cookie=False):
            raise GatewayError(
                401,
                "switches are flipped with a token, not a login cookie",
                kind="authentication_error",
                code="missing_token",
            )
        user = await self.instructor()
        assert user is not None
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            body = None
        group = body.get("group") if isinstance(body, dict) else None
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("enabled"), bool)
            or not (group is None or (isinstance(group, str) and group))
        ):
            raise GatewayError(
                400,
                'send {"enabled": true|false, "group": NAME (optional)}',
                kind="invalid_request_error",
            )
        self.gateway.set_switch(group, body["enabled"], by=user["name"])
        self.write_json({"switches": self.gateway.switches()})

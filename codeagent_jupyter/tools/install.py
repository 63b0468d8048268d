"""The ``install_packages`` tool: wheels fetched for the sandbox, outside it, under policy.

The sandbox has no network, so the server fetches what it needs for it: the request is
checked (names only, the administrator's allow and deny lists, a size cap), resolved by
pip against the kernel's own environment, fetched as wheels (never a source distribution)
into the shared cache, shown to the user for approval (package, version, size, index)
where the policy says ``ask``, and unpacked into the sandbox's overlay folder, which the
kernel sees read-only on its ``sys.path``; the kernel's import caches are then
invalidated, so the next cell imports the package without a restart. What was installed
(name, version, sha256, URL) is the outcome's ``packages``: the session notebook records
it, and a resumed or forked session reinstalls exactly those files (``restore``).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.outcome import ToolOutcome
from ..core.toolset import ToolContext
from ..errors import ToolArgumentError, ToolError
from ..packages.import_names import import_names
from ..packages.installer import Installer, Plan
from ..traits import ToolTraits
from ..util.sizes import size_text
from ._schema import Tool, check, obj

NAME = "install_packages"
PARAMETERS = obj(
    ["packages", "reason"],
    packages={
        "type": "array",
        "minItems": 1,
        "items": {"type": "string", "minLength": 1},
        "description": "Package names from the package index, each optionally with a "
        "version, e.g. ['statsmodels', 'scikit-learn>=1.4'].",
    },
    reason={"type": "string", "minLength": 1, "description": "One sentence: what they are for."},
)
INSTALL_PROMPT = (
    "install_packages installs missing packages for the kernel (fetched outside the "
    "sandbox, under the administrator's policy); pip inside the sandbox cannot reach the "
    "network."
)
"""The prompt's sentence about ``install_packages``, used only when the tool is offered."""


async def _run_by_install_tool(box: Any, **args: Any) -> ToolOutcome:
    raise ToolError(f"{NAME} is run by its own toolset (InstallTool), not by ToolBox")


TOOL = Tool(
    NAME,
    "Install Python packages (wheels from the server's package index) into "
    "the sandbox, which has no network of its own: pip inside it cannot download. The "
    "user may be asked to approve. Dependencies already installed are kept. The packages "
    "are importable in the next run_cell, without a restart.",
    PARAMETERS,
    _run_by_install_tool,
    # Runs pip outside the sandbox under the administrator's package policy, which decides;
    # it asks for approval itself, with the wheels it would install ("auto" here: never twice).
    ToolTraits("host", approval="auto", policy_checked=False),
    prompt=INSTALL_PROMPT,
    prompt_rank=30,
)
SCHEMA: dict[str, Any] = TOOL.schema()


INVALIDATE = (
    "import importlib as _ca_importlib, sys as _ca_sys\n"
    "_ca_importlib.invalidate_caches()\n"
    "print(_ca_sys.path.count({path!r}) > 0)\n"
    "del _ca_importlib, _ca_sys\n"
)
"""Run in the kernel after an install: new packages importable without a restart."""


class InstallTool:
    """``install_packages`` on one sandbox (a ``Toolset``); ``approval`` ``ask`` or ``auto``.

    ``installed``: the packages already in the sandbox's overlay (a resumed session's,
    restored by ``restore``), name -> version.
    """

    def __init__(
        self,
        sandbox: Any,
        installer: Installer,
        *,
        approval: str = "ask",
        writable: Iterable[Path] = (),
    ) -> None:
        self.sandbox = sandbox
        self.installer = installer
        self.approval = approval
        self.writable = list(writable)
        """Where other sandboxes can write (a server's root), beside this one's own
        workspace and kernel folder: no wheel folder of the policy may overlap them."""
        self.installed: dict[str, dict[str, Any]] = {}

    @property
    def names(self) -> set[str]:
        return {NAME}

    def schemas(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(SCHEMA)]

    def definition(self, name: str) -> Tool | None:
        """This toolset's one tool's declaration (traits, prompt line)."""
        return TOOL if name == NAME else None

    def prompt_lines(self) -> list[tuple[int, str]]:
        return [(TOOL.prompt_rank, TOOL.prompt)]

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        if name != NAME:
            raise ToolArgumentError(f"unknown tool {name!r}; available: {NAME}")
        args = check(arguments, PARAMETERS, NAME)
        overlay = await self._overlay()
        versions = {n: str(p["version"]) for n, p in self.installed.items()}
        plan = await self.installer.plan(args["packages"], versions)
        try:
            if not plan.wheels:
                return ToolOutcome(text="Already installed: " + ", ".join(args["packages"]))
            if self.approval == "ask":
                approve = ctx.approve if ctx is not None else None
                details = {**args, "install": plan.describe(), "size_bytes": plan.size_bytes}
                if approve is None or not await approve(NAME, details):
                    return ToolOutcome.denied()
            return await self._install(plan, overlay)
        finally:
            plan.discard()  # denied or failed: nothing of it stays in the cache

    async def install_now(self, packages: list[str]) -> list[dict[str, Any]]:
        """Install ``packages`` at the user's request (their request is the approval):
        the same policy and plan as a call, no model. The wheels installed (none when all
        were there already)."""
        overlay = await self._overlay()
        versions = {n: str(p["version"]) for n, p in self.installed.items()}
        plan = await self.installer.plan(list(packages), versions)
        try:
            if not plan.wheels:
                return []
            outcome = await self._install(plan, overlay)
        finally:
            plan.discard()
        return list(outcome.packages or [])

    async def restore(self, recorded: Iterable[Mapping[str, Any]]) -> str:
        """Reinstall a recorded set (same versions and files); says which, in one line."""
        wanted = [dict(p) for p in recorded if isinstance(p, Mapping) and p.get("name")]
        if not wanted:
            return ""
        overlay = await self._overlay()
        wheels = await self.installer.restore(wanted, overlay)
        await self._refresh(overlay)
        for wheel in wheels:
            self.installed[wheel.name] = wheel.to_dict()
        return ", ".join(w.pin() for w in wheels)

    async def _install(self, plan: Plan, overlay: Path) -> ToolOutcome:
        wheels = list(plan.wheels)
        await self.installer.install(plan, overlay)
        note = await self._refresh(overlay)
        for wheel in wheels:
            self.installed[wheel.name] = wheel.to_dict()
        source = ", ".join(sorted({w.index for w in wheels}))
        lines = [f"Installed from {source}:"]
        for w in wheels:
            path = plan.files.get(w.name)
            names = await asyncio.to_thread(import_names, path) if path else []
            what = f" \u2014 import {', '.join(names)}" if names else ""
            lines.append(f"- {w.name} {w.version} ({size_text(w.size_bytes)}){what}")
        text = "\n".join(lines) + f"\nImport them in the next cell.{note}"
        return ToolOutcome(text=text, packages=[w.to_dict() for w in wheels])

    async def _overlay(self) -> Path:
        sandbox = self.sandbox
        if hasattr(sandbox, "ready"):
            sandbox = await sandbox.ready()
        overlay = getattr(sandbox, "packages_dir", None)
        if overlay is None:
            raise ToolError(
                f"{NAME}: this sandbox has no package folder (it runs on a kernel gateway or "
                "another kernel manager); only the local sandbox can get packages"
            )
        overlay = Path(overlay)
        roots = [getattr(sandbox, "workdir", None), overlay.parent, *self.writable]
        self.installer.refuse_writable_sources(roots)
        overlay.mkdir(mode=0o755, exist_ok=True)
        if overlay.is_symlink() or not overlay.is_dir():  # writes would follow it elsewhere
            raise ToolError(f"{NAME}: the sandbox's package folder is not a plain folder")
        return overlay

    async def _refresh(self, overlay: Path) -> str:
        """Invalidate the kernel's import caches; a note if the overlay is not on its path."""
        code = INVALIDATE.format(path=str(overlay))
        result = await self.sandbox.execute(code, store_history=False)
        if "True" in (result.text or ""):
            return ""
        return " (The kernel was started without the package folder on its path: restart it.)"

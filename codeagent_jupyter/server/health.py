"""``GET health``: the model (never its key), what the sandbox really enforces, the pool
and the sessions, so a client can say what is missing before the user asks anything."""

from __future__ import annotations

from typing import Any

from ..sandbox import report as sandbox_report
from . import lifecycle


def report(manager: Any, owner: str | None = None) -> dict[str, Any]:
    """With ``owner``, that user's snapshot store too (its use; skipped snapshots and why;
    ``fetched_bytes``, the bodies kept for replays inside the same quota).
    ``unconfined`` (also under ``sandbox``) is None until a sandbox has started and
    reported what it enforces on this machine."""
    pool = manager.supply.status()
    enforcement = pool.pop("enforcement", None) or manager.supply.enforcement
    known = enforcement is not None
    sandbox = {
        "backend": manager.supply.backend.describe(),
        "effective_limits": enforcement.get("limits") if known else None,
        "limits": manager.default_limits.to_dict(),
        "enforcement": enforcement,
        "allow_unconfined": manager.supply.allow_unconfined,
        "egress": manager.settings.egress,  # under network: policy (on a hub: the class's)
        "unconfined": sandbox_report.is_unconfined(enforcement) if known else None,
        "gaps": sandbox_report.gaps(enforcement) if known else None,
        "warning": sandbox_report.warning(enforcement) if known else None,
    }
    sessions = list(manager.sessions.values())
    return {
        "model": manager.models.info(),
        "unconfined": sandbox["unconfined"],
        "sandbox": sandbox,
        "pool": pool,
        "sessions": {
            "total": len(sessions),
            "open": sum(1 for s in sessions if lifecycle.is_open(s)),
            "running": sum(1 for s in sessions if s.running),
        },
        "max_sessions_per_user": manager.settings.max_sessions_per_user,
        "approval": dict(manager.settings.approval),
        "snapshots": _store(manager, owner),
    }


def _store(manager: Any, owner: str | None) -> dict[str, Any]:
    """The owner's snapshot store, with the fetched bodies that share its quota."""
    status = manager.snapshots.status(owner)
    if owner is not None:
        status["fetched_bytes"] = manager.fetched.used_bytes(owner)
    return status

"""The usage ledger: one SQLite row per request forwarded to the provider.

Stdlib ``sqlite3`` in WAL mode, so the instructor's report reads while requests write, and
the file survives restarts of the service. Quotas are computed from the same rows, so what
the report shows is exactly what the quota counted. Transcripts (request and response
bodies) are stored only when ``store_transcripts`` is on; it is off by default.

The AI-off switches that instructors flip over HTTP live here too (table ``switches``),
so a switch survives a restart like the usage it guards.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY,
    user TEXT NOT NULL,
    ts REAL NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL NOT NULL,
    session TEXT,
    status INTEGER NOT NULL,
    estimated INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS usage_user_day ON usage (user, day);
CREATE TABLE IF NOT EXISTS transcripts (
    usage_id INTEGER PRIMARY KEY REFERENCES usage (id),
    request TEXT NOT NULL,
    response TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS switches (
    scope TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL,
    by TEXT NOT NULL,
    ts REAL NOT NULL
);
"""

CLASS_SCOPE = "*"
"""The ``switches`` scope that stands for the whole class (others are group names)."""


@dataclass(frozen=True)
class Entry:
    """One forwarded request, as it is written to the ledger."""

    user: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    status: int
    day: str
    session: str | None = None
    estimated: bool = False
    ts: float = 0.0


class Ledger:
    """Thread-safe access to the ledger file (one connection, serialised by a lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across process crashes
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- writing ----------------------------------------------------------------------------
    def record(self, entry: Entry, transcript: tuple[str, str] | None = None) -> int:
        """Append one request (and its transcript when given); returns the row id."""
        row = (
            entry.user,
            entry.ts or time.time(),
            entry.day,
            entry.model,
            entry.prompt_tokens,
            entry.completion_tokens,
            entry.cost,
            entry.session,
            entry.status,
            int(entry.estimated),
        )
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO usage (user, ts, day, model, prompt_tokens, completion_tokens, "
                "cost, session, status, estimated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            row_id = int(cursor.lastrowid or 0)
            if transcript is not None:
                self._db.execute(
                    "INSERT INTO transcripts (usage_id, request, response) VALUES (?, ?, ?)",
                    (row_id, *transcript),
                )
            return row_id

    def set_switch(self, scope: str, enabled: bool, by: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO switches (scope, enabled, by, ts) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (scope) DO UPDATE SET enabled=excluded.enabled, by=excluded.by, "
                "ts=excluded.ts",
                (scope, int(enabled), by, time.time()),
            )

    # -- reading ----------------------------------------------------------------------------
    def switches(self) -> dict[str, bool]:
        """``{scope: enabled}`` for every switch an instructor has flipped."""
        return {scope: bool(on) for scope, on in self._all("SELECT scope, enabled FROM switches")}

    def tokens(self, user: str, day: str | None = None) -> int:
        """Tokens ``user`` used on quota day ``day`` (all days when ``None``)."""
        sql = "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM usage WHERE user=?"
        args: tuple[Any, ...] = (user,)
        if day is not None:
            sql, args = sql + " AND day=?", (user, day)
        return int(self._all(sql, args)[0][0])

    def count(self) -> int:
        return int(self._all("SELECT COUNT(*) FROM usage")[0][0])

    def per_student(self) -> list[dict[str, Any]]:
        """Per user: requests, agent sessions (those the client named), prompt/completion/total
        tokens, cost, last use (epoch s)."""
        rows = self._all(
            "SELECT user, COUNT(*), COUNT(DISTINCT session), SUM(prompt_tokens), "
            "SUM(completion_tokens), SUM(cost), MAX(ts), MAX(estimated) FROM usage "
            "GROUP BY user ORDER BY user"
        )
        return [
            {
                "user": user,
                "requests": requests,
                "sessions": sessions,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "cost": round(cost, 6),
                "last_use": last,
                "estimated": bool(estimated),
            }
            for user, requests, sessions, prompt, completion, cost, last, estimated in rows
        ]

    def per_day(self) -> list[dict[str, Any]]:
        """Per quota day: requests, tokens and cost of the whole class, oldest first."""
        rows = self._all(
            "SELECT day, COUNT(*), SUM(prompt_tokens + completion_tokens), SUM(cost) "
            "FROM usage GROUP BY day ORDER BY day"
        )
        return [
            {"day": day, "requests": n, "tokens": tokens, "cost": round(cost, 6)}
            for day, n, tokens, cost in rows
        ]

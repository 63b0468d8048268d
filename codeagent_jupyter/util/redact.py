"""Redaction: strings that look like credentials never reach a session notebook.

Applied by the recorder to every event before it is stored, so neither the cells nor the
event log nor the transcript can carry an API key, a token or a password in a URL.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"
_SECRET_KEY = re.compile(r"key|token|secret|passw|authoriz|credential|cookie", re.I)
_SECRET_VALUE = [  # (cheap substring that must be present, pattern, replacement)
    ("sk-", re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    ("_", re.compile(r"\b(?:ghp|gho|ghs|hf)_[A-Za-z0-9_]{16,}"), REDACTED),
    ("xox", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), REDACTED),
    ("AKIA", re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    ("earer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"), "Bearer " + REDACTED),
    ("@", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"), REDACTED + "@"),
    (
        "=",
        re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token|secret)=)[^&\s#]+"),
        r"\1***",
    ),
]


def scrub(value: Any, key: str = "") -> Any:
    """Return ``value`` with credential-looking strings replaced (keys named like secrets too)."""
    if key.startswith("image/"):
        return value  # base64 pixels, never a credential
    if isinstance(value, str):
        if value and _SECRET_KEY.search(key):
            return REDACTED
        for marker, pattern, repl in _SECRET_VALUE:
            if marker in value:
                value = pattern.sub(repl, value)
        return value
    if isinstance(value, dict):
        return {k: scrub(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, key) for v in value]
    return value

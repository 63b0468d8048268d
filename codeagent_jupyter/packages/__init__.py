"""Packages for a sandbox: the administrator's policy, pip run outside the sandbox to
resolve wheels (never a source distribution), httpx to fetch them into a shared cache, and
pypa's ``installer`` to unpack them into its read-only overlay folder."""

from .installer import Installer, Plan, Wheel
from .pip import PackageError
from .policy import PackagePolicy, parse_request

__all__ = ["Installer", "PackageError", "PackagePolicy", "Plan", "Wheel", "parse_request"]

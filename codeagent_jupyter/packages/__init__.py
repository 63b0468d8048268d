"""Packages for a sandbox: the administrator's policy, and pip run outside the sandbox to
fetch wheels (never a source distribution) into its read-only overlay folder."""

from .installer import Installer, Plan, Wheel
from .pip import PackageError
from .policy import PackagePolicy, parse_request

__all__ = ["Installer", "PackageError", "PackagePolicy", "Plan", "Wheel", "parse_request"]

"""The plan of an install, walked one level at a time so that pip never meets a direct URL.

pip resolves a wheel's dependencies itself, and a ``Requires-Dist: x @ https://…/x.tar.gz``
(or ``@ file:///…``) in a wheel's METADATA makes it *prepare* that requirement: it runs the
sdist's or source tree's build backend, with the server's privileges, ``--only-binary``
notwithstanding, before any of our code sees the plan. So pip is only ever asked for
wheels by name (``--no-deps``): each round it picks a wheel for every requirement known so
far, and this module reads the dependencies of the picked wheels from the metadata pip
reports (the index's PEP 658 file, or the wheel's own), refuses a direct-URL one in one
line naming it, checks each picked package against the policy, and asks again with the
dependencies added, until the picks stop changing. Nothing of a refused wheel is built,
fetched by us or kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..errors import ToolError

MAX_ROUNDS = 12
"""Rounds of picks before a plan whose dependencies do not settle is refused."""

Picker = Callable[[list[str]], Any]
"""``await pick(requirements)`` → (pip's report entries, the marker environment)."""


def direct_url_refusal(name: str, version: str, requires: Iterable[str]) -> str | None:
    """Why the wheel ``name version`` is refused when its METADATA names a requirement by
    URL (or cannot be read), else None. Every ``Requires-Dist`` counts, whatever its
    marker: nothing with a direct URL comes near pip."""
    for text in requires:
        try:
            requirement = Requirement(str(text))
        except InvalidRequirement:
            return (
                f"{name} {version} has a dependency that is not a requirement: {str(text)[:120]!r}"
            )
        if requirement.url:
            return (
                f"{name} {version} names {requirement.name} by direct URL "
                f"({requirement.url[:160]}); only wheels from this server's package sources "
                "are installed, and nothing is ever built"
            )
    return None


def dependencies(
    entry: Mapping[str, Any], environment: Mapping[str, str]
) -> tuple[str, str, list[Requirement]]:
    """The name, version and dependencies (those whose markers hold here, markers
    dropped) of one report entry; ``ToolError`` for a direct-URL one."""
    meta = entry.get("metadata", {}) or {}
    name, version = canonicalize_name(str(meta.get("name", ""))), str(meta.get("version", ""))
    requires = [str(r) for r in meta.get("requires_dist") or []]
    refusal = direct_url_refusal(name, version, requires)
    if refusal is not None:
        raise ToolError(f"install_packages: {refusal}")
    extras = [str(e) for e in entry.get("requested_extras") or []] or [""]
    needed = []
    for text in requires:
        requirement = Requirement(text)
        if requirement.marker is not None:
            try:
                holds = any(
                    requirement.marker.evaluate({**environment, "extra": extra}) for extra in extras
                )
            except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
                holds = True  # pip decides; it is only a name and a version
            if not holds:
                continue
            requirement.marker = None
        needed.append(requirement)
    return name, version, needed


async def walk(
    requested: list[str], pick: Picker, allowed: Callable[[str], None]
) -> list[dict[str, Any]]:
    """pip's report entries for ``requested`` and everything they need, each picked by
    ``pick`` from names and versions only; ``allowed(name)`` raises for a package the
    plan would install that the policy refuses (a dependency the kernel's environment
    already satisfies is not installed, so it is not asked about)."""
    extra: list[str] = []
    for _ in range(MAX_ROUNDS):
        entries, environment = await pick(requested + extra)
        needed: list[str] = []
        for entry in entries:
            name, _version, requirements = dependencies(entry, environment)
            allowed(name)
            needed += [str(requirement) for requirement in requirements]
        needed = sorted(set(needed) - set(requested))
        if needed == extra:
            return entries
        extra = needed
    raise ToolError(
        f"install_packages: the dependencies of {', '.join(requested)[:200]} did not settle "
        f"after {MAX_ROUNDS} rounds; name the versions you want"
    )

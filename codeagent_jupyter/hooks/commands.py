"""What a ``run_cell`` cell would run outside Python: its shell commands and pip imports.

A cell reaches the shell in many spellings: ``!cmd``, ``out = !cmd``, ``%sx cmd``,
``%%bash``, ``get_ipython().system(...)``, ``os.system``, ``subprocess.run([...])``,
``%time !cmd``, a one-line ``pip install x`` (IPython's automagic). Rather than one regex
per spelling, the cell is first turned into plain Python by IPython's own input
transformers (what the kernel itself runs), then the syntax tree is walked for calls that
start processes or magics. Each such call becomes a ``Command``: the text of the command
line as far as it can be read from the code (string constants, list items,
``sys.executable`` as ``python``), which the policy then matches against its rules.

This reads code, it does not run it: a command built at run time from data, ``eval`` or
``getattr`` tricks are not seen. That is why the policy is a filter and the sandbox (no
network) the boundary.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from IPython.core.inputtransformer2 import TransformerManager

SHELL_CALLS = frozenset(
    {
        # IPython (``get_ipython().system``/``getoutput`` are what ``!`` and ``!!`` become)
        *("system", "system_raw", "system_piped", "getoutput", "getstatusoutput"),
        # subprocess, os, asyncio, pty: names that mean "start a process" whoever owns them
        *("Popen", "check_call", "check_output", "popen", "posix_spawn", "posix_spawnp"),
        *("create_subprocess_exec", "create_subprocess_shell"),
        *("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe"),
        *("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp"),
        "spawnvpe",
    }
)
"""Attribute names whose call starts a command, on any object (``os.system``, ``ip.system``)."""
GENERIC_CALLS = frozenset({"run", "call", "spawn"})
"""``subprocess.run``, ``pty.spawn``, … under any alias (their words still have to match a
rule, so ``model.run(x)`` passes)."""
INSTALLER_MAGICS = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
SHELL_MAGICS = frozenset({"sx", "system", "sc", "bash", "sh", "zsh", "script", "perl", "ruby"})
PYTHON_MAGICS = frozenset({"time", "timeit", "prun", "capture", "debug", "pypy", "python"})
"""Magics whose line or body is itself cell code (checked the same way, recursively)."""
DATA_MAGICS = frozenset({"writefile", "file", "html", "markdown", "latex", "svg", "javascript"})
"""Cell magics whose body is content, not code to run (``%%writefile`` writes a file)."""
AUTOMAGIC = INSTALLER_MAGICS | {"sx", "sc"}
"""Line magics a one-line cell runs without ``%`` (IPython's automagic is on by default)."""
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Command:
    """One thing the cell would run: ``kind`` ``shell`` (a command line) or ``install``
    (a package manager magic, or pip driven from Python), and its text."""

    kind: str
    text: str


def cell_commands(code: str) -> list[Command] | None:
    """The cell's commands, or ``None`` when it is not valid IPython (then it cannot run)."""
    return _commands(code, 0)


def _commands(code: str, depth: int) -> list[Command] | None:
    if depth > _MAX_DEPTH:
        return [Command("shell", code)]  # nested magics this deep: check all of it
    magic = _automagic(code)
    if magic is not None:
        return _magic(magic[0], magic[1], "", depth)
    try:
        tree = ast.parse(TransformerManager().transform_cell(code))
    except (SyntaxError, ValueError):
        return None
    return list(_Walker(depth).commands(tree))


def _automagic(code: str) -> tuple[str, str] | None:
    """``pip install x`` alone in a cell: not Python, so IPython runs it as ``%pip``."""
    lines = [line for line in code.splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    name, _, rest = lines[0].strip().partition(" ")
    if name not in AUTOMAGIC:
        return None
    try:
        ast.parse(lines[0].strip())
    except SyntaxError:
        return name, rest
    return None  # ``pip = 1``, ``pip(x)``: Python after all


def _magic(name: str, line: str, body: str, depth: int) -> list[Command]:
    """The commands of ``%name line`` (``body`` empty) or ``%%name line\\nbody``."""
    name = name.lstrip("%")
    if name in INSTALLER_MAGICS:
        return [Command("install", f"%{name} {line}".strip())]
    if name in SHELL_MAGICS:
        return [Command("shell", f"{line}\n{body}".strip())]
    if name in PYTHON_MAGICS:
        inner = _commands(body or line, depth + 1)
        return [Command("shell", body or line)] if inner is None else inner
    if name in DATA_MAGICS:
        return []
    # Any other magic (``%load URL``, ``%run``, one of a plugin): its text, as a command.
    return [Command("shell", f"{line}\n{body}".strip())] if (line or body) else []


class _Walker:
    """Finds process-starting calls in a tree, following ``import x as y`` aliases."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.aliases: dict[str, str] = {}
        """Local name -> what it stands for: ``sp`` -> ``subprocess``, ``run`` ->
        ``subprocess.run``."""

    def commands(self, tree: ast.Module) -> Iterator[Command]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name
                    if _is_pip(alias.name):
                        yield Command("install", f"import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if _is_pip(node.module):
                    yield Command("install", f"from {node.module} import …")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                yield from self._call(node)

    def _call(self, node: ast.Call) -> Iterator[Command]:
        name = self._qualified(node.func)
        last = name.rsplit(".", 1)[-1]
        args = [*node.args, *(k.value for k in node.keywords)]
        if last == "run_line_magic" and node.args:
            magic, line = _const(node.args[0]), " ".join(_words(node.args[1:]))
            yield from _magic(magic or "", line, "", self.depth)
        elif last == "run_cell_magic" and node.args:
            words = [_const(a) or "" for a in node.args[:3]]
            magic, line, body = (*words, "", "")[:3]
            yield from _magic(magic, line, body, self.depth)
        elif last == "magic" and node.args:  # the old ``get_ipython().magic("sx ls")``
            magic, _, line = " ".join(_words(node.args)).lstrip("%").partition(" ")
            yield from _magic(magic, line, "", self.depth)
        elif last in SHELL_CALLS or last in GENERIC_CALLS:
            yield Command("shell", " ".join(_words(args)))
        elif last in ("run_module", "import_module", "__import__") and args:
            module = _const(args[0]) or ""
            if _is_pip(module):
                yield Command("install", f"{last}({module!r})")

    def _qualified(self, node: ast.expr) -> str:
        """``sp.run`` -> ``subprocess.run`` (through the aliases); ``""`` if not a name."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self._qualified(node.value)
            return f"{base}.{node.attr}" if base else node.attr
        if isinstance(node, ast.Call):  # ``get_ipython().system``: the call's own name
            return self._qualified(node.func) + "()"
        return ""


def _is_pip(module: str) -> bool:
    return module == "pip" or module.startswith("pip.")


def _const(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _words(nodes: list[ast.expr]) -> list[str]:
    """The readable words of arguments, in source order: string constants (f-strings with
    ``{}`` for what is computed), list items, and ``sys.executable`` as ``python``."""
    words: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            words.append("".join(_const(v) or "{}" for v in node.values))
        elif isinstance(node, ast.Attribute) and node.attr == "executable":
            words.append("python")
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            words += _words(list(node.elts))
        elif isinstance(node, ast.BinOp):
            words.append("".join(_words([node.left, node.right])))
        elif isinstance(node, ast.Starred):
            words += _words([node.value])
        elif isinstance(node, ast.Call):  # ``" ".join([...])``, ``shlex.split("...")``
            words += _words([*node.args, *(k.value for k in node.keywords)])
            if isinstance(node.func, ast.Attribute):
                words += _words([node.func.value])
    return words

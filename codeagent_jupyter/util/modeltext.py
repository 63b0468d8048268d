"""A cell's text as the model should read it: library noise trimmed, host paths out.

What the model is shown of a cell is a budget (``AgentConfig.result_chars``): a pandas
``FileNotFoundError`` that spends it on sixty lines of library frames, or a warning printed
once per row, crowds out what the model needs. Here, for the model's text only (the
recording keeps every output as it was):

- a traceback keeps the cell's own frames (and the workspace's scripts') and only the last
  library frame, with a line saying how many were left out; an IPython traceback and a
  plain Python one (``python script.py`` from ``run_command``) alike; compiled (Cython)
  frames, which show only "Could not get source", are left out as well;
- the environment's paths in frames and warnings become ``<env>/…``: the host's virtualenv
  layout is noise to the model and nothing it could use inside the sandbox; the workspace's
  own paths are shown relative to it (``tools/calc.py:2``);
- each distinct warning appears once, with a count (``[12 times]``), its source line dropped.
"""

from __future__ import annotations

import re

_ENV_PATH = re.compile(r"""(?:~|/)[^\s:'"(),]*?/(?:site|dist)-packages/""")
_STDLIB_PATH = re.compile(r"""/[^\s:'"(),]*?/lib/(python3\.\d+)/""")
_IPY_FRAME = re.compile(r"^(?:File (?P<path>.+?):\d+(?:, in .*)?|Cell In\[\d+\], line \d+.*)$")
_PY_FRAME = re.compile(r'^(?P<indent>\s+)File "(?P<path>[^"]+)", line \d+(?:, in .*)?$')
_COMPILED = (".pyx", ".pxd", ".pxi", ".so", ".pyd")
_NO_SOURCE = "Could not get source, probably due dynamically evaluated source code."
_WARNING = re.compile(
    r"^(?P<where>\S[^\n]*?:\d+): (?P<category>[A-Z]\w*(?:Warning|Deprecated)\w*): (?P<msg>.*)$"
)


def env_paths(text: str) -> str:
    """Paths into an environment's packages as ``<env>/pkg/…``; the standard library's as
    ``<env>/python3.X/…``."""
    text = _ENV_PATH.sub("<env>/", text)
    return _STDLIB_PATH.sub(lambda m: f"<env>/{m.group(1)}/", text)


def _is_library(path: str) -> bool:
    return bool(
        "site-packages/" in path
        or "dist-packages/" in path
        or _STDLIB_PATH.search(path)
        or path.startswith("<frozen ")
    )


def _is_compiled(path: str, frame: list[str]) -> bool:
    """A Cython or extension frame: no Python source to show, only IPython's
    "Could not get source" line, which tells the model nothing."""
    return path.endswith(_COMPILED) or any(_NO_SOURCE in line for line in frame)


def _frames(lines: list[str]) -> list[tuple[int, int, str]]:
    """``(first, end, kind)`` of each traceback frame, in order; kind is ``own``,
    ``library`` or ``compiled``."""
    found: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        ipy, py = _IPY_FRAME.match(line), _PY_FRAME.match(line)
        if not ipy and not py:
            i += 1
            continue
        j = i + 1
        if ipy:
            while j < len(lines) and lines[j].strip() and not _IPY_FRAME.match(lines[j]):
                j += 1
            path = ipy.group("path") or ""
        else:
            assert py is not None
            deeper = len(py.group("indent")) + 1
            while j < len(lines) and lines[j][:deeper].isspace() and lines[j].strip():
                if _PY_FRAME.match(lines[j]):
                    break
                j += 1
            path = py.group("path")
        if _is_compiled(path, lines[i:j]):
            found.append((i, j, "compiled"))
        else:
            found.append((i, j, "library" if _is_library(path) else "own"))
        i = j
    return found


def _groups(lines: list[str], frames: list[tuple[int, int, str]]) -> list[list[int]]:
    """Frames (by index) in tracebacks: neighbours with only blank lines between them."""
    groups: list[list[int]] = []
    for k, (start, _, _) in enumerate(frames):
        previous_end = frames[k - 1][1] if k else -1
        if k and all(not line.strip() for line in lines[previous_end:start]):
            groups[-1].append(k)
        else:
            groups.append([k])
    return groups


def trim_tracebacks(text: str) -> str:
    """Keep each traceback's own frames and its last library frame, one line saying how many
    library frames were left out; compiled (Cython) frames are always left out."""
    if "File " not in text:
        return text
    lines = text.split("\n")
    frames = _frames(lines)
    dropped: dict[int, tuple[int, int]] = {}  # frame start -> (frame end, its group)
    counts: list[int] = []
    for group in _groups(lines, frames):
        library = [frames[k] for k in group if frames[k][2] == "library"]
        gone = library[:-1] + [frames[k] for k in group if frames[k][2] == "compiled"]
        dropped |= {f[0]: (f[1], len(counts)) for f in gone}
        counts.append(len(gone))
    if not dropped:
        return text
    out: list[str] = []
    said: set[int] = set()
    i = 0
    while i < len(lines):
        if i not in dropped:
            out.append(lines[i])
            i += 1
            continue
        header, group = lines[i], dropped[i][1]
        while i in dropped:
            i = dropped[i][0]
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j in dropped:
                i = j  # the blank lines between two frames left out
        if group in said:
            while i < len(lines) and not lines[i].strip() and out and not out[-1].strip():
                i += 1  # one blank line where the frames were, not two
            continue
        said.add(group)
        count = counts[group]
        indent = header[: len(header) - len(header.lstrip())]
        out.append(f"{indent}[… {count} library frame{'s' * (count > 1)} left out …]")
    return "\n".join(out)


def collapse_warnings(text: str) -> str:
    """Each distinct warning once, where it first appeared, with its count."""
    if "Warning: " not in text and "Deprecated" not in text:
        return text
    lines = text.split("\n")
    first: dict[tuple[str, str], int] = {}
    counts: dict[tuple[str, str], int] = {}
    keep: list[str | None] = []
    skip_source = False
    for line in lines:
        if skip_source:
            skip_source = False
            if line.startswith("  ") and line.strip():
                continue  # the source line Python prints under a warning
        match = _WARNING.match(line)
        if not match:
            keep.append(line)
            continue
        key = (match.group("category"), match.group("msg"))
        counts[key] = counts.get(key, 0) + 1
        skip_source = True
        if key in first:
            continue
        first[key] = len(keep)
        keep.append(f"{match.group('category')}: {match.group('msg')} ({match.group('where')})")
    for key, index in first.items():
        if counts[key] > 1:
            keep[index] = f"{keep[index]} [{counts[key]} times]"
    return "\n".join(line for line in keep if line is not None)


def clean_model_text(text: str, workspace: str | None = None) -> str:
    """``text`` with tracebacks trimmed, warnings collapsed, environment paths hidden and
    the ``workspace`` directory's paths made relative to it (in frames and warnings only:
    a path the cell printed is left as it is). The host's path of the workspace is nothing
    the model needs, and nobody else's business."""
    text = collapse_warnings(trim_tracebacks(text))
    inside = workspace.rstrip("/") + "/" if workspace else None
    env = "-packages/" in text or "/lib/python3." in text
    if not env and (inside is None or inside not in text):
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _IPY_FRAME.match(line) or _PY_FRAME.match(line) or "Warning: " in line:
            lines[i] = env_paths(line)
            if inside:
                lines[i] = lines[i].replace(inside, "")
    return "\n".join(lines)

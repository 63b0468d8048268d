"""File search: the one configuration file, among many, that sets a risky value."""

from __future__ import annotations

from pathlib import Path

from ._common import Fail, Script, answer_has_number, answer_has_words, checker, rng

CATEGORY = "file search"
TRAP = ""
PROMPT = """
Somewhere under project/ exactly one configuration file sets max_retries to a value above 5
(commented-out lines do not count). Which file is it (its path relative to project/), and
what value does it set?
"""
TARGET = "services/billing/conf/prod.ini"
DECOY = "services/search/conf/legacy.ini"


def _files() -> dict[str, str]:
    r = rng(2121)
    files: dict[str, str] = {}
    for service in ["billing", "search", "auth", "mailer", "reports", "gateway"]:
        for env in ["dev", "staging", "prod"]:
            retries = int(r.choice([2, 3, 5]))
            files[f"services/{service}/conf/{env}.ini"] = (
                f"[client]\ntimeout = {int(r.integers(5, 60))}\nmax_retries = {retries}\n"
            )
        files[f"services/{service}/main.py"] = "MAX_RETRIES_DOC = 'see conf/*.ini'\n"
        files[f"services/{service}/README.md"] = f"# {service}\nRetries are configured per env.\n"
    files[TARGET] = "[client]\ntimeout = 30\nmax_retries = 12\n"
    files[DECOY] = "[client]\n# max_retries = 50   (before the 2023 incident)\nmax_retries = 4\n"
    return files


def setup(workdir: Path) -> None:
    for rel, text in _files().items():
        path = workdir / "project" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@checker
def check(workdir: Path, answer: str) -> str:
    if TARGET not in answer.replace("\\", "/"):
        raise Fail(f"the answer does not give the file {TARGET}")
    answer_has_words(answer, [TARGET], "the file")
    answer_has_number(answer, 12, "the value")
    return f"{TARGET} sets 12"


SEARCH = """\
import re
from pathlib import Path
hits = []
for path in Path("project").rglob("*"):
    if path.is_file():
        for line in path.read_text().splitlines():
            m = re.match(r"\\s*max_retries\\s*=\\s*(\\d+)", line)
            if m and int(m.group(1)) > 5:
                hits.append((str(path.relative_to("project")), int(m.group(1))))
print(hits)
"""
SOLVED = Script([SEARCH], f"{TARGET} sets max_retries = 12.")
WRONG = Script(
    [SEARCH.replace('r"\\s*max_retries', 'r".*max_retries')],
    f"{DECOY} sets max_retries = 50.",
)

"""Write ``recordings/<task>.solved.ipynb`` and ``<task>.wrong.ipynb`` for every task.

The model turns come from each task module's ``SOLVED`` and ``WRONG`` scripts, written by
hand (the notebooks say so in their metadata); everything else — outputs, tracebacks, files
— is real (the scratch folder is shown as ``.``, the environment's folders as ``<env>`` and
``<python>``), produced by running those turns through the agent loop in a sandbox kernel. The
recordings prove each checker both ways offline (``agent_eval.py --model recorded``).

    python bench/tasks/make_recordings.py [PATTERN]     # rewrites the matching recordings
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.tasks import RECORDINGS, Task, load_tasks
from bench.tasks._common import Script
from bench.tasks._runner import run_agent
from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.models.replay import ReplayModel
from codeagent_jupyter.sandbox import Sandbox

SCRIPTED = "hand-scripted turns (no model)"


def turns(task: Task, variant: str, script: Script) -> list[dict]:
    """The script as assistant messages: one ``run_cell`` per cell, then the answer."""
    notes = list(script.notes) or [""] * len(script.cells)
    out = []
    for n, (code, note) in enumerate(zip(script.cells, notes, strict=True), 1):
        call = {
            "id": f"call_{task.name}_{variant}_{n}",
            "type": "function",
            "function": {"name": "run_cell", "arguments": json.dumps({"code": code})},
        }
        out.append({"role": "assistant", "content": note or None, "tool_calls": [call]})
    return [*out, {"role": "assistant", "content": script.answer}]


async def record(task: Task, variant: str) -> str:
    script = task.solved if variant == "solved" else task.wrong
    out = task.recording(variant)
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        task.setup(workdir)
        model = ReplayModel(turns(task, variant, script), name=SCRIPTED, base_url="")
        limits = replace(SandboxLimits(cell_timeout=60), **task.limits)
        async with Sandbox(workdir=workdir, limits=limits) as sandbox:
            outcome = await run_agent(task, model, sandbox, workdir, out)
        # The scratch folder's name is an accident of this machine: record it as "."; the
        # environment's and Python's own folders (library frames in tracebacks) likewise.
        text = out.read_text().replace(json.dumps(str(workdir))[1:-1], ".")
        for folder, shown in ((sys.prefix, "<env>"), (sys.base_prefix, "<python>")):
            text = text.replace(json.dumps(folder)[1:-1], shown)
        nb = json.loads(text)
        nb["metadata"]["codeagent"]["scripted"] = (
            f"The model turns of this session were written by hand ({variant} variant of "
            f"bench/tasks, task {task.name}); outputs are real."
        )
        out.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    expected = variant == "solved"
    mark = "ok" if outcome.passed == expected else "UNEXPECTED"
    return f"{mark:<10} {task.name}.{variant}: passed={outcome.passed} ({outcome.reason})"


async def main(pattern: str) -> int:
    RECORDINGS.mkdir(exist_ok=True)
    gate = asyncio.Semaphore(2)

    async def one(task: Task, variant: str) -> str:
        async with gate:
            line = await record(task, variant)
            print(line, flush=True)
            return line

    jobs = [one(t, v) for t in load_tasks(pattern) for v in ("solved", "wrong")]
    lines = await asyncio.gather(*jobs)
    return 1 if any(line.startswith("UNEXPECTED") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "*")))

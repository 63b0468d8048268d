"""A session's fetches replay offline: the real CLI, real sandboxes and brokers, a real HTTP
server on 127.0.0.2 that is stopped before the replay, the scripted model for the resume.

Recorded under ``--network policy``: pandas and urllib fetch a CSV (its body goes into the
workspace's content store) and a body over ``store_body_mb`` (recorded as not stored).
Then, with the server gone: ``replay --model recorded`` gives the first cell's output byte
for byte and says the second's body is not in the recording; ``resume`` reruns the cells
from the recording; a store someone edited is refused rather than served.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from codeagent_jupyter.sandbox import bubblewrap
from tests.cli.test_cli import codeagent
from tests.egress.origin import files, origin
from tests.scripted_model import text, tool_calls

CSV = "city,sales\nOslo,10\nLima,32\nQuito,7\n"


def _cells(notebook: Path) -> list[Any]:
    nb = nbformat.read(notebook, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def _outputs(cell: Any) -> str:
    return json.dumps(cell.get("outputs", []), sort_keys=True)


def test_a_recorded_fetch_replays_offline_byte_identical(
    scripted_model: Any, tmp_path: Path
) -> None:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for --network policy")
    www = files(tmp_path / "www", big_mib=1)
    (www / "x.csv").write_text(CSV)
    ws, session = tmp_path / "ws", tmp_path / "s.ipynb"
    ws.mkdir()
    with origin(www) as port:
        policy = tmp_path / "egress.json"
        policy.write_text(
            json.dumps(
                {
                    "default": "deny",
                    "ports": [port],
                    "allow_ranges": ["127.0.0.2/32"],
                    "hosts": {"data.test": "127.0.0.2"},
                    "store_body_mb": 0.5,
                }
            )
        )
        url = f"http://data.test:{port}"
        fetch = (
            "import hashlib, urllib.request, pandas as pd\n"
            f"df = pd.read_csv('{url}/x.csv')\n"
            "print(df.to_string())\n"
            f"raw = urllib.request.urlopen('{url}/x.csv').read()\n"
            "print(hashlib.sha256(raw).hexdigest(), len(raw))\n"
        )
        big = (
            "import urllib.error\n"
            "try:\n"
            f"    print(len(urllib.request.urlopen('{url}/big.bin').read()))\n"
            "except urllib.error.HTTPError as e:\n"
            "    print(e.code, e.read().decode().strip())\n"
        )
        steps = [tool_calls(("run_cell", {"code": fetch})), tool_calls(("run_cell", {"code": big}))]
        scripted_model.set_script([*steps, text("done")])
        result = codeagent(
            "run", "fetch", "--model", "m", "--base-url", scripted_model.url,
            "--workdir", str(ws), "--out", str(session), "--network", "policy",
            "--egress-policy", str(policy), "--allow-domain", "data.test", timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    recorded = _cells(session)
    assert "Quito" in _outputs(recorded[0]) and "1048576" in _outputs(recorded[1])
    logged = nbformat.read(session, as_version=4).metadata["codeagent"]["events"]
    stored = [e["stored"] for e in logged if e["type"] == "network_request"]
    assert stored == [True, True, False]  # the big body is over store_body_mb
    [kept] = list((ws / ".codeagent" / "fetched").iterdir())  # one body, by its digest

    # The server is gone: the replay reaches no network, only the recording.
    replayed = tmp_path / "r.ipynb"
    result = codeagent(
        "replay", str(session), "--model", "recorded", "--workdir", str(ws),
        "--out", str(replayed), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    again = _cells(replayed)
    assert _outputs(again[0]) == _outputs(recorded[0])  # byte-identical
    missing = f"not in the recording: GET {url}/big.bin (its body was not stored)"
    assert f"502 codeagent egress broker: 502 {missing}" in _outputs(again[1])
    assert "codeagent: network: 2 request(s) served from the recording" in result.stderr
    assert f"codeagent: network: {missing}" in result.stderr
    checked = codeagent("replay", str(session), "--workdir", str(ws), timeout=300)
    assert "(step 1): match" in checked.stdout.splitlines()[0], checked.stdout + checked.stderr

    # Resume: the cells run again from the recording, then the new run goes on.
    fork = tmp_path / "fork.ipynb"
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print(len(raw), df['sales'].sum())"})), text("ok")]
    )
    result = codeagent(
        "resume", str(session), "check", "--model", "m", "--base-url", scripted_model.url,
        "--workdir", str(ws), "--out", str(fork), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "codeagent: network: 2 request(s) served from the recording" in result.stderr
    assert f"{len(CSV)} 49" in _outputs(_cells(fork)[-1])

    # A store someone edited: refused, never served.
    kept.write_text("city,sales\nEvil,1000000\n")
    result = codeagent(
        "replay", str(session), "--model", "recorded", "--workdir", str(ws),
        "--out", str(tmp_path / "r2.ipynb"), timeout=300,
    )  # fmt: skip
    assert "does not match its sha256" in result.stderr
    assert "Evil" not in _outputs(_cells(tmp_path / "r2.ipynb")[0])

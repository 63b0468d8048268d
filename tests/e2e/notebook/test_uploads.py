"""``POST /codeagent/api/uploads`` over real HTTP: caps, checksums, auth, ownership of ids;
and the way back: a sandbox-made pickle is never loaded in the user's kernel."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

import codeagent_jupyter
from codeagent_jupyter.server.uploads import MAX_PENDING
from codeagent_jupyter.widget import render
from codeagent_jupyter.widget.client import AgentClient, ClientError, ServerInfo
from codeagent_jupyter.widget.transfer import PickleRefused, refuse_pickle, serialize

CAP_MB = 0.05


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _fails(coro: Any) -> ClientError:
    try:
        await coro
    except ClientError as e:
        return e
    raise AssertionError("the server accepted it")


@pytest.mark.agent_settings(max_upload_mb=CAP_MB)
def test_upload_route_refuses_bad_input(
    run: Any, client: AgentClient, server_info: ServerInfo
) -> None:
    async def scenario() -> None:
        data = pickle.dumps(list(range(100)), protocol=5)
        bad = [
            (client.upload("1x", "pickle", data, _sha(data)), 400, "Python identifier"),
            (client.upload("x", "json", data, _sha(data)), 400, "format must be one of"),
            (client.upload("x", "pickle", data, "abc"), 400, "64 hex digits"),
            (client.upload("x", "pickle", data, _sha(b"other")), 400, "does not match"),
        ]
        big = os.urandom(int(CAP_MB * 1024 * 1024) + 1)
        bad.append((client.upload("big", "pickle", big, _sha(big)), 413, "upload limit of 0.05"))
        nobody = AgentClient(ServerInfo(server_info.url, ""), timeout=30)
        bad.append((nobody.upload("x", "pickle", data, _sha(data)), 403, ""))
        for call, status, words in bad:
            error = await _fails(call)
            assert error.status == status and words in str(error), str(error)
            assert "\n" not in str(error) and "Traceback" not in str(error)

        sent = await client.upload("x", "pickle", data, _sha(data))
        assert sent["bytes"] == len(data) and re.fullmatch(r"[0-9a-f]{32}", sent["id"])
        unknown = await _fails(client.start("go", uploads=["0" * 32]))
        assert unknown.status == 404 and "no upload" in str(unknown)
        assert await client.sessions() == []
        for _ in range(MAX_PENDING - 1):  # unclaimed uploads are bounded per user
            await client.upload("x", "pickle", data, _sha(data))
        full = await _fails(client.upload("x", "pickle", data, _sha(data)))
        assert full.status == 429 and "already waiting" in str(full)

    run(scenario())


def test_a_sandbox_pickle_is_never_loaded_in_the_users_kernel(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps(Exploit(), protocol=5)
    with pytest.raises(PickleRefused, match="refusing a pickle"):
        refuse_pickle(payload)
    refuse_pickle(b"PAR1....")  # Parquet and text are data, not code
    html = render.output_html(
        {
            "output_type": "display_data",
            "data": {"application/x-python-pickle": payload.hex(), "text/plain": "<obj>"},
        }
    )
    assert "not loaded here" in html and not marker.exists()

    # The user-kernel side never deserializes: no pickle/dill/joblib loading anywhere in it.
    widget = Path(codeagent_jupyter.__file__).parent / "widget"
    loaders = re.compile(r"pickle\.loads?\(|dill\.|joblib\.load|cloudpickle|Unpickler")
    for source in widget.glob("*.py"):
        assert not loaders.search(source.read_text()), source.name


def test_serialize_uses_parquet_for_frames() -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"a": [1, 2, 3]})
    payload = serialize("df", frame)
    assert payload.format == "parquet" and payload.data[:4] == b"PAR1"
    assert payload.described["shape"] == [3, 1]
    assert serialize("n", {"k": 1}).format == "pickle"

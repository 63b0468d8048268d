"""The import names an install result states, read from a wheel as hostile input."""

from __future__ import annotations

import zipfile
from pathlib import Path

from codeagent_jupyter.packages.import_names import MAX_NAMES, import_names
from tests.packages.index import make_wheel


def _with_top_level(tmp_path: Path, text: str, *, size: int = 0) -> Path:
    wheel = make_wheel(tmp_path, "odd-dist", "1.0", module="realmod")
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("odd_dist-1.0.dist-info/top_level.txt", text + "x" * size)
    return wheel


def test_record_names_the_package_folder_not_the_distribution(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "sentronic-sdx", "1.0", module="sdxio")
    assert import_names(wheel) == ["sdxio"]


def test_record_names_single_file_modules(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "tool", "1.0", extra_files={"helper.py": "x = 1\n"})
    assert import_names(wheel) == ["helper", "tool"]


def test_top_level_txt_wins_and_only_identifiers_are_kept(tmp_path: Path) -> None:
    hostile = "realmod\n../../etc\nos; rm -rf ~\nclass\n\u0430pi\n_private\n" + "y" * 500
    assert import_names(_with_top_level(tmp_path, hostile)) == ["realmod", "_private"]


def test_an_oversized_top_level_txt_is_not_read_the_record_is(tmp_path: Path) -> None:
    assert import_names(_with_top_level(tmp_path, "bogus\n", size=100_000)) == ["realmod"]


def test_many_names_are_counted_not_listed(tmp_path: Path) -> None:
    many = "\n".join(f"m{i:02d}" for i in range(40))
    names = import_names(_with_top_level(tmp_path, many))
    assert names[:MAX_NAMES] == [f"m{i:02d}" for i in range(MAX_NAMES)]
    assert names[MAX_NAMES:] == [f"(+{40 - MAX_NAMES} more)"]


def test_not_a_wheel_says_nothing(tmp_path: Path) -> None:
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"PK\x03\x04 not really")
    assert import_names(junk) == []
    assert import_names(tmp_path / "missing.whl") == []

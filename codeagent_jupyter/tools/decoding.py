"""How ``read_file`` turns bytes into text, and says so.

A file that is not UTF-8 must not come back silently garbled (``Z�rich``): UTF-8 is tried
first (a BOM, UTF-8 or UTF-16, is honoured); otherwise cp1252 or the encoding
``charset-normalizer`` detects (``_detect`` says when which), and the result names it so
the model can pass ``encoding=…`` to its own ``open``/``read_csv`` too. A binary file is
described (size, type by its magic bytes), never dumped.
"""

from __future__ import annotations

import codecs
import unicodedata
from dataclasses import dataclass

from ..errors import ToolArgumentError

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8 with a byte-order mark"),
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (also .xlsx, .docx, .whl, .npz)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"PAR1", "Parquet file"),
    (b"ARROW1", "Arrow IPC / Feather file"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\x89HDF\r\n\x1a\n", "HDF5 file"),
    (b"\x93NUMPY", "NumPy .npy array"),
    (b"\xd0\xcf\x11\xe0", "OLE2 file (legacy .xls / .doc)"),
    (b"\x7fELF", "ELF executable"),
    (b"RIFF", "RIFF container (WAV / AVI / WebP)"),
    (b"\x80\x04\x95", "Python pickle"),
    (b"\x80\x05\x95", "Python pickle"),
)

_HOW = {
    "parquet": "pandas.read_parquet",
    "sqlite": "sqlite3",
    "zip": "zipfile or pandas.read_excel",
    "npy": "numpy.load",
    "image": "PIL.Image.open",
    "pickle": "only if you trust it, pickle.load",
}


@dataclass(frozen=True)
class Decoded:
    text: str
    note: str
    """Empty for plain UTF-8; otherwise one line saying how the bytes were decoded."""


def is_binary(data: bytes) -> bool:
    """NUL bytes in the first 8 KB, unless a UTF-16/32 byte-order mark explains them."""
    if any(data.startswith(bom) for bom, _, _ in _BOMS[1:]):
        return False
    return b"\x00" in data[:8192]


def decode(data: bytes, encoding: str | None = None) -> Decoded:
    """``data`` as text: in ``encoding`` when given (undecodable bytes replaced, counted),
    else UTF-8, else a BOM's encoding, else the encoding charset-normalizer detects."""
    if encoding:
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise ToolArgumentError(f"read_file: unknown encoding {encoding!r}") from None
        text = data.decode(codec, errors="replace")
        bad = text.count("\ufffd") - data.decode(codec, errors="ignore").count("\ufffd")
        extra = f"; {bad} undecodable bytes shown as \ufffd" if bad else ""
        return Decoded(text, f"[decoded as {codec}, as asked{extra}]")
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            return Decoded(data.decode(codec, errors="replace"), f"[decoded as {name}]")
    try:
        return Decoded(data.decode("utf-8"), "")
    except UnicodeDecodeError as e:
        where = e.start
    codec, why = _detect(data)
    text = data.decode(codec, errors="replace")
    return Decoded(
        text,
        f"[decoded as {codec}, not UTF-8 (byte {where} is not valid UTF-8; {why}); use "
        f"encoding={codec!r} in your own code too, or pass another encoding if this looks wrong]",
    )


def _detect(data: bytes) -> tuple[str, str]:
    """The encoding of non-UTF-8 ``data`` and why it was chosen.

    charset-normalizer alone misnames short Western-European text (``Zürich;4`` comes out
    as cp1250 or cp1006), the commonest non-UTF-8 file in data work. So: its guess wins
    when it reads as another script (Cyrillic, Greek, …) on enough evidence; otherwise
    cp1252 wins when it decodes the bytes as Latin text; otherwise its guess, or latin-1
    (which decodes any byte) when it has none.
    """
    from charset_normalizer import from_bytes

    best = from_bytes(data[:200_000]).best()
    guess = codecs.lookup(best.encoding).name if best is not None else None
    evidence = sum(1 for byte in data[:200_000] if byte >= 0x80)
    if guess is not None and evidence >= 64 and not _latin(str(best)):
        return guess, "detected by charset-normalizer"
    try:
        if _latin(data.decode("cp1252")):
            return "cp1252", "it decodes as Latin text in cp1252"
    except UnicodeDecodeError:
        pass
    if guess is not None:
        return guess, "detected by charset-normalizer"
    return "latin-1", "a guess: latin-1 decodes any byte"


def _latin(text: str) -> bool:
    """Every non-ASCII character is a Latin letter, a mark, a digit, punctuation or a
    symbol (no control characters, no letters of another script)."""
    for char in set(text):
        if char.isascii():
            continue
        kind = unicodedata.category(char)
        if kind[0] == "C":
            return False
        if kind[0] == "L" and not unicodedata.name(char, "").startswith("LATIN"):
            return False
    return True


def describe_binary(path: str, data: bytes, size: int) -> str:
    """One line: what the binary file seems to be, its size, and how to open it instead."""
    kind = next((name for magic, name in _MAGIC if data.startswith(magic)), "")
    if not kind and data[:4] == b"\x00\x00\x01\x00":
        kind = "ICO image"
    shown = kind or "binary data (type not recognised)"
    how = next((tool for key, tool in _HOW.items() if key in shown.lower()), "run_cell")
    if how != "run_cell":
        how = f"run_cell with {how}"
    return f"{path} is a binary file: {shown}, {size:,} bytes; not shown as text (use {how})"

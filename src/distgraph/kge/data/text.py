"""Delimited text files read a chunk of whole lines at a time, as bytes, with numpy.

Each chunk knows the number of its first line, so a bad line is named as soon as its chunk is read,
not after the whole file. Lines are split into fields as DGL-KE splits them (`line.strip().split(d)`:
blanks at a line's edges are not part of it, blank lines are skipped); CR LF counts as LF, a UTF-8
byte-order mark is dropped, and bytes that are not UTF-8 are refused with their line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...errors import InputError
from .names import gather

CHUNK_BYTES = 4 << 20  # read at once: a chunk's temporaries are about 15 times this
_EDGE_BLANKS = re.compile(rb"(?m)^[ \t]+|[ \t]+$")
_UNIT_SEP = b"\x1f"  # stands for a delimiter of several bytes


def check_file(path: Path, what: str) -> None:
    """One clear error for a missing file or a folder."""
    if path.is_dir():
        raise InputError(f"{what} file {path} is a directory; give the file inside it")
    if not path.is_file():
        raise InputError(f"{what} file {path} does not exist")


@dataclass
class Chunk:
    """Whole lines of a file, each ending in LF, and the number of the first."""

    path: Path
    text: bytes
    first_line: int

    def line_of(self, pos: int) -> tuple[int, str]:
        """The number and the text of the line holding byte `pos`."""
        start = self.text.rfind(b"\n", 0, pos) + 1
        end = self.text.find(b"\n", pos)
        return self.first_line + self.text.count(b"\n", 0, start), self.text[start:end].decode("utf-8", "replace")


def chunks(path: Path, what: str) -> Iterator[Chunk]:
    """The file as chunks of whole lines of about CHUNK_BYTES each (a longer line makes a longer chunk)."""
    check_file(path, what)
    line, size = 1, CHUNK_BYTES
    with open(path, "rb") as f:
        rest = f.read(3)
        rest = b"" if rest == b"\xef\xbb\xbf" else rest  # a UTF-8 byte-order mark is not text
        while True:
            block = f.read(size)
            data = rest + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            if block and not cut:
                rest = data  # no line ends in it yet
                continue
            text, rest = data[:cut], data[cut:]
            if text:
                if not text.endswith(b"\n"):
                    text += b"\n"
                if b"\r" in text:
                    text = text.replace(b"\r\n", b"\n")
                    text = text.replace(b"\r", b"\n") if b"\r" in text else text
                _check_utf8(path, text, line)
                yield Chunk(path, text, line)
                line += text.count(b"\n")
            if not block:
                return


def _check_utf8(path: Path, text: bytes, first_line: int) -> None:
    if text.isascii():
        return
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + text.count(b"\n", 0, exc.start)
        raise InputError(f"{path} line {line}: the bytes "
                         f"{text[exc.start:exc.start + 4]!r} are not UTF-8; convert the file to UTF-8 (e.g. iconv -f "
                         f"latin1 -t utf-8)") from None


@dataclass
class Fields:
    """The fields of a chunk's non-blank lines, `ncols` a line: byte spans [starts, ends) of `buf`,
    the chunk's bytes (a delimiter of several bytes stood for by `sep`), one row per line."""

    chunk: Chunk
    buf: np.ndarray
    sep: bytes
    starts: np.ndarray  # (lines, ncols)
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, row: int) -> int:
        """The number of the line of row `row`."""
        return self.chunk.line_of(int(self.starts[row, 0]))[0]

    def text(self, row: int, col: int) -> str:
        """One field, as text."""
        return bytes(self.buf[self.starts[row, col]:self.ends[row, col]]).decode("utf-8", "replace")


def split(chunk: Chunk, delimiter: str, ncols: int, what: str) -> Fields:
    """The chunk's lines split at `delimiter`, each into exactly `ncols` fields; the first line with
    another count is an error naming it."""
    sep = delimiter.encode()
    if len(sep) > 1:
        if _UNIT_SEP in chunk.text:
            raise InputError(f"{chunk.path} holds the byte 0x1f, which stands for the delimiter {delimiter!r} here; "
                             f"use a one-character --delimiter")
        chunk, sep = replace(chunk, text=chunk.text.replace(sep, _UNIT_SEP)), _UNIT_SEP
    buf, seps, newline = _separators(chunk.text, sep)
    line_ends = seps[ncols - 1::ncols]
    plain = len(seps) % ncols == 0 and newline[ncols - 1::ncols].all() and np.count_nonzero(newline) == len(line_ends)
    if plain:  # every line has ncols fields: are there blanks at a line's edge (a trailing TAB)?
        edges = buf[np.concatenate([line_ends[:-1] + 1, line_ends - 1, [0]])]
        plain = not ((edges == 32) | (edges == 9)).any()
    if not plain:  # strip blanks at lines' edges as DGL-KE does, then drop blank lines
        chunk = replace(chunk, text=_EDGE_BLANKS.sub(b"", chunk.text))
        buf, seps, newline = _separators(chunk.text, sep)
    starts = np.empty_like(seps)
    starts[:1] = 0
    starts[1:] = seps[:-1] + 1
    if not plain:
        seps, starts = _check_lines(chunk, seps, starts, newline, ncols, what, delimiter)
    return Fields(chunk, buf, sep, starts.reshape(-1, ncols), seps.reshape(-1, ncols))


def _check_lines(chunk: Chunk, seps: np.ndarray, starts: np.ndarray, newline: np.ndarray, ncols: int, what: str,
                 delimiter: str) -> tuple[np.ndarray, np.ndarray]:
    """The field ends and starts less those of blank lines; the first line without `ncols` fields
    is an error naming it."""
    blank = newline & (starts == seps)  # an empty field that is a whole line
    blank[1:] &= newline[:-1]
    if blank.any():
        keep = ~blank
        seps, starts, newline = seps[keep], starts[keep], newline[keep]
    expected = np.zeros(len(seps), dtype=bool)
    expected[ncols - 1::ncols] = True
    bad = np.flatnonzero(newline != expected)
    if bad.size:
        number, line = chunk.line_of(int(starts[bad[0] // ncols * ncols]))
        line = line.replace(_UNIT_SEP.decode(), delimiter)
        shown = "TAB" if delimiter == "\t" else repr(delimiter)
        found = len(line.strip(" \t").split(delimiter))
        raise InputError(f"{chunk.path} line {number}: expected {ncols} {shown}-separated fields in a {what} file, "
                         f"found {found}: {line[:200]!r}; fix the line or pass the right --delimiter")
    return seps, starts


def _separators(text: bytes, sep: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The text as bytes, where its delimiters and line ends are, and which of them end lines."""
    buf = np.frombuffer(text, dtype=np.uint8)
    seps = np.flatnonzero((buf == sep[0]) | (buf == 10))
    return buf, seps, buf[seps] == 10


def _not_integers(fields: Fields, cols: list[int]) -> np.ndarray:
    """Which fields of `cols` are not integers (digits after an optional sign), as (rows, len(cols))."""
    buf, flat = fields.buf, fields.starts.ravel()
    others = np.add.reduceat(((buf < 48) | (buf > 57)).view(np.int8), flat, dtype=np.int64)  # field + what follows
    following = np.append(flat[1:], len(buf)).reshape(fields.starts.shape)[:, cols]
    starts, ends = fields.starts[:, cols], fields.ends[:, cols]
    signed = np.isin(buf[starts], (43, 45)) & (ends - starts > 1)
    return (ends == starts) | (others.reshape(fields.starts.shape)[:, cols] - (following - ends) - signed > 0)


def numbers(fields: Fields, dtype: np.dtype, int_cols: list[int], kinds: list[str]) -> np.ndarray | None:
    """The fields as numbers (rows, ncols), parsed from the whole chunk at once; the first field of
    `int_cols` that is not an integer is an error naming its line and its kind (`kinds`, one per
    column of `int_cols`); None if they all are but another field is not a number."""
    text = fields.chunk.text if fields.sep in b" \t" else fields.chunk.text.replace(fields.sep, b" ")
    try:
        values = np.fromstring(text, dtype=dtype, sep=" ")
    except ValueError:
        values = None
    shape = fields.starts.shape
    if values is not None and values.size == shape[0] * shape[1]:
        values = values.reshape(shape)
        if values.dtype.kind != "f" or not (values[:, int_cols] % 1).any():
            return values
    bad = _not_integers(fields, int_cols)
    if not bad.any():
        return None
    row, c = np.argwhere(bad)[0]
    raise InputError(f"{fields.chunk.path} line {fields.line(row)}: {kinds[c]} id {fields.text(row, int_cols[c])!r} "
                     f"is not an integer; udd_* formats take integer ids (use raw_udd_* for names)")


def span_numbers(fields: Fields, col: int, dtype: np.dtype, rows: slice = slice(None)) -> np.ndarray | None:
    """One column of fields (of `rows`) as numbers; None if one is not a number."""
    starts, ends = fields.starts[rows, col], fields.ends[rows, col]
    text = gather(fields.buf, starts, ends + 1)  # with the separator after each
    text[text == fields.sep[0]] = 32
    try:
        values = np.fromstring(text.tobytes(), dtype=dtype, sep=" ")
    except ValueError:
        return None
    return values if values.size == len(starts) else None


def first_not_number(fields: Fields, col: int, dtype: np.dtype) -> int:
    """The first row whose field `col` is not a number (one is not): halves of the rows parsed in turn."""
    lo, hi = 0, len(fields)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if span_numbers(fields, col, dtype, slice(lo, mid)) is None else (mid, hi)
    return lo


def integers(fields: Fields, col: int, what: str) -> np.ndarray:
    """One column of fields as int64; the first that is not an integer is an error naming its line."""
    values = span_numbers(fields, col, np.int64)
    if values is None:
        row = int(np.flatnonzero(_not_integers(fields, [col]))[0])
        raise InputError(f"{fields.chunk.path} line {fields.line(row)}: {what} {fields.text(row, col)!r} is not an "
                         f"integer")
    return values

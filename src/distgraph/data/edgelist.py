"""Delimited edge lists (CSV/TSV/whitespace): `src dst [weight]` per line.

Integer ids are used as they are; any non-integer id switches the file to string ids,
which are numbered 0.. in order of first appearance (the names are kept on the graph as
`node_names` and written next to the partitions).

Integer files go through numpy's C parser (`np.loadtxt`, 15x faster than splitting the
text in Python and a tenth of the memory). Anything it refuses (string ids, a ragged or
malformed line, a trailing delimiter) goes through the token path, which splits the whole
text at once, checks every line's field count and names the offending line.
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..array_graph import ArrayGraph
from ..errors import InputError
from .graph_kind import graph_class

# First lines made only of these (case-insensitive) are a header even when the ids are strings.
COLUMN_NAMES = frozenset({
    "src", "dst", "source", "target", "from", "to", "head", "tail", "u", "v", "node1", "node2",
    "node_1", "node_2", "src_id", "dst_id", "source_id", "target_id", "from_id", "to_id", "srcid", "dstid",
    "id1", "id2", "start", "end", "weight", "weights", "w", "wt", "value", "label",
})
_BLANK_OR_COMMENT = re.compile(r"(?m)^[ \t]*(#[^\n]*)?\n")
_BLANK_LINE = re.compile(r"[ \t]*(#.*)?")
_END = "\x01"  # token marking the end of a line in the token path (rejected in input files)


@dataclass
class _Layout:
    """What the first lines tell: delimiter, header, where the edges start, columns."""

    delimiter: str | None
    header: bool
    skip: int  # physical lines before the first edge line
    ncols: int


def _detect_delimiter(first_line: str) -> str | None:
    for d in ("\t", ","):
        if d in first_line:
            return d
    return None  # any run of whitespace


def _fields(line: str, delimiter: str | None) -> list[str]:
    """Fields of one line; a trailing empty field (`0,1,` as DGL-KE writes) is not a field."""
    if delimiter is None:
        return line.split()
    fields = [f.strip() for f in line.split(delimiter)]
    return fields[:-1] if len(fields) > 1 and fields[-1] == "" else fields


def _not_text(p: Path) -> InputError:
    return InputError(f"{p} is not a UTF-8 text edge list; convert it to UTF-8 text with 'src dst [weight]' per line")


def _head(p: Path) -> list[tuple[int, str]]:
    """The first two non-blank, non-comment lines with their 0-based physical line numbers."""
    out: list[tuple[int, str]] = []
    try:
        with open(p, encoding="utf-8-sig") as f:
            for i, line in enumerate(f):
                line = line.rstrip("\r\n")
                if not _BLANK_LINE.fullmatch(line):
                    out.append((i, line))
                    if len(out) == 2:
                        break
    except UnicodeDecodeError:
        raise _not_text(p) from None
    return out


def _is_int(tokens: list[str]) -> bool:
    try:
        [int(t) for t in tokens]
    except ValueError:
        return False
    return True


def _looks_like_header(first: list[str], second: list[str] | None) -> bool:
    """Column names (src, dst, from, to, ...), or non-integer ids above integer ids."""
    if all(t.strip("\"'").lower() in COLUMN_NAMES for t in first):
        return True
    return second is not None and not _is_int(first[:2]) and _is_int(second[:2])


def _layout(p: Path, delimiter: str | None, header: bool | None) -> _Layout:
    head = _head(p)
    if not head:
        raise InputError(f"edge list {p} has no edges")
    if delimiter is None:
        delimiter = _detect_delimiter(head[0][1])
    first = _fields(head[0][1], delimiter)
    second = _fields(head[1][1], delimiter) if len(head) > 1 else None
    if header is None:
        header = _looks_like_header(first, second)
    if header and len(head) < 2:
        raise InputError(f"edge list {p} has a header line ({head[0][1]!r}) but no edges; "
                         f"pass --no-header if that line is an edge")
    line, fields = (head[1][0], second) if header else (head[0][0], first)
    if len(fields) not in (2, 3):
        hint = "; pass --delimiter if fields are separated by another character" if len(fields) == 1 else ""
        raise InputError(f"{p} line {line + 1}: expected 'src dst' or 'src dst weight', found {len(fields)} fields{hint}")
    return _Layout(delimiter, bool(header), head[0][0] + 1 if header else head[0][0], len(fields))


def _line_at(p: Path, skip: int, row: int) -> tuple[int, str]:
    """1-based physical line number and text of edge line `row` (error path only)."""
    k = -1
    with open(p, encoding="utf-8-sig") as f:
        for i, line in enumerate(f):
            if i >= skip and not _BLANK_LINE.fullmatch(line.rstrip("\r\n")):
                k += 1
                if k == row:
                    return i + 1, line.rstrip("\r\n")
    return skip + row + 1, ""


def _read_integers(p: Path, lay: _Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(src, dst, weight) through numpy's C parser, or None when the file is not plain integers."""
    if lay.delimiter is not None and len(lay.delimiter) != 1:
        return None
    two = lay.ncols == 2
    dtype = np.int64 if two else np.dtype([("src", "<i8"), ("dst", "<i8"), ("weight", "<f8")])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            a = np.loadtxt(p, dtype=dtype, delimiter=lay.delimiter, comments="#", skiprows=lay.skip,
                           ndmin=2 if two else 1, encoding="utf-8-sig")
    except (ValueError, OverflowError):
        return None
    if two:
        return (a[:, 0].copy(), a[:, 1].copy(), None) if a.shape[1] == 2 else None
    return a["src"].copy(), a["dst"].copy(), a["weight"].astype(np.float32)


def _read_tokens(p: Path, lay: _Layout) -> np.ndarray:
    """The (edges, ncols) table of fields, checking every line's field count at once."""
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise _not_text(p) from None
    if "\x00" in text or _END in text:
        raise _not_text(p)
    text = text.replace("\r\n", "\n")
    body = text.split("\n", lay.skip)[-1] if lay.skip else text
    del text
    body = _BLANK_OR_COMMENT.sub("", body + "\n")
    d = lay.delimiter
    if d is None:
        arr = np.array(body.replace("\n", f" {_END} ").split())
    else:
        arr = np.strings.strip(np.array(body.replace("\n", f"{d}{_END}{d}").split(d)[:-1]))
    ends = np.flatnonzero(arr == _END)
    keep = arr != _END
    counts = np.diff(ends, prepend=-1) - 1
    if d is not None:  # a trailing empty field ("0,1," as DGL-KE writes) is not a field
        trailing = (counts > 1) & (arr[ends - 1] == "")
        keep[ends[trailing] - 1] = False
        counts -= trailing
    bad = np.flatnonzero(counts != lay.ncols)
    if bad.size:
        n, line = _line_at(p, lay.skip, int(bad[0]))
        raise InputError(f"{p} line {n}: expected {lay.ncols} fields like the first line, found {counts[bad[0]]}: {line!r}")
    table = arr[keep].reshape(-1, lay.ncols)
    empty = np.flatnonzero((table == "").any(1))
    if empty.size:
        n, line = _line_at(p, lay.skip, int(empty[0]))
        raise InputError(f"{p} line {n}: empty field in {line!r}; every line needs 'src{d or ' '}dst'")
    return table


def _as_int(p: Path, lay: _Layout, table: np.ndarray) -> np.ndarray | None:
    """The id columns as int64, or None when some id is not an integer (string ids)."""
    try:
        return table.astype(np.int64)
    except ValueError:
        return None
    except OverflowError:
        if not np.strings.isdigit(np.strings.lstrip(table, "+-")).all():
            return None  # names, some of which look like huge numbers
        big = np.flatnonzero((np.strings.str_len(table) >= 19).any(1))
        row = next(int(r) for r in big if any(not -2**63 <= int(t) < 2**63 for t in table[r]))
        n, line = _line_at(p, lay.skip, row)
        raise InputError(f"{p} line {n}: node id does not fit in 64 bits: {line!r}; renumber the nodes") from None


def _string_ids(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids numbered in order of first appearance, and the names in that order."""
    uniq, first_pos, inverse = np.unique(table.reshape(-1), return_index=True, return_inverse=True)
    order = np.argsort(first_pos, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse].reshape(-1, 2), uniq[order]


def _warn_if_header(p: Path, lay: _Layout, ids: np.ndarray, first: np.ndarray) -> None:
    """Say so when the first edge of a string-id file looks like a header read as an edge: two
    names that occur nowhere else in the file (`person,friend` above names)."""
    if ids.shape[0] < 2 or first[0] == first[1] or (ids[1:] < 2).any():  # ids 0 and 1 are the first line's
        return
    line, text = _line_at(p, lay.skip, 0)
    print(f"warning: {p} line {line} ({text!r}) was read as an edge, but its two names occur nowhere else: if it "
          f"is a header, pass --header (header=True)", file=sys.stderr, flush=True)


def load_edgelist(
    path: str | Path,
    delimiter: str | None = None,
    header: bool | None = None,
    num_nodes: int | None = None,
    *,
    tensors: bool = True,
) -> ArrayGraph:
    """Read an edge list; `delimiter`/`header` are detected when None (a header is a first
    line of column names such as `src dst` or `from,to`, or non-integer ids above integer ones).
    A `Graph`, or with `tensors=False` an `ArrayGraph` of numpy arrays (torch not imported)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"edge list {p} does not exist")
    lay = _layout(p, delimiter, header)
    names = None
    parsed = _read_integers(p, lay)
    if parsed is not None:
        src, dst, weight = parsed
    else:
        table = _read_tokens(p, lay)
        weight = None
        if lay.ncols == 3:
            try:
                weight = table[:, 2].astype(np.float32)
            except ValueError:
                raise InputError(f"{p}: the third column must be a numeric edge weight") from None
        ids = _as_int(p, lay, table[:, :2])
        if ids is None:
            if num_nodes is not None:
                raise InputError(f"{p} has string node ids; num_nodes applies to integer ids only")
            ids, names = _string_ids(table[:, :2])
            if header is None:
                _warn_if_header(p, lay, ids, table[0, :2])
        src, dst = np.ascontiguousarray(ids[:, 0]), np.ascontiguousarray(ids[:, 1])
    if names is None:
        bad = np.flatnonzero((np.minimum(src, dst) < 0) | (np.maximum(src, dst) >= num_nodes if num_nodes is not None else False))
        if bad.size:
            n, line = _line_at(p, lay.skip, int(bad[0]))
            raise InputError(f"{p} line {n}: node id out of range "
                             f"(must be in [0, {num_nodes if num_nodes is not None else 'inf'})): {line!r}")
    edata = {"weight": weight} if weight is not None else {}
    return graph_class(tensors)(src, dst, num_nodes, edata=edata, node_names=names)

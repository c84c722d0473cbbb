"""Delimited edge lists (CSV/TSV/whitespace): `src dst [weight]` per line.

Integer ids are used as they are; any non-integer id switches the file to string ids,
which are numbered 0.. in order of first appearance (the names are kept on the graph as
`node_names` and written next to the partitions). Parsing splits the whole text at once.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from ..errors import InputError
from ..graph import Graph

_BLANK_OR_COMMENT = re.compile(r"(?m)^[ \t]*(#[^\n]*)?\r?\n")


def _detect_delimiter(first_line: str) -> str | None:
    for d in ("\t", ","):
        if d in first_line:
            return d
    return None  # any run of whitespace


def _split(lines_text: str, delimiter: str | None) -> list[str]:
    if delimiter is None:
        return lines_text.split()
    return [tok.strip() for tok in lines_text.replace("\r", "").replace("\n", delimiter).split(delimiter)]


def _bad_line(lines: list[str], delimiter: str | None, ncols: int) -> int:
    """Index of the first line without `ncols` fields (only called on the error path)."""
    for i, line in enumerate(lines):
        if len(_split(line, delimiter)) != ncols:
            return i
    return len(lines) - 1


def _as_int(tokens: np.ndarray) -> np.ndarray | None:
    try:
        return tokens.astype(np.int64)
    except ValueError:
        return None


def load_edgelist(
    path: str | Path,
    delimiter: str | None = None,
    header: bool | None = None,
    num_nodes: int | None = None,
) -> Graph:
    """Read an edge list; `delimiter`/`header` are detected when None (a header is a first
    line whose ids are not integers while the next line's are)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"edge list {p} does not exist")
    text = _BLANK_OR_COMMENT.sub("", p.read_text() + "\n").rstrip("\n")
    if not text:
        raise InputError(f"edge list {p} has no edges")
    lines = text.split("\n")
    if delimiter is None:
        delimiter = _detect_delimiter(lines[0])
    first = _split(lines[0], delimiter)
    if header is None:
        second = _split(lines[1], delimiter) if len(lines) > 1 else first
        header = _as_int(np.array(first[:2])) is None and _as_int(np.array(second[:2])) is not None
    offset = 1 if header else 0
    ncols = len(_split(lines[offset], delimiter)) if len(lines) > offset else 2
    if ncols not in (2, 3):
        raise InputError(f"{p} line {offset + 1}: expected 'src dst' or 'src dst weight', found {ncols} fields")
    body = lines[offset:]
    tokens = np.array(_split("\n".join(body), delimiter))
    if tokens.size != ncols * len(body):
        i = _bad_line(body, delimiter, ncols)
        raise InputError(f"{p} line {i + offset + 1}: expected {ncols} fields like the first line, "
                         f"found {len(_split(body[i], delimiter))}: {body[i]!r}")
    table = tokens.reshape(len(body), ncols)
    edata = {}
    if ncols == 3:
        try:
            edata["weight"] = torch.from_numpy(table[:, 2].astype(np.float32))
        except ValueError:
            raise InputError(f"{p}: the third column must be a numeric edge weight") from None
    ids = _as_int(table[:, :2])
    names = None
    if ids is None:
        if num_nodes is not None:
            raise InputError(f"{p} has string node ids; num_nodes applies to integer ids only")
        uniq, first_pos, inverse = np.unique(table[:, :2].reshape(-1), return_index=True, return_inverse=True)
        order = np.argsort(first_pos, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        ids = rank[inverse].reshape(-1, 2)
        names = uniq[order]
    else:
        bad = np.flatnonzero((ids < 0).any(1) | ((ids >= num_nodes).any(1) if num_nodes is not None else False))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{p} line {i + offset + 1}: node id out of range "
                             f"(must be in [0, {num_nodes if num_nodes is not None else 'inf'})): {body[i]!r}")
    return Graph(torch.from_numpy(np.ascontiguousarray(ids[:, 0])), torch.from_numpy(np.ascontiguousarray(ids[:, 1])),
                 num_nodes, edata=edata, node_names=names)

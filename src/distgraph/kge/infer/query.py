"""What `kge predict` and `kge emb-sim` do alike with a query, in DGL-KE's forms: its lists of ids
read (or, with `--raw_data`, of names looked up in an `id<TAB>name` dictionary), one a line; the K
best of its scores kept as blocks of them come, ties going to the smaller flat index so that a
result does not depend on how the set was cut into blocks; and its result written as a
tab-separated file with a header line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...errors import InputError
from ..data.formats import read_dict
from ..data.names import Names


class Mapping:
    """The names by id (`data.names.Names`) of `--raw_data`, and the file they come from."""

    def __init__(self, path: Path, names: Names):
        self.path, self.names = path, names

    @classmethod
    def read(cls, path: str | Path | None, flag: str) -> Mapping:
        """The mapping file given by `flag` (`id<TAB>name` lines)."""
        if path is None:
            raise InputError(f"--raw_data needs the id mapping file: pass {flag}")
        path = Path(path)
        if not path.is_file():
            raise InputError(f"mapping file {path} ({flag}) does not exist")
        return cls(path, read_dict(path))

    def ids(self, names: np.ndarray) -> np.ndarray:
        """The id of each name; -1 for a name the file lacks."""
        return self.names.ids(names)

    def strings(self, ids: np.ndarray) -> np.ndarray:
        """The names of `ids`, as an array of strings."""
        return self.names.take(ids).to_arrow().to_numpy(zero_copy_only=False)


def read_ids(path: str | Path, count: int, what: str, names: Mapping | None = None) -> np.ndarray:
    """The ids listed in `path`, one a line: integers in [0, count), or (with `names`) names."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} list {path} does not exist")
    lines = np.array(path.read_text(encoding="utf-8").splitlines(), dtype=str)
    if not lines.size:
        raise InputError(f"{what} list {path} is empty")
    if names is not None:
        ids = names.ids(lines)
        unknown = np.flatnonzero(ids < 0)
        if unknown.size:
            raise InputError(f"{path} line {unknown[0] + 1}: {str(lines[unknown[0]])!r} is not a {what} of "
                             f"{names.path} ({unknown.size} unknown); check the mapping file, or drop --raw_data for "
                             f"integer ids")
        return ids
    try:
        ids = lines.astype(np.int64)
    except ValueError:
        raise InputError(f"{path}: every line must be an integer {what} id (names need --raw_data)") from None
    bad = np.flatnonzero((ids < 0) | (ids >= count))
    if bad.size:
        raise InputError(f"{path} line {bad[0] + 1}: {what} id {ids[bad[0]]} is outside [0, {count})")
    return ids


def _best(scores: torch.Tensor, index: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k highest of (scores, index) pairs, ties by increasing index."""
    by_index = torch.argsort(index)
    scores, index = scores[by_index], index[by_index]
    order = torch.sort(scores, descending=True, stable=True).indices[:k]
    return scores[order], index[order]


class RunningTopK:
    """Top k over blocks of (scores, flat indices) fed one after another."""

    def __init__(self, k: int):
        self.k = k
        self.scores = torch.empty(0)
        self.index = torch.empty(0, dtype=torch.int64)

    def add(self, scores: torch.Tensor, index: torch.Tensor) -> None:
        scores, index = scores.reshape(-1), index.reshape(-1)
        if scores.numel() > self.k:  # a block's own top k first, keeping every score tied with its k-th
            keep = scores >= torch.topk(scores, self.k, sorted=False).values.min()
            scores, index = scores[keep], index[keep]
        self.scores, self.index = _best(torch.cat([self.scores, scores.float()]), torch.cat([self.index, index]),
                                        self.k)


def row_topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's k highest scores and their columns (ties by increasing column)."""
    order = torch.sort(scores, dim=1, descending=True, stable=True)
    return order.values[:, :k], order.indices[:, :k]


def write_tsv(path: str | Path, columns: dict[str, np.ndarray]) -> None:
    """A header line, then one tab-separated line per row."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    with open(path, "wb") as f:
        f.write(("\t".join(columns) + "\n").encode())
        pcsv.write_csv(table, f, pcsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none"))

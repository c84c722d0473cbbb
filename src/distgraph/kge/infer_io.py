"""Inputs and outputs of `kge predict` and `kge emb-sim` in DGL-KE's forms: lists of ids (or, with
`--raw_data`, of names looked up in an `id<TAB>name` dictionary), one a line; results as a
tab-separated file with a header line."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from .data.formats import read_dict


class Names:
    """A dictionary file: names by id, and ids of names (a sorted index, no per-name dict)."""

    def __init__(self, path: str | Path | None, flag: str):
        if path is None:
            raise InputError(f"--raw_data needs the id mapping file: pass {flag}")
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(f"mapping file {self.path} ({flag}) does not exist")
        self.names = np.array(read_dict(self.path), dtype=str)
        self._order = np.argsort(self.names, kind="stable")

    def ids(self, names: np.ndarray) -> np.ndarray:
        """The id of each name; -1 for a name the dictionary lacks."""
        sorted_names = self.names[self._order]
        pos = np.clip(np.searchsorted(sorted_names, names), 0, max(len(sorted_names) - 1, 0))
        found = sorted_names[pos] == names if len(sorted_names) else np.zeros(len(names), bool)
        return np.where(found, self._order[pos], -1)


def read_ids(path: str | Path, count: int, what: str, names: Names | None = None) -> np.ndarray:
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
            raise InputError(f"{path} line {unknown[0] + 1}: {str(lines[unknown[0]])!r} is not a {what} of {names.path} "
                             f"({unknown.size} unknown); check the mapping file, or drop --raw_data for integer ids")
        return ids
    try:
        ids = lines.astype(np.int64)
    except ValueError:
        raise InputError(f"{path}: every line must be an integer {what} id (names need --raw_data)") from None
    bad = np.flatnonzero((ids < 0) | (ids >= count))
    if bad.size:
        raise InputError(f"{path} line {bad[0] + 1}: {what} id {ids[bad[0]]} is outside [0, {count})")
    return ids


def write_tsv(path: str | Path, columns: dict[str, np.ndarray]) -> None:
    """A header line, then one tab-separated line per row."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    with open(path, "wb") as f:
        f.write(("\t".join(columns) + "\n").encode())
        pcsv.write_csv(table, f, pcsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none"))

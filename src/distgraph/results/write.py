"""One trainer's files of a results folder: its nodes' rows keyed by their original ids, as
Parquet (`node_id`, then the value columns) and as one `.npy` per column, appended a chunk at
a time so a trainer never holds more than a chunk beyond its share's ids.

A folder holds one result (embeddings or predictions) of one node type: `part-<rank>.parquet`,
`part-<rank>.<column>.npy` and `part-<rank>.json` (what the part holds; written last, so a
part without it is incomplete) per trainer, the rank written in five digits (`part-00000`).
`load_results` joins them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..files import private_files
from ..partition.stream.npyfile import NpyFile
from .ids import OriginalIds

FORMAT = "distgraph-results"
VERSION = 1
NODE_ID, NODE_INDEX = "node_id", "node_index"


def part_name(rank: int) -> str:
    return f"part-{rank:05d}"


def part_rank(name: str) -> int | None:
    """The rank in a file name `part-<rank>.<...>`, None for other names."""
    stem = name.split(".", 1)[0]
    return int(stem[5:]) if stem.startswith("part-") and stem[5:].isdigit() else None


def _arrow_type(dtype: np.dtype, width: int | None):
    import pyarrow as pa

    scalar = pa.from_numpy_dtype(dtype)
    return scalar if width is None else pa.list_(scalar, width)


def _arrow_column(values: np.ndarray, width: int | None):
    import pyarrow as pa

    if width is None:
        return pa.array(values)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), width)


class ResultWriter:
    """Trainer `rank`'s part (of `num_parts`) of a results folder: `num_rows` nodes of `ntype`,
    with value `columns` {name: (dtype, width or None for one value per node)}."""

    @private_files()
    def __init__(self, out: str | Path, ids: OriginalIds, columns: dict[str, tuple], rank: int, num_parts: int,
                 num_rows: int, kind: str):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.out, self.ids, self.rank, self.num_parts, self.kind = Path(out), ids, rank, num_parts, kind
        self.columns = {k: (np.dtype(d), w) for k, (d, w) in columns.items()}
        self.num_rows, self.rows = num_rows, 0
        self.out.mkdir(parents=True, exist_ok=True)
        if rank == 0:
            self._remove_stale()
        self.name = part_name(rank)
        key = [(NODE_ID, pa.string() if ids.named else pa.int64())]
        fields = key + [(k, _arrow_type(d, w)) for k, (d, w) in self.columns.items()]
        fields += [(NODE_INDEX, pa.int64())] if ids.named else []
        self.schema = pa.schema(fields)
        self._tmp = self.out / f".{self.name}.parquet.tmp"
        self._parquet = pq.ParquetWriter(self._tmp, self.schema)
        id_dtype = ids.names(np.zeros(0, np.int64)).dtype if ids.named else np.dtype(np.int64)
        shapes = {NODE_ID: (id_dtype, None), **self.columns, **({NODE_INDEX: (np.dtype(np.int64), None)}
                                                               if ids.named else {})}
        self._npy = {k: NpyFile(self.out / f".{self.name}.{k}.npy.tmp", d, (num_rows,) if w is None else (num_rows, w))
                     for k, (d, w) in shapes.items()}

    def _remove_stale(self) -> None:
        """Parts of an earlier result in this folder from more trainers than this one has."""
        for f in self.out.iterdir():
            r = part_rank(f.name)
            if r is not None and r >= self.num_parts:
                f.unlink()

    def add(self, new_ids: np.ndarray, values: dict[str, np.ndarray]) -> None:
        """Rows of the nodes `new_ids` (partitioned per-type ids): one array per value column."""
        import pyarrow as pa

        index = self.ids.index(new_ids)
        key = self.ids.names(index) if self.ids.named else index
        arrays = {NODE_ID: key, **{k: np.asarray(values[k], dtype=d) for k, (d, _) in self.columns.items()}}
        if self.ids.named:
            arrays[NODE_INDEX] = index
        cols = [pa.array(key, type=self.schema.field(NODE_ID).type)]
        cols += [_arrow_column(arrays[k], w) for k, (_, w) in self.columns.items()]
        cols += [pa.array(index)] if self.ids.named else []
        self._parquet.write_table(pa.Table.from_arrays(cols, schema=self.schema))
        for k, f in self._npy.items():
            f.append(arrays[k])
        self.rows += len(index)

    @private_files()
    def close(self) -> None:
        """Finish the files, move them to their names, and describe the part (last)."""
        self._parquet.close()
        for f in self._npy.values():
            f.close()
        if self.rows != self.num_rows:
            raise RuntimeError(f"{self.name}: {self.rows} rows written of {self.num_rows}")
        os.replace(self._tmp, self.out / f"{self.name}.parquet")
        for k, f in self._npy.items():
            os.replace(f.path, self.out / f"{self.name}.{k}.npy")
        meta = {"format": FORMAT, "version": VERSION, "kind": self.kind, "ntype": self.ids.ntype,
                "num_nodes": len(self.ids), "rank": self.rank, "num_parts": self.num_parts, "num_rows": self.rows,
                "node_id": "string" if self.ids.named else "int64",
                "columns": {k: {"dtype": d.str, "width": w} for k, (d, w) in self.columns.items()}}
        tmp = self.out / f".{self.name}.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, self.out / f"{self.name}.json")

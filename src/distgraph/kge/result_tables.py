"""`entities.parquet` / `relations.parquet` beside a saved model: each entity's and relation's
id, its name in the input (the dictionaries' names) and its embedding, one row each in id order,
so a user joins the embeddings to their own tables by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ENTITY_TABLE = "entities.parquet"
RELATION_TABLE = "relations.parquet"


def _table(names: list[str], columns: dict[str, np.ndarray]):
    import pyarrow as pa

    arrays = {"id": pa.array(np.arange(len(names), dtype=np.int64)), "name": pa.array(names, type=pa.string())}
    for key, a in columns.items():
        a = np.ascontiguousarray(a, dtype=np.float32).reshape(len(names), -1)
        arrays[key] = pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), a.shape[1])
    return pa.table(arrays)


def write_result_tables(path: Path, tables: dict, entities: list[str], relations: list[str]) -> None:
    """The two tables of a model whose `tables` are {"entity", "relation"[, "projection"]}: the
    entities' `emb`, the relations' `emb` (and TransR's `projection`, flattened)."""
    import pyarrow.parquet as pq

    def rows(t) -> np.ndarray:
        return t.numpy() if hasattr(t, "numpy") else np.asarray(t)

    pq.write_table(_table(entities, {"emb": rows(tables["entity"])}), Path(path) / ENTITY_TABLE)
    if "relation" in tables:  # (a model saved without it is refused when read back)
        rel = {"emb": rows(tables["relation"]), **({"projection": rows(tables["projection"])} if "projection" in tables
                                                   else {})}
        pq.write_table(_table(relations, rel), Path(path) / RELATION_TABLE)

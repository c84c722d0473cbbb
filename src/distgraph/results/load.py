"""`load_results`: the parts of a results folder as one table (or arrays), in the input's order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError
from .write import FORMAT, NODE_ID, NODE_INDEX, VERSION, part_name, part_rank


def _metas(root: Path) -> list[dict]:
    """Every part's description, checked to be of one result and complete."""
    if not root.is_dir():
        raise InputError(f"results folder {root} does not exist; pass the folder given to --save_embeddings or "
                         f"--save_predictions")
    metas = {}
    for f in root.glob("part-*.json"):
        meta = json.loads(f.read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise InputError(f"{f} is not a distgraph results part (version {VERSION})")
        metas[part_rank(f.name)] = meta
    if not metas:
        raise InputError(f"{root} holds no results (no part-*.json); was the run finished?")
    first = metas[min(metas)]
    same = ("kind", "ntype", "num_nodes", "num_parts", "node_id", "columns")
    for r, m in metas.items():
        if any(m[k] != first[k] for k in same):
            raise InputError(f"{root}: {part_name(r)} belongs to another result than {part_name(min(metas))} "
                             f"(a different run); write each result into a folder of its own")
    missing = sorted(set(range(first["num_parts"])) - set(metas))
    if missing:
        raise InputError(f"{root} lacks {', '.join(part_name(r) for r in missing)} of {first['num_parts']} parts: "
                         f"each trainer writes its own part on its own host; copy every host's parts into this "
                         f"folder")
    return [metas[r] for r in range(first["num_parts"])]


def _order(root: Path, key: np.ndarray, num_nodes: int) -> np.ndarray:
    """The permutation that puts the rows in input order, checking every node is there once."""
    order = np.argsort(key, kind="stable")
    if key.size != num_nodes or not np.array_equal(key[order], np.arange(num_nodes)):
        raise InputError(f"{root}: the parts do not hold each of the {num_nodes} nodes exactly once; "
                         f"write the result again")
    return order


def load_results(path: str | Path, numpy: bool = False):
    """Every part of a results folder (`--save_embeddings` / `--save_predictions`, or
    `ResultWriter`) as one `pyarrow.Table` with `node_id` and the value columns, rows in the
    input's order (original id 0, 1, ..., or an edge list's nodes in order of appearance);
    with `numpy=True`, a dict of numpy arrays instead (one row per node, from the `.npy` files)."""
    root = Path(path)
    metas = _metas(root)
    first = metas[0]
    named = first["node_id"] == "string"
    columns = [NODE_ID, *first["columns"]] + ([NODE_INDEX] if named else [])
    if numpy:
        data = {c: np.concatenate([np.load(root / f"{part_name(r)}.{c}.npy") for r in range(len(metas))])
                for c in columns}
        order = _order(root, data[NODE_INDEX if named else NODE_ID], first["num_nodes"])
        data.pop(NODE_INDEX, None)
        return {c: a[order] for c, a in data.items()}
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.concat_tables([pq.read_table(root / f"{part_name(r)}.parquet") for r in range(len(metas))])
    order = _order(root, table.column(NODE_INDEX if named else NODE_ID).to_numpy(), first["num_nodes"])
    if named:
        table = table.drop_columns([NODE_INDEX])
    return table.take(pa.array(order))

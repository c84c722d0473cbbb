"""A node table (CSV or Parquet) beside an edge list: features, labels and split masks keyed
by the edge list's own node ids (`distgraph partition --node_data`).

The convention: an `id` column (the same ids as the edge list: strings or integers);
`label` (an integer class; missing: -1); `train_mask`, `val_mask`, `test_mask` (0/1 or
true/false; missing: false); every other numeric column a feature, in file order, together
the `feat` field (float32). A Parquet file may instead hold `feat` as one list column.
Other columns (names, text) are left out and said so. Nodes present only in the table
become isolated nodes of the graph; edge-list nodes without a row get zero features, label
-1 and no split, and are counted with an example.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..array_graph import ArrayGraph
from ..errors import InputError

ID, LABEL = "id", "label"
MASKS = ("train_mask", "val_mask", "test_mask")
FEAT = "feat"


@dataclass
class NodeTable:
    """The table's columns, one row per node it names."""

    ids: np.ndarray  # str or int64
    label: np.ndarray | None = None
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    feat: np.ndarray | None = None  # (rows, F) float32
    feature_columns: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # columns that are none of the above


def _read_arrow(path: Path, string_ids: bool):
    """The file as a pyarrow table (the id column as strings when the edge list's ids are)."""
    import pyarrow as pa

    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            if string_ids and ID in table.column_names:
                table = table.set_column(table.column_names.index(ID), ID, table[ID].cast(pa.string()))
            return table
        import pyarrow.csv as pcsv

        types = {ID: pa.string()} if string_ids else {}
        delimiter = "\t" if suffix in (".tsv", ".tab") else ","
        return pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=delimiter),
                             convert_options=pcsv.ConvertOptions(column_types=types))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"node data {path} cannot be read as {'Parquet' if suffix in ('.parquet', '.pq') else 'CSV'}: "
                         f"{exc}") from None


def _mask(values: np.ndarray, name: str, path: Path) -> np.ndarray:
    if values.dtype == bool:
        return values
    if values.dtype.kind in "iuf":
        given = values[~np.isnan(values)] if values.dtype.kind == "f" else values
        bad = given[~np.isin(given, (0, 1))]
        if bad.size:
            raise InputError(f"node data {path}: column {name!r} must hold 0/1 or true/false, found {bad[0].item()!r}")
        return np.nan_to_num(values.astype(np.float64)).astype(bool)
    raise InputError(f"node data {path}: column {name!r} must hold 0/1 or true/false, got {values.dtype} values")


def read_node_table(path: str | Path, string_ids: bool) -> NodeTable:
    """Read a node table (see the module's doc); `string_ids` when the edge list's ids are names."""
    import pyarrow as pa
    import pyarrow.compute as pc

    p = Path(path)
    if not p.is_file():
        raise InputError(f"node data {p} does not exist")
    table = _read_arrow(p, string_ids)
    if ID not in table.column_names:
        raise InputError(f"node data {p} has no {ID!r} column (it has {table.column_names}); name the column of "
                         f"node ids 'id'")
    if table[ID].null_count:
        raise InputError(f"node data {p}: {table[ID].null_count} rows have no id")
    ids_col = table[ID]
    if pa.types.is_integer(ids_col.type):
        ids = ids_col.to_numpy().astype(np.int64)
    elif string_ids:
        ids = np.asarray(ids_col.to_pylist(), dtype=str)
    else:
        raise InputError(f"node data {p}: ids are {ids_col.type} but the edge list's ids are integers")
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InputError(f"node data {p}: id {uniq[counts > 1][0].item()!r} has {int(counts.max())} rows; one row a node")
    out = NodeTable(ids)
    features = []
    for name in table.column_names:
        col = table[name]
        if name == ID:
            continue
        if name == LABEL:
            values = col.to_numpy(zero_copy_only=False) if not col.null_count else pc.fill_null(col, -1).to_numpy()
            if values.dtype.kind not in "iuf" or (values.dtype.kind == "f" and (np.mod(values, 1) != 0).any()):
                raise InputError(f"node data {p}: column 'label' must hold integer classes, got {col.type}")
            out.label = values.astype(np.int64)
        elif name in MASKS:
            values = pc.fill_null(col, False if pa.types.is_boolean(col.type) else 0).to_numpy(zero_copy_only=False)
            out.masks[name] = _mask(values, name, p)
        elif name == FEAT and (pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type)):
            lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
            if col.null_count or lengths.size and (lengths != lengths[0]).any():
                raise InputError(f"node data {p}: every row's 'feat' list must have the same length")
            flat = pc.list_flatten(col).to_numpy(zero_copy_only=False).astype(np.float32)
            features.append(flat.reshape(len(ids), -1))
            out.feature_columns.append(f"{FEAT}[{flat.size // max(len(ids), 1)}]")
        elif pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_boolean(col.type):
            features.append(pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, 1))
            out.feature_columns.append(name)
        else:
            out.skipped.append(name)
    if features:
        out.feat = np.ascontiguousarray(np.hstack(features))
    return out


def attach_node_data(g: ArrayGraph, path: str | Path) -> tuple[ArrayGraph, list[str]]:
    """`g` (an edge list's homogeneous graph) with the node table at `path` as node data, nodes
    only in the table added as isolated nodes; and lines saying what was read and what is missing."""
    if len(g.ntypes) != 1 or len(g.canonical_etypes) != 1:
        raise InputError("--node_data applies to a homogeneous graph (an edge list); a typed graph keeps its data "
                         "in its own files")
    if len(g.ndata):
        raise InputError(f"the graph already has node data ({sorted(g.ndata)}): give its fields in one place")
    names = g.node_names
    table = read_node_table(path, names is not None)
    n_old = g.num_nodes()
    if names is not None:  # string ids: rows found by name, unknown names appended in table order
        order = np.argsort(names, kind="stable")
        pos = np.searchsorted(names[order], table.ids).clip(max=max(n_old - 1, 0))
        found = names[order][pos] == table.ids if n_old else np.zeros(len(table.ids), dtype=bool)
        rows = np.where(found, order[pos], -1)
        new = np.flatnonzero(~found)
        rows[new] = n_old + np.arange(new.size)
        names = np.concatenate([names, table.ids[new]])
        n = names.size
    else:
        if table.ids.size and int(table.ids.min()) < 0:
            raise InputError(f"node data {path}: id {int(table.ids.min())} is negative; integer ids are 0, 1, ...")
        rows = table.ids
        n = max(n_old, int(rows.max()) + 1 if rows.size else 0)
    has_row = np.zeros(n, dtype=bool)
    has_row[rows] = True
    ndata = {}
    if table.feat is not None:
        feat = np.zeros((n, table.feat.shape[1]), dtype=np.float32)
        feat[rows] = table.feat
        ndata[FEAT] = feat
    if table.label is not None:
        label = np.full(n, -1, dtype=np.int64)
        label[rows] = table.label
        ndata[LABEL] = label
    for name, values in table.masks.items():
        mask = np.zeros(n, dtype=bool)
        mask[rows] = values
        ndata[name] = mask
    out = type(g)(g.src, g.dst, n, ndata, dict(g.edata), node_names=names)
    fields = ([f"{FEAT} ({len(table.feature_columns)} columns: {', '.join(table.feature_columns[:8])}"
               f"{', ...' if len(table.feature_columns) > 8 else ''})"] if table.feat is not None else [])
    fields += [LABEL] * (table.label is not None) + list(table.masks)
    lines = [f"node data: {len(table.ids):,} rows of {path}: {', '.join(fields) or 'no fields'}"]
    if table.skipped:
        lines.append(f"node data: columns left out (not numeric): {', '.join(table.skipped)}")
    if n > n_old:
        lines.append(f"node data: {n - n_old:,} nodes only in {path} added as isolated nodes")
    missing = np.flatnonzero(~has_row[:n_old])
    if missing.size:
        example = str(names[missing[0]]) if names is not None else int(missing[0])
        lines.append(f"node data: {missing.size:,} edge-list nodes have no row in {path} (e.g. {example!r}): zero "
                     f"features, label -1, in no split")
    return out, lines

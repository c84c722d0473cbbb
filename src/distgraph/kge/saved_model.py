"""Trained models on disk, in `dglke_train`'s layout, and the check that their tables are finite.

`<save_path>/<model>_<dataset>_<n>/` holds `<dataset>_<model>_entity.npy`,
`<dataset>_<model>_relation.npy` (and `<dataset>_<model>projection.npy` for TransR), the
entity and relation dictionaries (`entities.dict`, `relations.dict`: `id<TAB>name`),
`config.json` with every training setting, so `kge eval` can rebuild the model, and
`entities.parquet` / `relations.parquet`: each entity's and relation's id, its name in the
input and its embedding, one row each in id order, so a user joins the embeddings to their
own tables by name.

Tables with non-finite rows are refused, naming how many rows and which table: a NaN score is
never >= the true entity's, so ranking against NaN rows would count them as beaten and raise
the MRR of a model that diverged. `load_model` checks the saved tables, a run checks its
tables when training ends (before saving), and each ranked shard is checked where it lives.
Everything here needs numpy only (a CPU tensor's `.numpy()` is a view): `kge eval` checks a
model (its settings, files, sizes, finite rows) before importing torch.

Folders move between distgraph and DGL-KE 0.1.2 both ways. config.json also carries the keys
DGL-KE writes under its own names (`model` and `emb_size`, which `dglke_predict` reads, and
`max_train_step`; its others are named alike), so DGL-KE loads our folders as its own. A folder `dglke_train` wrote is read
through those keys where ours are absent; its `emap_file` / `rmap_file` name the entity and
relation names, which DGL-KE keeps in the data folder (`entities.tsv` / `relations.tsv` for
`raw_udd_*`, the dataset's dictionaries otherwise), so they are looked for in the model folder
and then in the data folder, found only when a command needs them (`ModelFolder.names`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..files import check_space, private_files
from .config import TrainConfig, check_model, table_widths
from .data.formats import read_dict, write_dict
from .data.names import Names

_SUFFIX = {"entity": "_entity", "relation": "_relation", "projection": "projection"}
ENTITY_DICT = "entities.dict"
RELATION_DICT = "relations.dict"
ENTITY_TABLE = "entities.parquet"
RELATION_TABLE = "relations.parquet"
_BLOCK_ROWS = 1 << 16  # rows checked for finite values at once: a bounded temporary whatever the table's size
_WRITE_BYTES = 64 << 20  # rows written to the .npy and Parquet files at once
DGLKE_KEYS = {"model": "model_name", "emb_size": "hidden_dim", "max_train_step": "max_step"}  # DGL-KE's -> ours
_NAME_KEYS = {"entity": ("emap_file", ENTITY_DICT), "relation": ("rmap_file", RELATION_DICT)}  # key, default


def nonfinite_rows(table: np.ndarray) -> int:
    """Rows of a 2-D table holding a NaN or an infinity."""
    return sum(int((~np.isfinite(table[i:i + _BLOCK_ROWS])).any(axis=1).sum())
               for i in range(0, len(table), _BLOCK_ROWS))


def refuse_nonfinite(counts: dict[str, int], rows: dict[str, int], where: str) -> None:
    """One error naming each table with non-finite rows (`counts`) and its size (`rows`), if any."""
    bad = [f"{counts[name]:,} of the {rows[name]:,} rows of the {name} table" for name in counts if counts[name]]
    if bad:
        raise InputError(f"{where}: {' and '.join(bad)} are not finite (NaN or infinite): the training diverged, "
                         f"and rankings against such rows mean nothing; train again with a lower --lr (or a "
                         f"smaller --regularization_coef)")


def check_finite(tables: dict[str, np.ndarray], where: str) -> None:
    """Refuse `tables` (name -> rows) if any row is not finite."""
    refuse_nonfinite({n: nonfinite_rows(t) for n, t in tables.items()}, {n: len(t) for n, t in tables.items()},
                     where)


def next_model_dir(save_path: str | Path, model_name: str, dataset: str) -> Path:
    """`<save_path>/<model>_<dataset>_<n>`, numbered after the runs already there, as DGL-KE
    names it (after the highest, even if earlier ones were deleted); created when saving."""
    root = Path(save_path)
    prefix = f"{model_name}_{dataset}_"
    taken = [int(p.name[len(prefix):]) for p in (root.iterdir() if root.is_dir() else ())
             if p.name.startswith(prefix) and p.name[len(prefix):].isdigit()]
    return root / f"{prefix}{max(taken, default=-1) + 1}"


def table_file(root: Path, cfg: TrainConfig, table: str) -> Path:
    """`<dataset>_<model>_entity.npy` (`_relation`, TransR's `projection`) in `root`, as DGL-KE names it."""
    return root / f"{cfg.dataset}_{cfg.model_name}{_SUFFIX[table]}.npy"


@dataclass
class RowBlocks:
    """A table too big to hold at once: its shape, its dtype and its rows in id order, a block of
    consecutive rows at a time (a bucket-trained entity table yields a partition at a time)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    blocks: Callable[[], Iterable[np.ndarray]]

    @classmethod
    def of(cls, table) -> RowBlocks:
        """`table` (an array, a memory map, a CPU tensor or a RowBlocks) as RowBlocks."""
        if isinstance(table, RowBlocks):
            return table
        rows = table.numpy() if hasattr(table, "numpy") else np.asarray(table)
        return cls(rows.shape, rows.dtype, lambda: (rows[i:i + _BLOCK_ROWS] for i in range(0, len(rows), _BLOCK_ROWS)))

    def pieces(self, rows: int) -> Iterator[np.ndarray]:
        """The rows `rows` at a time (the last piece shorter) whatever sizes the blocks come in;
        one empty piece for a table without rows."""
        held: list[np.ndarray] = []
        count = 0
        for block in self.blocks():
            block = np.asarray(block)
            while len(block):
                take = min(rows - count, len(block))
                held.append(block[:take])
                count, block = count + take, block[take:]
                if count == rows:
                    yield np.concatenate(held) if len(held) > 1 else held[0]
                    held, count = [], 0
        if held or not self.shape[0]:
            yield np.concatenate(held) if held else np.empty((0, *self.shape[1:]), dtype=self.dtype)


def _parquet_table(names: Names, first: int, columns: dict[str, np.ndarray]):
    """The Parquet rows of ids first, first + 1, ...: id, name and each column's row, flattened."""
    import pyarrow as pa

    count = len(next(iter(columns.values())))
    ids = np.arange(first, first + count, dtype=np.int64)
    arrays = {"id": pa.array(ids), "name": names.take(ids).to_arrow()}
    for key, a in columns.items():
        a = np.ascontiguousarray(a, dtype=np.float32).reshape(count, -1)
        arrays[key] = pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), a.shape[1])
    return pa.table(arrays)


def _write_group(path: Path, cfg: TrainConfig, parquet: str, names: Names, tables: dict[str, RowBlocks]) -> None:
    """One pass over `tables` ({"entity"}, or {"relation"[, "projection"]}), a bounded block of rows
    at a time: each table's .npy file and the Parquet file `parquet` of their rows with `names`
    (columns `emb` and TransR's `projection`)."""
    import pyarrow.parquet as pq

    column = {"entity": "emb", "relation": "emb", "projection": "projection"}
    row_bytes = max(int(np.prod(t.shape[1:], dtype=np.int64)) * np.dtype(t.dtype).itemsize for t in tables.values())
    rows = max(1, _WRITE_BYTES // max(row_bytes, 1))
    files = {name: open(table_file(path, cfg, name), "wb") for name in tables}
    writer, first = None, 0
    try:
        for name, f in files.items():
            t = tables[name]
            np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(t.dtype)),
                                                     "fortran_order": False, "shape": tuple(t.shape)})
        for pieces in zip(*(t.pieces(rows) for t in tables.values())):
            for (name, f), piece in zip(files.items(), pieces):
                f.write(np.ascontiguousarray(piece, dtype=tables[name].dtype).tobytes())
            part = _parquet_table(names, first, {column[name]: piece for name, piece in zip(tables, pieces)})
            writer = writer or pq.ParquetWriter(path / parquet, part.schema)
            writer.write_table(part)
            first += len(pieces[0])
    finally:
        for f in files.values():
            f.close()
        if writer is not None:
            writer.close()
    if first != len(names):
        raise InputError(f"{parquet}: the tables hold {first:,} rows for {len(names):,} names")


@private_files()
def save_model(path: Path, cfg: TrainConfig, tables: dict[str, object], entities: Names | list[str],
               relations: Names | list[str]) -> None:
    """Write the embeddings (rows in the original ids: arrays, tensors or `RowBlocks`), the id maps,
    the Parquet tables and config.json into `path`, a bounded block of rows at a time. They are
    written in a hidden sibling folder renamed to `path` when complete: a failed save (a full
    disk) leaves nothing half-written there."""
    entities, relations = Names.of(entities), Names.of(relations)
    tables = {name: RowBlocks.of(t) for name, t in tables.items()}
    need = sum(int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize for t in tables.values())
    check_space(path.parent, 2 * need + 32 * len(entities), f"the model {path} (its .npy and Parquet tables)")
    partial = path.with_name(f".{path.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        _write_group(partial, cfg, ENTITY_TABLE, entities, {"entity": tables["entity"]})
        if "relation" in tables:  # (a model saved without it is refused when read back)
            _write_group(partial, cfg, RELATION_TABLE, relations,
                         {n: tables[n] for n in ("relation", "projection") if n in tables})
        write_dict(partial / ENTITY_DICT, entities)
        write_dict(partial / RELATION_DICT, relations)
        conf = cfg.to_dict()
        conf.update(n_entities=len(entities), n_relations=len(relations), emap_file=ENTITY_DICT,
                    rmap_file=RELATION_DICT, **{theirs: conf[ours] for theirs, ours in DGLKE_KEYS.items()})
        (partial / "config.json").write_text(json.dumps(conf, indent=4))
        partial.rename(path)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


@dataclass
class ModelFolder:
    """A model folder's config.json, read: the training settings, where the tables are and what
    `emap_file` / `rmap_file` ("entity" / "relation") name."""

    root: Path
    cfg: TrainConfig
    name_files: dict[str, str]

    def table_file(self, table: str) -> Path:
        """Where `table` ("entity", "relation", "projection") is (`table_file`)."""
        return table_file(self.root, self.cfg, table)

    def names(self, table: str, flag: str, data_path: str | None = None,
              delimiter: str | None = None) -> tuple[Path, Names]:
        """The names file of `table` ("entity" or "relation") and its names: the config's file as an
        absolute path, in the model folder (distgraph's, TAB-separated), or in the data folder
        (`data_path`, else the config's; then its dataset folder, as built_in data keeps them) in the
        data's delimiter, as DGL-KE writes them; one error naming the paths tried and `flag` if none is."""
        name, data = Path(self.name_files[table]), Path(data_path or self.cfg.data_path)
        sep = delimiter or self.cfg.delimiter
        tried = [(name, sep)] if name.is_absolute() else [(self.root / name, "\t"), (data / name, sep),
                                                          (data / self.cfg.dataset / name, sep)]
        for path, delim in tried:
            if path.is_file():
                return path, read_dict(path, delim)
        raise InputError(f"no {table} names for the model in {self.root}: {_NAME_KEYS[table][0]} {name} is not at "
                         f"{', '.join(str(p) for p, _ in tried)}; pass {flag}")


def read_folder(path: str | Path) -> ModelFolder:
    """The config.json of a folder written by `save_model` or by DGL-KE's `dglke_train` (whose
    keys stand in for ours where ours are absent)."""
    root = Path(path)
    conf_file = root / "config.json"
    if not conf_file.is_file():
        raise InputError(f"{conf_file} does not exist: --model_path must be a folder written by `distgraph kge train` "
                         f"or dglke_train (e.g. ckpts/TransE_l2_FB15k_0)")
    try:
        conf = json.loads(conf_file.read_text())
        conf = {**{ours: conf[theirs] for theirs, ours in DGLKE_KEYS.items() if theirs in conf}, **conf}
        cfg = TrainConfig(**{f.name: conf[f.name] for f in fields(TrainConfig) if f.name in conf})
        name_files = {table: conf.get(key) or default for table, (key, default) in _NAME_KEYS.items()}
    except (ValueError, TypeError) as exc:  # also a config.json that is not an object
        raise InputError(f"{conf_file} is not a config.json written by `distgraph kge train` or dglke_train: "
                         f"{exc}") from None
    return ModelFolder(root, cfg, name_files)


def check_names(names_file: Path, count: int, table_path: Path, rows: int) -> None:
    """Refuse names that do not name each row of their table once."""
    if count != rows:
        raise InputError(f"{names_file} names {count:,} objects but {table_path} has {rows:,} rows: they are not "
                         f"that table's names")


def model_table_names(table_path: Path, flag: str) -> tuple[Path, Names] | None:
    """The names file and names of a saved model's entity or relation table (`ModelFolder.names`),
    from the config.json beside it; None when `table_path` is no such table."""
    if not (table_path.parent / "config.json").is_file():
        return None
    folder = read_folder(table_path.parent)
    table = next((t for t in _NAME_KEYS if folder.table_file(t).name == table_path.name), None)
    return None if table is None else folder.names(table, flag)


@dataclass
class SavedModel:
    """A model read back from disk: its folder (settings, where its names are) and its tables (name -> rows)."""

    folder: ModelFolder
    tables: dict[str, np.ndarray]

    @property
    def cfg(self) -> TrainConfig:
        """The training settings."""
        return self.folder.cfg

    def names(self, table: str, flag: str, data_path: str | None = None,
              delimiter: str | None = None) -> tuple[Path, Names]:
        """`ModelFolder.names`, checked to name every row of the table."""
        path, names = self.folder.names(table, flag, data_path, delimiter)
        check_names(path, len(names), self.folder.table_file(table), len(self.tables[table]))
        return path, names


def load_model(path: str | Path) -> SavedModel:
    """Read a directory written by `save_model` or by dglke_train; a table with non-finite rows is refused."""
    folder = read_folder(path)
    cfg = folder.cfg
    model = check_model(cfg.model_name, cfg.hidden_dim, cfg.double_ent, cfg.double_rel)
    tables = {}
    for name, width in table_widths(model, cfg.hidden_dim, cfg.double_ent, cfg.double_rel).items():
        f = folder.table_file(name)
        if not f.is_file():
            raise InputError(f"{f} does not exist: the model was saved without embeddings (--no_save_emb?)")
        try:
            tables[name] = np.load(f, allow_pickle=False)
        except ValueError as exc:
            raise InputError(f"{f} is not a readable .npy table ({exc}); train the model again") from None
        if tables[name].ndim != 2 or tables[name].shape[1] != width or tables[name].dtype != np.float32:
            raise InputError(f"{f} holds {tables[name].dtype} rows of shape {tables[name].shape}, not the float32 "
                             f"rows of width {width} that config.json describes; train the model again")
    check_finite(tables, f"the model in {folder.root}")
    return SavedModel(folder, tables)

"""The on-disk partition format: `<out>/<graph>.json` plus one `.npy` per array.

Reading validates everything up front (file presence, JSON counts against array shapes
and dtypes), so a bad partition fails at load with the file named, not deep in training.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PartitionError
from ..malloc import huge_pages

if TYPE_CHECKING:
    import numpy as np

FORMAT_VERSION = 2  # 2: a partition's "eids" may be null (its in-edges are exactly its edge range)
READABLE_VERSIONS = (1, 2)
PART_METHODS = ("metis", "kaminpar", "random")
_NAME = re.compile(r"[A-Za-z0-9_\-]+")


def check_name(name: str, what: str, allow_dot: bool = False) -> str:
    """Names become file names: letters, digits, '_', '-'; no '.' in type and data names,
    which '.' separates in `node.<ntype>.<name>.npy` (so "a"/"b.c" and "a.b"/"c" cannot collide)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name.replace(".", "") if allow_dot else name):
        allowed = "letters, digits, '_', '-' or '.'" if allow_dot else "letters, digits, '_' or '-' (no '.')"
        raise PartitionError(f"{what} {name!r} cannot be used in partition file names; rename it using {allowed}")
    return name


def etype_key(c: tuple[str, str, str]) -> str:
    """Canonical edge type as a JSON key / file-name part: 'src:rel:dst'."""
    return ":".join(c)


def part_files(p: int, node_data: dict, edge_data: dict, typed: bool = False) -> dict[str, Any]:
    """Relative paths of partition p's arrays."""
    d = f"part{p}"
    return {
        "global_nid": f"{d}/global_nid.npy",  # local id -> global (new homogeneous) id; owned first
        "indptr": f"{d}/indptr.npy",  # CSC over local destinations
        "indices": f"{d}/indices.npy",  # local source id per in-edge
        "eids": f"{d}/eids.npy",  # global edge id per in-edge; null when they are the partition's edge range
        "out_degree": f"{d}/out_degree.npy",  # out-degree of each owned node (needs the whole graph)
        # several edge types: a node's in-edges are one run per type, starting at typed_indptr[node * T + type]
        "typed_indptr": f"{d}/typed_indptr.npy" if typed else None,
        "node_data": {t: {k: f"{d}/node.{t}.{k}.npy" for k in names} for t, names in node_data.items()},
        "edge_data": {e: {k: f"{d}/edge.{e}.{k}.npy" for k in names} for e, names in edge_data.items()},
    }


@dataclass(frozen=True)
class DataSpec:
    """One node or edge data array: its dtype and the shape of a row."""

    dtype: str
    shape: tuple[int, ...]

    def json(self) -> dict:
        return {"dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class PartMeta:
    """One partition as the config lists it: its counts and its files (`part_files`)."""

    part_id: int
    num_inner_nodes: int
    num_local_nodes: int
    num_inner_edges: int
    num_local_edges: int
    files: dict

    def file(self, name: str) -> str | None:
        return self.files.get(name)

    def json(self) -> dict:
        return {"part_id": self.part_id, "num_inner_nodes": self.num_inner_nodes,
                "num_local_nodes": self.num_local_nodes, "num_inner_edges": self.num_inner_edges,
                "num_local_edges": self.num_local_edges, **self.files}


COUNTS = ("num_inner_nodes", "num_local_nodes", "num_inner_edges", "num_local_edges")


def config_json(graph_name: str, num_nodes: int, num_edges: int, part_method: str, halo_hops: int,
                ntypes: list[str], canonical_etypes: list, node_map: dict, edge_map: dict, node_data: dict,
                edge_data: dict, mapping: dict, partitions: list[PartMeta]) -> dict:
    """The `<graph>.json` of a partitioning (what `PartitionConfig` reads back)."""
    return {
        "format_version": FORMAT_VERSION, "graph_name": graph_name, "num_nodes": num_nodes, "num_edges": num_edges,
        "part_method": part_method, "num_parts": len(partitions), "halo_hops": halo_hops, "ntypes": ntypes,
        "etypes": [list(c) for c in canonical_etypes], "node_map": node_map, "edge_map": edge_map,
        "node_data": {t: {k: spec.json() for k, spec in d.items()} for t, d in node_data.items()},
        "edge_data": {e: {k: spec.json() for k, spec in d.items()} for e, d in edge_data.items()},
        "mapping": mapping, "partitions": [p.json() for p in partitions],
    }


def _get(cfg: dict, key: str, path: Path):
    if key not in cfg:
        raise PartitionError(f"{path} has no {key!r} entry; it is not a distgraph partition config "
                             f"(re-run `distgraph partition`)")
    return cfg[key]


@dataclass
class PartitionConfig:
    """The parsed and checked `<graph>.json`."""

    path: Path
    raw: dict

    @classmethod
    def load(cls, part_config: str | Path) -> "PartitionConfig":
        path = Path(part_config)
        if not path.is_file():
            raise PartitionError(f"partition config {path} does not exist; pass the .json written by `distgraph partition`")
        try:
            raw = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PartitionError(f"partition config {path} is not valid JSON ({exc}); re-run `distgraph partition`") from None
        if not isinstance(raw, dict):
            raise PartitionError(f"partition config {path} must hold a JSON object")
        version = _get(raw, "format_version", path)
        if version not in READABLE_VERSIONS:
            raise PartitionError(f"{path} has format_version {version}; this distgraph reads "
                                 f"{' and '.join(map(str, READABLE_VERSIONS))}. "
                                 f"Re-partition with this version")
        cfg = cls(path, raw)
        cfg._check()
        return cfg

    def _check(self) -> None:
        p = self.path
        k = self.num_parts
        if len(_get(self.raw, "partitions", p)) != k:
            raise PartitionError(f"{p}: num_parts is {k} but {len(self.raw['partitions'])} partitions are listed")
        for kind, total_key in (("node_map", "num_nodes"), ("edge_map", "num_edges")):
            total = 0
            for name, ranges in _get(self.raw, kind, p).items():
                if not (isinstance(ranges, list) and len(ranges) == k and all(
                        isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r) and r[0] <= r[1]
                        for r in ranges)):
                    raise PartitionError(f"{p}: {kind}[{name!r}] must list one [start, end) per partition ({k})")
                total += sum(e - s for s, e in ranges)
            if total != _get(self.raw, total_key, p):
                raise PartitionError(f"{p}: the {kind} ranges cover {total} ids but {total_key} is {self.raw[total_key]}")

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def num_parts(self) -> int:
        return int(_get(self.raw, "num_parts", self.path))

    @property
    def graph_name(self) -> str:
        return str(_get(self.raw, "graph_name", self.path))

    @property
    def ntypes(self) -> list[str]:
        return list(_get(self.raw, "ntypes", self.path))

    @property
    def canonical_etypes(self) -> list[tuple[str, str, str]]:
        return [tuple(c) for c in _get(self.raw, "etypes", self.path)]

    def check_machines(self, num_machines: int, ip_config: str) -> None:
        """ip_config lists one machine per partition (machine m serves partition m)."""
        if self.num_parts != num_machines:
            raise PartitionError(f"{ip_config} lists {num_machines} machines but {self.path} has {self.num_parts} "
                                 f"partitions; write one ip_config line per partition")

    def fingerprint(self) -> str:
        """Identifies the partitioning (graph, number of parts, every id range): a checkpoint
        taken on one loads only onto the same."""
        key = {k: self.raw.get(k) for k in ("graph_name", "num_parts", "node_map", "edge_map")}
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    def part(self, p: int) -> PartMeta:
        if not 0 <= p < self.num_parts:
            raise PartitionError(f"partition id {p} is out of range: {self.path} has {self.num_parts} partitions")
        raw = self.raw["partitions"][p]
        try:
            counts = {k: int(raw[k]) for k in COUNTS}
        except (KeyError, TypeError, ValueError):
            raise PartitionError(f"{self.path}: partition {p} lacks its node/edge counts; re-partition") from None
        files = {k: v for k, v in raw.items() if k not in COUNTS and k != "part_id"}
        return PartMeta(p, files=files, **counts)

    @cached_property
    def node_map(self) -> dict[str, list[tuple[int, int]]]:
        """Per node type, the [start, end) of its per-type ids each partition owns."""
        return {t: [tuple(r) for r in ranges] for t, ranges in self.raw["node_map"].items()}

    @cached_property
    def edge_map(self) -> dict[str, list[tuple[int, int]]]:
        """Per edge type ('src:rel:dst'), the [start, end) of its per-type ids each partition owns."""
        return {e: [tuple(r) for r in ranges] for e, ranges in self.raw["edge_map"].items()}

    @cached_property
    def node_data(self) -> dict[str, dict[str, DataSpec]]:
        return _specs(self.raw.get("node_data", {}), self.path)

    @cached_property
    def edge_data(self) -> dict[str, dict[str, DataSpec]]:
        """Per edge type ('src:rel:dst') with data, name -> spec."""
        return _specs(self.raw.get("edge_data", {}), self.path)

    @property
    def halo_hops(self) -> int:
        return int(self.raw.get("halo_hops", 1))

    def mapping_file(self, kind: str, key: str) -> str | None:
        """The file of original ids of node type (kind "node") or edge type ('src:rel:dst') `key`."""
        return self.raw.get("mapping", {}).get(kind, {}).get(key)

    def files(self) -> list[Path]:
        """Every file this config lists: each partition's arrays, the id maps and the
        attachments (files a workload keeps beside the partition, e.g. a KG's dictionaries)."""
        found: list[Path] = []

        def walk(v: Any) -> None:
            if isinstance(v, str):
                found.append(self.dir / v)
            elif isinstance(v, (dict, list)):
                for x in (v.values() if isinstance(v, dict) else v):
                    walk(x)

        walk([{k: v for k, v in meta.items() if k != "part_id"} for meta in self.raw["partitions"]])
        walk(self.raw.get("mapping", {}))
        walk(self.raw.get("attachments", {}))
        return found

    def attachment(self, key: str) -> tuple[dict, dict]:
        """What a workload attached to the partition under `key`: its settings, and its files
        (paths relative to the config, which `files()` lists)."""
        found = self.raw.get(key), self.raw.get("attachments", {}).get(key)
        if not all(isinstance(x, dict) for x in found):
            raise PartitionError(f"{self.path} has no {key!r} attachment; partition it with the command made for "
                                 f"it (e.g. `distgraph kge partition` for knowledge graphs)")
        return found

    def part_files(self, p: int) -> list[Path]:
        """Every file partition `p` needs: its arrays and the config-wide id maps."""
        return PartitionConfig(self.path, {**self.raw, "partitions": [self.raw["partitions"][self.part(p).part_id]]}
                               ).files()

    def check_files(self, p: int) -> None:
        """Cheap check (no numpy) that partition `p`'s files are all there and none is truncated,
        so the launcher reports a bad copy before any process starts."""
        for f in self.part_files(p):
            if not f.is_file():
                raise PartitionError(f"partition file {f} is missing (listed in {self.path}); copy it or re-partition")
            if f.suffix == ".npy":  # (attachments may be other files)
                npy_check(f)

    def load_array(self, rel: str, *, rows: int | None = None, dtype: str | None = None,
                   mmap: bool = True) -> np.ndarray:
        """Open one array, checking it exists, is intact, and has the expected rows and dtype."""
        import numpy as np

        f = self.dir / rel
        if not f.is_file():
            raise PartitionError(f"partition file {f} is missing (listed in {self.path}); copy it or re-partition")
        try:
            # copy-on-write: as cheap as read-only until written, and writing never segfaults
            a = np.load(f, mmap_mode="c" if mmap else None, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise PartitionError(f"partition file {f} is unreadable or truncated ({exc}); copy it again or re-partition") from None
        if rows is not None and (a.ndim == 0 or a.shape[0] != rows):
            raise PartitionError(f"partition file {f} has shape {a.shape} but {self.path} says {rows} rows; "
                                 f"the files and the config disagree: re-partition or copy both again")
        if dtype is not None and a.dtype != np.dtype(dtype):
            raise PartitionError(f"partition file {f} has dtype {a.dtype} but {self.path} says {dtype}")
        if mmap:
            huge_pages(a)
        return a


def _specs(raw: dict, path: Path) -> dict[str, dict[str, DataSpec]]:
    try:
        return {t: {k: DataSpec(str(v["dtype"]), tuple(int(x) for x in v["shape"])) for k, v in d.items()}
                for t, d in raw.items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise PartitionError(f"{path}: a node_data/edge_data entry lacks its dtype or shape; re-partition") from None


_NPY_MAGIC = b"\x93NUMPY"


def npy_check(path: Path) -> tuple[int, ...]:
    """The shape in a `.npy` header, after checking the file holds all the bytes it declares."""
    def bad(why: str) -> PartitionError:
        return PartitionError(f"partition file {path} is unreadable or truncated ({why}); copy it again or "
                              f"re-partition")

    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 10 or head[:6] != _NPY_MAGIC:
            raise bad("not a .npy file")
        size_bytes = 2 if head[6] == 1 else 4
        header_len = int.from_bytes(head[8:8 + size_bytes], "little")
        f.seek(8 + size_bytes)
        text = f.read(header_len)
    try:
        header = ast.literal_eval(text.decode("latin1"))
        shape, descr = tuple(header["shape"]), header["descr"]
        itemsize = int(descr[2:])
    except (ValueError, SyntaxError, KeyError, TypeError) as exc:
        raise bad(f"bad header: {exc}") from None
    expected = 8 + size_bytes + header_len + itemsize * _prod(shape)
    actual = path.stat().st_size
    if actual < expected:
        raise bad(f"{actual} bytes, its header declares {expected}")
    return shape


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n

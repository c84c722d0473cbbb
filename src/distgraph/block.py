"""`Block`: one layer's bipartite message-flow graph, the unit a GNN layer consumes (DGL's
`DGLBlock`). A leaf module: layers import it without loading the runtime.

Destination nodes come first among the source nodes (so `h[:num_dst_nodes()]` is the
destinations' own input), ids are global, and `edge_index` is PyTorch Geometric's
(2, num_edges) [source row, destination row] over the block's local numbering, with edges
grouped by destination row (so aggregation is a segmented reduction). As in DGL,
`srcdata[NID]` / `dstdata[NID]` hold the nodes' graph ids and `edata[EID]` the edges'.
"""

from __future__ import annotations

import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from .errors import InputError
from .ids import DEFAULT_ETYPE, DEFAULT_NTYPE, int64_contiguous, resolve_etype
from .local_scope import LocalScope
from .native import kernels

NID = "_ID"  # DGL's key of node ids in a block's or graph's node data
EID = "_ID"  # ... and of edge ids in its edge data (the same string in DGL)


class TypedData(MutableMapping):
    """The data of one side of a block (or of its edges), one dict per node (edge) type: with
    one type a key maps to a tensor, with several to `{type: tensor}` (DGL's data views)."""

    def __init__(self, frames: dict):
        self.frames = frames

    def __getitem__(self, key: str):
        if len(self.frames) == 1:
            return next(iter(self.frames.values()))[key]
        found = {t: f[key] for t, f in self.frames.items() if key in f}
        if not found:
            raise KeyError(key)
        return found

    def __setitem__(self, key: str, value) -> None:
        if isinstance(value, dict):
            unknown = set(value) - set(self.frames)
            if unknown:
                raise InputError(f"unknown types {sorted(unknown)}; this block has {list(self.frames)}")
            for t, v in value.items():
                self.frames[t][key] = v
        elif len(self.frames) == 1:
            next(iter(self.frames.values()))[key] = value
        else:
            raise InputError(f"this block has types {list(self.frames)}: assign a dict {{type: tensor}}")

    def __delitem__(self, key: str) -> None:
        hit = [f for f in self.frames.values() if key in f]
        if not hit:
            raise KeyError(key)
        for f in hit:
            del f[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(k for f in self.frames.values() for k in f))

    def __len__(self) -> int:
        return len(list(iter(self)))


class TypeSpace:
    """`block.srcnodes` / `dstnodes` / `edges` (a pair graph's `nodes` / `edges`): `[type].data`
    is that type's data (`resolve` turns the key into the frames' own, e.g. a short edge type
    name); called, the graph's method of that name (`srcnodes(ntype)`, `edges(form, ...)`)."""

    class _View:
        def __init__(self, data: dict):
            self.data = data

    def __init__(self, frames: dict, call: Callable, owner: str, resolve: Callable | None = None):
        self._frames, self._call, self._owner, self._resolve = frames, call, owner, resolve

    def __getitem__(self, key) -> "TypeSpace._View":
        return self._View(type_frame(self._frames, self._resolve(key) if self._resolve else key, self._owner))

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)


def type_frame(frames: dict, key, owner: str) -> dict:
    """The data of type `key` in a block's or pair graph's per-type `frames`; one clear error
    naming the types it has otherwise."""
    if key not in frames:
        raise InputError(f"unknown type {key!r}; this {owner} has {list(frames)}")
    return frames[key]


def edge_type_of(etype, edge_frames: dict, canonical_etypes: list, owner: str) -> tuple[str, str, str]:
    """The canonical edge type `etype` names; None names the only one there is."""
    if etype is None:
        if len(edge_frames) != 1:
            raise InputError(f"this {owner} has edge types {canonical_etypes}; pass etype=")
        return next(iter(edge_frames))
    return resolve_etype(etype, canonical_etypes)


def edge_view(edge_index: torch.Tensor, form: str):
    """DGL's `edges(form)` of a (2, E) local edge index: 'uv', 'eid' (positions) or 'all'."""
    u, v = edge_index[0], edge_index[1]
    if form == "uv":
        return u, v
    ids = torch.arange(edge_index.shape[1], device=edge_index.device)
    if form == "eid":
        return ids
    if form == "all":
        return u, v, ids
    raise InputError(f"form must be 'uv', 'eid' or 'all', got {form!r}")


@dataclass
class BlockTypes:
    """The types of a heterogeneous graph's block, one entry per node or edge of the block.
    Per-type edge ids are worked out when first asked for (`id_map`: the graph's id map, a
    partition book or a `Graph`)."""

    ntypes: list[str]
    canonical_etypes: list[tuple[str, str, str]]
    src_type: torch.Tensor  # node type id of each source (the destinations are the first ones)
    src_tid: torch.Tensor  # per-type id of each source
    etype: torch.Tensor  # edge type id of each edge
    edge_tid: torch.Tensor | None = None  # per-type id of each edge
    id_map: object | None = None

    def arrays(self) -> list[torch.Tensor]:
        return [self.src_type, self.src_tid, self.etype]

    def edge_ids(self, eids: torch.Tensor) -> torch.Tensor:
        """Per-type ids of the block's edges `eids` (their homogeneous ids), on their device
        (the id map works on the CPU)."""
        if self.edge_tid is None:
            if self.id_map is None:
                raise InputError("this block's per-type edge ids need its graph's id map (blocks from a loader have it)")
            self.edge_tid = self.id_map.map_to_per_etype(eids.cpu())[1].to(eids.device)
        return self.edge_tid


class Block(LocalScope):
    """A bipartite message-flow graph: `src_nodes` (global ids; the first `num_dst_nodes()` are
    `dst_nodes`), `edge_index` (2, E) local (source row, destination row), `eids` global.

    A heterogeneous graph's block keeps that homogeneous view (for layers that take one, with
    `edge_type()` and `src_type()`) and adds DGL's typed one from `types`: per node type,
    the sources (in their order here, so each type's destinations come first among its
    sources) and their per-type ids in `srcdata[NID]`; per edge type, `edges(etype=...)` in
    per-type local indices and `edata[EID]` in per-type ids; `relation(etype)` as a block.
    `local_var()` / `local_scope()` keep data assigned meanwhile away from this block (DGL's)."""

    is_block = True
    _frame_attrs = ("_frames",)

    def __init__(self, src_nodes: torch.Tensor, dst_nodes: torch.Tensor, edge_index: torch.Tensor,
                 eids: torch.Tensor, types: BlockTypes | None = None):
        self.src_nodes, self.dst_nodes, self.edge_index, self.eids = src_nodes, dst_nodes, edge_index, eids
        self.types = types
        self._frames: dict[str, dict] = {}  # 'src', 'dst', 'edge': per-type data, made on first use

    def side_data(self, side: str) -> dict:
        """The per-type data dicts of one side ('src', 'dst', 'edge'), with the ids of each type
        (typed views are built on first use: a sampler's intermediate blocks never need them)."""
        frames = self._frames.get(side)
        if frames is None:
            frames = self._frames[side] = self._ids_by_type(side)
        return frames

    def _ids_by_type(self, side: str) -> dict:
        t = self.types
        if t is None:
            return {"src": {DEFAULT_NTYPE: {NID: self.src_nodes}}, "dst": {DEFAULT_NTYPE: {NID: self.dst_nodes}},
                    "edge": {DEFAULT_ETYPE: {EID: self.eids}}}[side]
        if side == "edge":
            runs = group_by_kind(t.etype, t.edge_ids(self.eids), len(t.canonical_etypes))
            return {c: {EID: run} for c, run in zip(t.canonical_etypes, runs)}
        n = self.src_nodes.numel() if side == "src" else self.dst_nodes.numel()
        runs = group_by_kind(t.src_type[:n], t.src_tid[:n], len(t.ntypes))
        return {ntype: {NID: run} for ntype, run in zip(t.ntypes, runs)}

    @property
    def _src(self) -> dict:
        return self.side_data("src")

    @property
    def _dst(self) -> dict:
        return self.side_data("dst")

    @property
    def _edges(self) -> dict:
        return self.side_data("edge")

    # ------------------------------------------------------------- DGL's view
    @property
    def srcdata(self) -> TypedData:
        return TypedData(self._src)

    @property
    def dstdata(self) -> TypedData:
        return TypedData(self._dst)

    @property
    def edata(self) -> TypedData:
        return TypedData(self._edges)

    @property
    def srcnodes(self) -> TypeSpace:
        return TypeSpace(self._src, lambda ntype=None: self._positions(self.num_src_nodes(ntype)), "block")

    @property
    def dstnodes(self) -> TypeSpace:
        return TypeSpace(self._dst, lambda ntype=None: self._positions(self.num_dst_nodes(ntype)), "block")

    def _positions(self, n: int) -> torch.Tensor:
        """0 .. n-1 on this block's device."""
        return torch.arange(n, device=self.src_nodes.device)

    @property
    def srctypes(self) -> list[str]:
        return list(self._src)

    @property
    def dsttypes(self) -> list[str]:
        return list(self._dst)

    @property
    def ntypes(self) -> list[str]:
        """Source types then destination types, as DGL lists them for a block."""
        return self.srctypes + self.dsttypes

    @property
    def canonical_etypes(self) -> list[tuple[str, str, str]]:
        return list(self._edges)

    @property
    def etypes(self) -> list[str]:
        return [c[1] for c in self.canonical_etypes]

    def num_src_nodes(self, ntype: str | None = None) -> int:
        if ntype is None:
            return int(self.src_nodes.numel())
        return int(type_frame(self._src, ntype, "block")[NID].numel())

    def num_dst_nodes(self, ntype: str | None = None) -> int:
        if ntype is None:
            return int(self.dst_nodes.numel())
        return int(type_frame(self._dst, ntype, "block")[NID].numel())

    def num_edges(self, etype=None) -> int:
        if etype is None:
            return int(self.eids.numel())
        return int(type_frame(self._edges, self._etype(etype), "block")[EID].numel())

    number_of_src_nodes = num_src_nodes
    number_of_dst_nodes = num_dst_nodes
    number_of_edges = num_edges

    def _etype(self, etype) -> tuple[str, str, str]:
        return edge_type_of(etype, self._edges, self.canonical_etypes, "block")

    @property
    def edges(self) -> TypeSpace:
        """DGL's `edges`: `edges[etype].data` is that edge type's data (`edata[EID]`: per-type
        ids), `edges(form, order, etype)` the edges (`edge_list`)."""
        return TypeSpace(self._edges, self.edge_list, "block", self._etype)

    def edge_list(self, form: str = "uv", order: str = "eid", etype=None):
        """Local (source, destination) rows of every edge ('uv'), the edge positions ('eid'), or
        all three ('all'), in this block's edge order; on a typed block, those of `etype`, in
        per-type local indices."""
        if self.types is None:
            return edge_view(self.edge_index, form)
        return edge_view(self._typed_edges(self._etype(etype))[0], form)

    def _typed_edges(self, c: tuple[str, str, str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(local per-type edge index, positions in this block) of the edges of type `c`."""
        at = torch.nonzero(self.types.etype == self.types.canonical_etypes.index(c)).flatten()
        index = self._type_index()
        return torch.stack([index[self.edge_index[0][at]], index[self.edge_index[1][at]]]), at

    def _type_index(self) -> torch.Tensor:
        """Each source's position among the sources of its type (destinations: also among the
        destinations of their type, since they come first)."""
        if getattr(self, "_index", None) is None:
            kinds = self.types.src_type
            order = torch.argsort(kinds, stable=True)
            counts = torch.bincount(kinds, minlength=len(self.types.ntypes))
            starts = torch.cumsum(counts, 0) - counts
            index = torch.empty_like(order)
            index[order] = self._positions(order.numel()) - starts[kinds[order]]
            self._index = index
        return self._index

    def relation(self, etype) -> "Block":
        """The block of one edge type: all sources of its source type, all destinations of its
        destination type (global ids), its edges in their local indices."""
        c = self._etype(etype)
        index, at = self._typed_edges(c)
        nd = self.dst_nodes.numel()
        src_kind, dst_kind = (self.types.ntypes.index(t) for t in (c[0], c[2]))
        src = self.src_nodes[self.types.src_type == src_kind]
        dst = self.dst_nodes[self.types.src_type[:nd] == dst_kind]
        return Block(src, dst, index, self.eids[at])

    def edge_type(self) -> torch.Tensor:
        """The type id (in `canonical_etypes` order) of each edge of the homogeneous view."""
        if self.types is not None:
            return self.types.etype
        return torch.zeros(self.num_edges(), dtype=torch.int64, device=self.eids.device)

    def src_type(self) -> torch.Tensor:
        """The type id (in node-type order) of each source of the homogeneous view."""
        if self.types is not None:
            return self.types.src_type
        return torch.zeros(self.num_src_nodes(), dtype=torch.int64, device=self.src_nodes.device)

    def src_homogeneous(self, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        """One row per source of the homogeneous view from {node type: rows of that type's
        sources, in their order} (all of one width)."""
        first = next(iter(feats.values()))
        out = first.new_zeros((self.num_src_nodes(), *first.shape[1:]))
        for t, rows in feats.items():
            out[self.types.src_type == self.types.ntypes.index(t)] = rows
        return out

    def dst_per_type(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """{node type: its destinations' rows} of one row per destination of the homogeneous view."""
        kinds = self.types.src_type[: self.num_dst_nodes()]
        return {t: h[kinds == i] for i, t in enumerate(self.types.ntypes) if bool((kinds == i).any())}

    def in_degrees(self, v=None, etype=None) -> torch.Tensor:
        if self.types is not None and etype is not None:
            c = self._etype(etype)
            index, _ = self._typed_edges(c)
            deg = torch.bincount(index[1], minlength=self.num_dst_nodes(c[2]))
        else:
            deg = torch.bincount(self.edge_index[1], minlength=self.num_dst_nodes())
        return deg if v is None else deg[torch.as_tensor(v, dtype=torch.int64, device=deg.device)]

    def to(self, device, **kwargs) -> "Block":
        """This block with its arrays (ids and data) on `device` (itself when they are there);
        `kwargs` go to each `Tensor.to` (`non_blocking=True`, ...)."""
        device = torch.device(device)
        if all(t.device == device for t in (self.src_nodes, self.edge_index)):
            return self
        return self.map_arrays(once_each(lambda t: t.to(device, **kwargs)))

    def map_arrays(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> "Block":
        """A block whose every array (ids, types and data) is `fn` of this block's: how a block
        is moved to a device, through pinned buffers or not (`distributed.transfer`). Wrap
        `fn` in `once_each` to keep arrays that are one tensor here one tensor there."""
        t = self.types
        types = None if t is None else BlockTypes(t.ntypes, t.canonical_etypes, *(fn(a) for a in t.arrays()),
                                                  None if t.edge_tid is None else fn(t.edge_tid), t.id_map)
        out = Block(*(fn(a) for a in (self.src_nodes, self.dst_nodes, self.edge_index, self.eids)), types)
        out._frames = {side: {k: {name: fn(v) for name, v in f.items()} for k, f in frames.items()}
                       for side, frames in self._frames.items()}
        return out

    def data_frames(self, made_only: bool = False) -> dict[str, dict]:
        """The per-type data dicts of the sources ('src'), destinations ('dst') and edges ('edge');
        with `made_only`, only the sides already used (the only ones that can hold data)."""
        sides = list(self._frames) if made_only else ["src", "dst", "edge"]
        return {side: self.side_data(side) for side in sides}

    # ------------------------------------------------------------ aggregation
    def size(self) -> tuple[int, int]:
        """(num_src_nodes, num_dst_nodes): the `size` PyG's bipartite message passing takes."""
        return self.num_src_nodes(), self.num_dst_nodes()

    def dst_offsets(self) -> torch.Tensor:
        """Start of each destination's edges in `edge_index` (edges are grouped by destination)."""
        deg = self.in_degrees()
        return torch.cumsum(deg, 0) - deg

    def __repr__(self) -> str:
        return f"Block(num_src_nodes={self.num_src_nodes()}, num_dst_nodes={self.num_dst_nodes()}, " \
               f"num_edges={self.num_edges()})"


def once_each(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """`fn`, giving a tensor it has already been given the result it gave then: a mini-batch
    holds some ids twice (a block's destinations are its sources' first rows, the input nodes
    are the first block's sources), and a copy keeps them one tensor (and one transfer)."""
    done: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def apply(t: torch.Tensor) -> torch.Tensor:
        hit = done.get(id(t))
        if hit is None:  # (the tensor is kept in `done`, so its id is not reused meanwhile)
            hit = done[id(t)] = (t, fn(t))
        return hit[1]

    return apply


def group_by_kind(kinds: torch.Tensor, values: torch.Tensor, num_kinds: int) -> list[torch.Tensor]:
    """`values` split by their kind (in [0, num_kinds)), each part in its original order: one
    counting pass in C when built and the arrays are in host memory (num_kinds boolean masks
    otherwise)."""
    lib = kernels()
    if lib is None or values.device.type != "cpu":  # the C pass reads host memory
        return [values[kinds == k] for k in range(num_kinds)]
    kinds, values = kinds.to(torch.int64).contiguous(), values.to(torch.int64).contiguous()
    counts, out = torch.zeros(num_kinds + 1, dtype=torch.int64), torch.empty_like(values)
    if lib.group_by_kind(values.numel(), kinds.data_ptr(), values.data_ptr(), num_kinds, counts.data_ptr(),
                         out.data_ptr()) < 0:
        raise InputError(f"kinds must lie in [0, {num_kinds})")
    bounds = counts.tolist() + [values.numel()]
    return [out[bounds[k]:bounds[k + 1]] for k in range(num_kinds)]


def with_types(block: Block, types, etype: torch.Tensor | None = None) -> Block:
    """`block` with the typed view of a heterogeneous graph whose ids `types` maps (a partition
    book or a `Graph`: `map_to_per_ntype`, `map_to_per_etype`); `etype`, each edge's type
    when the sampler knows it, spares looking it up."""
    src_type, src_tid = types.map_to_per_ntype(block.src_nodes)
    edge_tid = None
    if etype is None:
        etype, edge_tid = types.map_to_per_etype(block.eids)
    return Block(block.src_nodes, block.dst_nodes, block.edge_index, block.eids,
                 BlockTypes(list(types.ntypes), [tuple(c) for c in types.canonical_etypes], src_type, src_tid, etype,
                            edge_tid, types))


def block_from_edges(dst_nodes: torch.Tensor, src: torch.Tensor, dst_row: torch.Tensor, eids: torch.Tensor,
                     etype: torch.Tensor | None = None, grouped: bool = False, room: torch.Tensor | None = None
                     ) -> Block | tuple[Block, torch.Tensor]:
    """Build a block from sampled edges: `src` global source ids, `dst_row` the row of each
    edge's destination in `dst_nodes` (distinct). Sources that are not destinations are
    appended after the destinations in order of first appearance (as DGL's `to_block`) once
    the edges are grouped by destination, keeping their order within one: the block depends
    on each destination's edges, not on the order they arrived in (the edges of several
    machines arrive as one sorted run each). With `etype` (each edge's type), returns the
    block and the types in its edge order; `grouped` says the rows are known to be ascending.
    `room`, a (2, len(src)) tensor whose second row is `dst_row` (its first free), becomes the
    block's edge index when the edges are grouped, the local ids written into its first row.
    (No torch call where none is needed: each lets another batch thread take Python's lock.)"""
    dst_nodes, src, dst_row, eids = (int64_contiguous(a) for a in (dst_nodes, src, dst_row, eids))
    grouped = grouped or dst_row.numel() <= 1 or bool((dst_row[1:] >= dst_row[:-1]).all())
    extra = None if etype is None else int64_contiguous(etype)
    into = room if grouped and room is not None and room.data_ptr() + 8 * src.numel() == dst_row.data_ptr() \
        and room.shape == (2, src.numel()) else None
    native = _relabel_native(dst_nodes, src, None if grouped else (dst_row, eids, extra), into)
    if native is not None:
        src_nodes, edge_index, regrouped = native
        if regrouped is not None:
            eids, extra = regrouped
        elif into is None:
            edge_index[1].copy_(dst_row)
    else:
        if not grouped:
            order = torch.argsort(dst_row, stable=True)
            src, dst_row, eids = (a.index_select(0, order) for a in (src, dst_row, eids))
            extra = None if extra is None else extra.index_select(0, order)
        src_nodes, src_row = _relabel_torch(dst_nodes, src)
        edge_index = torch.stack([src_row, dst_row])
    block = Block(src_nodes, dst_nodes, edge_index, eids)
    return block if etype is None else (block, extra)


def to_block(g, dst_nodes=None, include_dst_in_src: bool = True, src_nodes=None) -> Block:
    """DGL's `to_block` of a frontier `g` (what `sample_neighbors` returns, or anything with
    `edges()` and `edata[EID]` in global ids): the destinations are `dst_nodes` (default: the
    frontier's destinations, in order of first appearance), then the other sources."""
    if not include_dst_in_src or src_nodes is not None:
        raise InputError("to_block keeps the destinations first among the sources (include_dst_in_src=True, "
                         "src_nodes=None)")
    src, dst = g.edges()
    eids = g.edata[EID]
    if dst_nodes is None:
        dst_nodes = first_occurrences(dst)
    dst_nodes = torch.as_tensor(dst_nodes, dtype=torch.int64)
    row = rows_in(dst_nodes, dst, "dst_nodes must include every destination of the frontier's edges")
    return block_from_edges(dst_nodes, src, row, eids)


def first_positions(ids: torch.Tensor) -> torch.Tensor:
    """Ascending positions of the first occurrence of each distinct id (vectorised)."""
    return distinct_in_order(ids)[0]


def distinct_in_order(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ascending positions of the first occurrence of each distinct id, the index of each id's
    value among those firsts): the distinct ids in order of first appearance, and where each went."""
    uniq, inverse = torch.unique(ids, return_inverse=True)
    if uniq.numel() == ids.numel():
        return torch.arange(ids.numel()), torch.arange(ids.numel())
    first = torch.full((uniq.numel(),), ids.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(ids.numel()), reduce="amin")
    first, order = first.sort()
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel())
    return first, rank[inverse]


def first_occurrences(ids: torch.Tensor) -> torch.Tensor:
    """`ids` without repeats, each kept at its first position (the relabel's hash table in C, a
    sort otherwise)."""
    if ids.dtype == torch.int64 and ids.device.type == "cpu":
        native = _relabel_native(ids[:0], int64_contiguous(ids), None)
        if native is not None:
            return ids if native[0].numel() == ids.numel() else native[0]
    pos = first_positions(ids)
    return ids if pos.numel() == ids.numel() else ids[pos]


def rows_in(nodes: torch.Tensor, ids: torch.Tensor, what: str | None = None) -> torch.Tensor:
    """Position of each of `ids` in `nodes` (distinct); with `what`, an id that is not there
    is an error naming it, else every id must be there."""
    order = torch.argsort(nodes)
    pos = torch.searchsorted(nodes[order], ids).clamp_(max=max(nodes.numel() - 1, 0))
    if what is not None and ids.numel() and not bool((nodes[order][pos] == ids).all()):
        raise InputError(f"{what}")
    return order[pos]


_tables = threading.local()  # per thread: the C relabel's hash table, reused (see sampling.c)
_MAX_EPOCH = (1 << 23) - 1


def _relabel_native(dst: torch.Tensor, src: torch.Tensor, regroup: tuple | None, into: torch.Tensor | None = None):
    """In C (`native/sampling.c`): (distinct ids, a (2, len(src)) edge index whose first row is
    each source's local id, and with `regroup` = (rows, eids, extra or None) the eids and extra
    grouped by row, the edge index in that order with its second row the rows; without, the
    caller fills the second row, or `into` is the edge index, its second row already the rows);
    None when the kernels are not built or an id does not fit the table's tags."""
    lib = kernels()
    if lib is None:
        return None
    nd, ns = dst.numel(), src.numel()
    if into is None:
        buffer = torch.empty(nd + 3 * ns, dtype=torch.int64)  # one allocation: see `sample_uniform_native`
        nodes, edge_index = buffer[:nd + ns], buffer[nd + ns:].view(2, ns)
    else:
        nodes, edge_index = torch.empty(nd + ns, dtype=torch.int64), into
    local = edge_index[0]
    rows = eids = counts = out_rows = out_eids = extra = out_extra = None
    if regroup is not None:
        rows, eids, extra = regroup
        out_rows, out_eids = edge_index[1], torch.empty_like(eids)
        out_extra = None if extra is None else torch.empty_like(extra)
    ptr = lambda a: None if a is None else a.data_ptr()  # noqa: E731
    # the table grows (doubling) until the distinct ids fill at most half of it, and stays
    need = 1 << max(4, (2 * nd + 2).bit_length())
    while True:
        epoch = getattr(_tables, "epoch", _MAX_EPOCH) + 1
        if getattr(_tables, "cap", 0) < need or epoch > _MAX_EPOCH:  # grow, or start over when epochs run out
            cap = max(need, getattr(_tables, "cap", 0))
            _tables.table, _tables.cap, epoch = torch.zeros(2 * cap, dtype=torch.int64), cap, 1
        _tables.epoch = epoch
        if regroup is not None:
            counts = torch.zeros(nd + 1, dtype=torch.int64)
        n = lib.relabel(nd, dst.data_ptr(), ns, src.data_ptr(), _tables.cap, epoch, _tables.table.data_ptr(),
                        nodes.data_ptr(), local.data_ptr(), ptr(rows), ptr(eids), ptr(counts), ptr(out_rows),
                        ptr(out_eids), ptr(extra), ptr(out_extra))
        if n != -1:
            break
        need = 2 * _tables.cap
    if n == -4:
        return None  # an id beyond the table's tags (or negative): the torch path takes it
    if n == -2:
        raise InputError("the destination nodes of a block must be distinct")
    if n == -3:
        raise IndexError(f"destination rows must lie in [0, {nd})")
    return nodes[:n], edge_index, None if regroup is None else (out_eids, out_extra)


def _relabel_torch(dst: torch.Tensor, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(distinct ids: `dst` then new sources by first appearance, local id of each source)."""
    nd, ns = dst.numel(), src.numel()
    uniq, inverse = torch.unique(torch.cat([dst, src]), return_inverse=True)
    if torch.unique(inverse[:nd]).numel() < nd:
        raise InputError("the destination nodes of a block must be distinct")
    first = torch.full((uniq.numel(),), nd + ns, dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(nd + ns), reduce="amin")
    order = torch.argsort(first)  # local id -> index into uniq
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel())
    return uniq[order], local[inverse[nd:]]

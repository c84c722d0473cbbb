"""`DistGraph`: the partitioned graph as one graph, in standalone and distributed mode alike.

Node and edge data are `DistTensor`s over the data the servers publish; degrees and edge
endpoints are structure tensors published beside them; neighbour sampling groups seeds by
owner, samples this machine's seeds on the memory-mapped local partition and the others
on their owners' servers, all at once. Ids are the partitioned (new) ids; `orig_nids` and
`orig_eids` map them back to the input's ids.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import torch

from ..array_graph import TypeViews
from ..distributed.partition_data import IN_DEGREE, OUT_DEGREE, degree_dtype
from ..distributed.dist_tensor import DistTensor
from ..distributed.policy import (EdgePartitionPolicy, NodePartitionPolicy, edge_policy_str, graph_data_name,
                                  node_policy_str)
from ..distributed.runtime import JobClient, barrier, get_context
from ..errors import DistGraphError, InputError
from ..ids import DEFAULT_NTYPE, as_id_tensor, resolve_etype
from ..kvstore.store import KVStore
from ..partition import Partition, RangePartitionBook, load_partition
from ..partition.layout import DataSpec, PartitionConfig, etype_key
from ..rpc.wire import parse_dtype
from ..sampling import SampledEdges
from ..sampling.local import MalformedRuns, SeedRuns, sample_partitions
from ..sampling.remote import MAX_SEED
from ..sampling.weights import edge_weights


class DistGraph:
    """A graph partitioned over the machines of a cluster (or one process, standalone)."""

    def __init__(self, graph_name: str, part_config: str | None = None):
        ctx = get_context()
        if ctx.standalone and part_config is None and ctx.part_config is None:
            raise InputError("a standalone DistGraph needs its 1-part partition: DistGraph(name, part_config=...)")
        self._book = ctx.use_partition(part_config) if part_config is not None else ctx.book
        self._ctx = ctx
        self._cfg = PartitionConfig.load(ctx.part_config)
        if self._cfg.graph_name != graph_name:
            raise InputError(f"{ctx.part_config} holds graph {self._cfg.graph_name!r}, not {graph_name!r}")
        self.graph_name = graph_name
        self.local_partition = load_partition(ctx.part_config, ctx.machine_id)
        self._node_data = {t: self._attach(node_policy_str(t), self._book.num_nodes(t), specs)
                           for t, specs in self._cfg.node_data.items()}
        self._edge_data = {c: self._attach(edge_policy_str(c), self._book.num_edges(c),
                                           self._cfg.edge_data.get(etype_key(c), {}))
                           for c in self._book.canonical_etypes}

    def _attach(self, policy: str, rows: int, specs: dict[str, DataSpec]) -> dict[str, DistTensor]:
        return {name: DistTensor((rows, *spec.shape), parse_dtype(spec.dtype), graph_data_name(policy, name),
                                 part_policy=policy, persistent=True)
                for name, spec in specs.items()}

    # ------------------------------------------------------------------ types
    @property
    def ntypes(self) -> list[str]:
        return self._book.ntypes

    @property
    def canonical_etypes(self) -> list[tuple[str, str, str]]:
        return self._book.canonical_etypes

    @property
    def etypes(self) -> list[str]:
        return self._book.etypes

    @property
    def is_homogeneous(self) -> bool:
        return self._book.is_homogeneous

    def _canonical(self, etype) -> tuple[str, str, str]:
        if etype is None:
            if len(self.canonical_etypes) != 1:
                raise InputError(f"the graph has edge types {self.canonical_etypes}; name one")
            return self.canonical_etypes[0]
        return resolve_etype(etype, self.canonical_etypes)

    def to_canonical_etype(self, etype) -> tuple[str, str, str]:
        """The canonical edge type named by a relation name, a 'src:rel:dst' string or a triple."""
        return resolve_etype(etype, self.canonical_etypes)

    def get_ntype_id(self, ntype: str | None) -> int:
        return self.ntypes.index(self._ntype(ntype))

    def get_etype_id(self, etype) -> int:
        return self.canonical_etypes.index(self._canonical(etype))

    def num_nodes(self, ntype: str | None = None) -> int:
        return self._book.num_nodes(ntype)

    def num_edges(self, etype=None) -> int:
        return self._book.num_edges(None if etype is None else self._canonical(etype))

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    def get_partition_book(self) -> RangePartitionBook:
        return self._book

    @property
    def idtype(self) -> torch.dtype:
        return torch.int64

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def is_pinned(self) -> bool:
        return False

    def rank(self) -> int:
        """This trainer's rank in the job (0 standalone)."""
        return self._ctx.rank

    def barrier(self) -> None:
        """Wait until every trainer of the job reaches this point."""
        barrier()

    @cached_property
    def _client(self) -> JobClient:
        """The process's client as DGL scripts reach it (`g._client.barrier()`)."""
        return JobClient(self._ctx)

    def get_node_partition_policy(self, ntype: str = DEFAULT_NTYPE) -> NodePartitionPolicy:
        return NodePartitionPolicy(self._book, ntype)

    def get_edge_partition_policy(self, etype=None) -> EdgePartitionPolicy:
        return EdgePartitionPolicy(self._book, self._canonical(etype))

    # ------------------------------------------------------------------- data
    @property
    def ndata(self) -> dict[str, DistTensor]:
        if len(self.ntypes) != 1:
            raise InputError("ndata needs a single node type; use g.nodes[ntype].data on a heterogeneous graph")
        return self._node_data.setdefault(self.ntypes[0], {})

    @property
    def edata(self) -> dict[str, DistTensor]:
        return self._edge_data[self._canonical(None)]

    @property
    def nodes(self) -> TypeViews:
        return TypeViews(lambda ntype: self._node_data.setdefault(self._ntype(ntype), {}))

    @property
    def edges(self) -> TypeViews:
        return TypeViews(lambda etype: self._edge_data[self._canonical(etype)])

    def assigned_data(self) -> list[list]:
        """The DistTensors put into this graph's node and edge data at run time (the partition's
        own data excepted), as [kind, type, name, the tensor's `describe()`]: what a sampler
        process gives its own DistGraph (`adopt_data`) to sample and prefetch as this one does."""
        out = []
        for kind, frames, policy in (("node", self._node_data, node_policy_str),
                                     ("edge", self._edge_data, edge_policy_str)):
            for t, data in frames.items():
                for name, value in data.items():
                    if isinstance(value, DistTensor) and value.name != graph_data_name(policy(t), name):
                        out.append([kind, etype_key(t) if kind == "edge" else t, name, value.describe()])
        return out

    def adopt_data(self, assigned: list[list]) -> None:
        """Put the tensors another process's `assigned_data()` lists into this graph's data."""
        for kind, t, name, description in assigned:
            frames = self._node_data if kind == "node" else self._edge_data
            key = self._ntype(t) if kind == "node" else self._canonical(t)
            frames.setdefault(key, {})[name] = DistTensor.described(description)

    # -------------------------------------------------------------- structure
    @cached_property
    def _structure(self) -> dict[str, DistTensor]:
        out, dtype = {}, str(degree_dtype(self.num_edges())).removeprefix("torch.")
        for t in self.ntypes:
            for name in (IN_DEGREE, OUT_DEGREE):
                out[f"{t}{name}"] = self._attach(node_policy_str(t), self.num_nodes(t),
                                                 {name: DataSpec(dtype, ())})[name]
        return out

    def _ntype(self, ntype: str | None) -> str:
        """A node type of this graph (the only one when None)."""
        if ntype is None:
            if len(self.ntypes) != 1:
                raise InputError(f"the graph has node types {self.ntypes}; pass ntype=")
            return self.ntypes[0]
        if ntype not in self.ntypes:
            raise InputError(f"unknown node type {ntype!r}; the graph has {self.ntypes}")
        return ntype

    def _node_ids(self, v, ntype: str | None) -> tuple[torch.Tensor, str]:
        ntype = self._ntype(ntype)
        return (torch.arange(self.num_nodes(ntype)) if v is None else as_id_tensor(v, "node ids")), ntype

    def in_degrees(self, v=None, ntype: str | None = None) -> torch.Tensor:
        """In-degrees (over all edge types) of nodes `v` (all nodes when None)."""
        ids, ntype = self._node_ids(v, ntype)
        return self._structure[f"{ntype}{IN_DEGREE}"][ids].long()

    def out_degrees(self, u=None, ntype: str | None = None) -> torch.Tensor:
        """Out-degrees (over all edge types) of nodes `u` (all nodes when None)."""
        ids, ntype = self._node_ids(u, ntype)
        return self._structure[f"{ntype}{OUT_DEGREE}"][ids].long()

    def find_edges(self, eids, etype=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(src, dst) of edges `eids`: node ids of the edge type's source and destination types.
        Each edge is read off its owner's partition: in this process for the machines of this
        host, through a server for the others (nothing per edge is held in memory for this)."""
        c = self._canonical(etype)
        eids = as_id_tensor(eids, "edge ids")
        homo = self._book.map_to_homo_eid(eids, c) if not self.is_homogeneous else eids
        owner = self._book.eid2partid(homo)  # homogeneous ids, whatever the types
        machines = torch.nonzero(torch.bincount(owner)).flatten().tolist()
        here = {m: part for m, (part, _) in self._in_process(machines).items()}
        at = {m: torch.nonzero(owner == m).flatten() for m in machines}
        src, dst = torch.empty_like(homo), torch.empty_like(homo)

        def local() -> None:
            for m, part in here.items():
                src[at[m]], dst[at[m]] = part.find_owned_edges(homo[at[m]])

        requests = [(m, {"op": "find_edges"}, [homo[at[m]]]) for m in machines if m not in here]
        _, replies = self._ctx.client.overlap(requests, local)
        for (m, _, _), rep in zip(requests, replies):
            n = at[m].numel()
            if len(rep.arrays) != 2 or any(a.dtype != torch.int64 or a.shape != (n,) for a in rep.arrays):
                raise DistGraphError(f"machine {m} answered a find_edges request with malformed arrays")
            src[at[m]], dst[at[m]] = rep.arrays
        if self.is_homogeneous:
            return src, dst
        return self._book.map_to_per_ntype(src)[1], self._book.map_to_per_ntype(dst)[1]

    # ----------------------------------------------------------------- ids
    def _mapping(self, kind: str, key: str) -> torch.Tensor:
        rel = self._cfg.mapping_file(kind, key)
        if rel is None:
            raise InputError(f"{self._cfg.path} has no {kind} id mapping for {key!r}")
        return torch.from_numpy(np.array(self._cfg.load_array(rel, mmap=False)))

    def orig_nids(self, ntype: str | None = None) -> torch.Tensor:
        """Original id (in the input graph) of every node id of `ntype`."""
        return self._mapping("node", self._ntype(ntype))

    def orig_eids(self, etype=None) -> torch.Tensor:
        """Original id (in the input graph) of every edge id of `etype`."""
        return self._mapping("edge", etype_key(self._canonical(etype)))

    # -------------------------------------------------------------- sampling
    @cached_property
    def _host_partitions(self) -> dict[int, tuple[Partition, KVStore]]:
        """Other machines of this host whose shared memory this process maps: their partition
        (memory-mapped from the same files their servers use) and store. Their seeds are sampled
        here, exactly as their servers would, with no request; a machine whose files are not on
        this host's disk is left to its servers."""
        parts = {}
        for m, store in self._ctx.client.host_stores.items():
            try:
                parts[m] = (load_partition(self._ctx.part_config, m), store)
            except (OSError, DistGraphError):
                continue
        return parts

    def _in_process(self, machines: list[int]) -> dict[int, tuple[Partition, KVStore]]:
        """Those of `machines` whose partitions this process reads itself, with their stores:
        its own machine and the other machines of its host (the rest go through their servers)."""
        out = {}
        for m in machines:
            if m == self._ctx.machine_id:
                out[m] = (self.local_partition, self._ctx.client.local_store)
            elif m in self._host_partitions:
                out[m] = self._host_partitions[m]
        return out

    def sample_neighbors(self, seed_nodes, fanout: int, edge_dir: str = "in", prob: str | None = None,
                         exclude_edges=None, replace: bool = False, etype_sorted: bool = True, output_device=None):
        """`distgraph.sample_neighbors` on this graph (DGL's method; `exclude_edges` is applied,
        where DGL 2.1.0 ignores it, and `output_device` must be the CPU)."""
        from ..sampling import sample_neighbors

        if output_device is not None and torch.device(output_device).type != "cpu":
            raise InputError(f"a frontier stays on the CPU; output_device {output_device!r} is not available for it: "
                             f"leave it unset and move the blocks (to_block(frontier).to(device)), or give a loader "
                             f"device=")
        return sample_neighbors(self, seed_nodes, fanout, edge_dir, prob, replace, exclude_edges=exclude_edges)

    def edge_subgraph(self, edges, relabel_nodes: bool = True, store_ids: bool = True):
        """The graph of the edges `edges` and their endpoints (DGL's method): `edata[EID]` holds
        the edge ids and `ndata[NID]` the nodes' ids, local indices in `edges()` (all nodes of
        the graph, ids unchanged, without `relabel_nodes`)."""
        from ..dataloading.pair_graph import PairGraph

        if not self.is_homogeneous:
            raise InputError("edge_subgraph takes the edges of a graph with one edge type here")
        eids = as_id_tensor(edges, "edge ids")
        src, dst = self.find_edges(eids)
        if not relabel_nodes:
            return PairGraph(torch.arange(self.num_nodes()), src, dst, eids if store_ids else None)
        nodes, inverse = torch.unique(torch.cat([src, dst]), return_inverse=True)
        return PairGraph(nodes, inverse[:src.numel()], inverse[src.numel():], eids if store_ids else None)

    def _weight_names(self, prob: str | None) -> list[str | None] | None:
        """Per edge type, the store name of the DistTensor `edges[type].data[prob]` (None for a
        type without it, which draws uniformly, as DGL): servers and this process read the
        weights from the store, so data assigned at run time weights sampling too."""
        if prob is None:
            return None
        if not isinstance(prob, str):
            raise InputError("on a DistGraph, prob names edge data (a string)")
        names = []
        for c in self.canonical_etypes:
            t = self._edge_data[c].get(prob)
            if t is not None and not isinstance(t, DistTensor):
                raise InputError(f"edge data {prob!r} of type {c} is a {type(t).__name__}; sampling weights are read "
                                 f"from the servers' store: assign a DistTensor")
            names.append(None if t is None else t.name)
        if all(n is None for n in names):
            raise InputError(f"no edge type has edge data {prob!r}, so it cannot weight sampling")
        return names

    def _sample_neighbors(self, seeds, fanout, edge_dir: str = "in", replace: bool = False,
                          prob: str | None = None, generator: torch.Generator | None = None) -> SampledEdges:
        """One hop of in-neighbour sampling: each seed on its owner's partition, concurrently: in
        this process for this machine and the other machines of this host (in one pass), through
        their servers for the others. Each other machine's share is drawn from a seed taken from
        `generator`, so the sample does not depend on where it is drawn. Seeds and results are
        homogeneous node ids; `fanout` is one for all, or a tensor of one per edge type."""
        if edge_dir != "in":
            raise InputError("partitions store in-edges, so a DistGraph samples with edge_dir='in' only")
        names = self._weight_names(prob)
        seeds = as_id_tensor(seeds, "seeds")
        owner = self._book.nid2partid(seeds, None)
        me, client = self._ctx.machine_id, self._ctx.client
        machines = torch.nonzero(torch.bincount(owner)).flatten().tolist()  # no sort, unlike unique
        others = [m for m in machines if m != me]
        draws = dict(zip(others, torch.randint(0, MAX_SEED, (len(others),), generator=generator).tolist())) if others else {}
        jobs = {m: (part, generator if m == me else torch.Generator().manual_seed(draws[m]),
                    edge_weights(store, part, names))  # sampled in this process
                for m, (part, store) in self._in_process(machines).items()}
        wire_fanout = fanout.tolist() if isinstance(fanout, torch.Tensor) else int(fanout)
        header = {"op": "sample", "fanout": wire_fanout, "replace": bool(replace), "prob": names}
        at = {m: torch.nonzero(owner == m).flatten() for m in others if m not in jobs}
        requests = [(m, {**header, "seed": draws[m]}, [seeds.index_select(0, pos)]) for m, pos in at.items()]
        here, replies = client.overlap(requests, lambda: sample_partitions(jobs, seeds, owner, fanout, replace))
        if not at:
            return here
        runs, machine_of = [here.runs()], [me]
        typed = isinstance(fanout, torch.Tensor)
        for (m, pos), rep in zip(at.items(), replies):
            arrays = rep.arrays  # each edge's source and id (and type), and how many edges each seed has
            # the merge checks the counts against the positions and the edges (MalformedRuns)
            well_formed = (len(arrays) == 3 + typed and all(a.dtype == torch.int64 and a.dim() == 1 for a in arrays)
                           and arrays[2].numel() == pos.numel())
            if well_formed and typed and arrays[3].numel():
                low, high = arrays[3].aminmax()
                well_formed = 0 <= int(low) and int(high) < fanout.numel()
            if not well_formed:
                raise DistGraphError(f"machine {m} answered a sampling request with malformed arrays")
            src, eids, counts, *etype = arrays
            runs.append(SeedRuns(pos, counts, src, eids, etype[0] if etype else None))
            machine_of.append(m)
        try:
            return SampledEdges.merged(seeds, runs)
        except MalformedRuns as e:
            raise DistGraphError(f"machine {machine_of[e.part]} answered a sampling request with malformed arrays: "
                                 "its edges do not fit the seeds it was sent") from None

    def __repr__(self) -> str:
        return (f"DistGraph({self.graph_name!r}, num_nodes={self.num_nodes()}, num_edges={self.num_edges()}, "
                f"ntypes={self.ntypes}, etypes={self.canonical_etypes})")


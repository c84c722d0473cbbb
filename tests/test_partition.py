"""Partitioning: round trip in original ids, halos, contiguous ranges, balance, types, mappings."""

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import torch

from distgraph.data import load_edgelist
from distgraph.tensor_graph import Graph
from distgraph.cli.main import main
from distgraph.data import save_npz
from distgraph.errors import PartitionError
from distgraph.partition import load_partition, load_partition_book, partition_graph, split_categories


def rebuild(cfg_path, num_parts, orig_nids, orig_eids):
    """Every partition's owned in-edges, mapped back to original (src, dst, eid) triples."""
    triples = []
    for p in range(num_parts):
        part = load_partition(cfg_path, p)
        deg = part.indptr.diff()
        inner = part.eids.lt(part.book.edge_range(p, None)[1]) & part.eids.ge(part.book.edge_range(p, None)[0])
        dst_local = torch.repeat_interleave(torch.arange(part.num_local_nodes), deg)
        src = orig_nids[part.global_nid[part.indices]]
        dst = orig_nids[part.global_nid[dst_local]]
        triples.append(torch.stack([src, dst, orig_eids[part.eids]], 1)[inner])
    return torch.cat(triples)


@pytest.mark.parametrize("method, num_parts", [("metis", 3), ("random", 2), ("metis", 1)])
def test_round_trip_gives_back_the_graph_and_its_data(tmp_path, sbm, method, num_parts):
    orig_nids, orig_eids = partition_graph(sbm, "g", num_parts, tmp_path, part_method=method, return_mapping=True)
    cfg = tmp_path / "g.json"
    t = rebuild(cfg, num_parts, orig_nids, orig_eids)
    assert t.shape[0] == sbm.num_edges()
    # each original edge exactly once, with its own endpoints
    assert torch.equal(t[:, 2].sort().values, torch.arange(sbm.num_edges()))
    assert torch.equal(sbm.src[t[:, 2]], t[:, 0]) and torch.equal(sbm.dst[t[:, 2]], t[:, 1])
    assert torch.equal(orig_nids.sort().values, torch.arange(sbm.num_nodes()))
    for p in range(num_parts):
        part = load_partition(cfg, p)
        lo, hi = part.book.node_range(p)
        assert part.num_inner_nodes == hi - lo and torch.equal(part.global_nid[: hi - lo], torch.arange(lo, hi))
        for k in ("feat", "label", "train_mask"):
            assert torch.equal(part.node_data["_N"][k], sbm.ndata[k][orig_nids[lo:hi]])
    saved = json.loads(cfg.read_text())
    assert saved["num_parts"] == num_parts and saved["part_method"] == method
    assert np.array_equal(np.load(tmp_path / "mapping" / "node._N.npy"), orig_nids.numpy())


def test_halo_holds_exactly_the_non_owned_in_neighbours(tmp_path, sbm):
    orig_nids, _ = partition_graph(sbm, "g", 3, tmp_path, return_mapping=True)
    new_of = torch.empty_like(orig_nids)
    new_of[orig_nids] = torch.arange(orig_nids.numel())
    for p in range(3):
        part = load_partition(tmp_path / "g.json", p)
        lo, hi = part.book.node_range(p)
        owned_dst = (new_of[sbm.dst] >= lo) & (new_of[sbm.dst] < hi)
        srcs = new_of[sbm.src[owned_dst]]
        expected = torch.unique(srcs[(srcs < lo) | (srcs >= hi)])
        assert torch.equal(part.global_nid[part.num_inner_nodes:], expected)
        assert int(part.indptr[part.num_inner_nodes]) == part.indices.numel()  # halo rows have no in-edges
        assert int(part.indices.max()) < part.num_local_nodes


def test_two_hop_halo_adds_the_in_edges_of_the_first_halo(tmp_path):
    from distgraph.data import generate_sbm

    g = generate_sbm(400, 1200, seed=4)
    orig, orig_e = partition_graph(g, "g", 2, tmp_path, part_method="random", num_hops=2, return_mapping=True)
    new_of = torch.empty_like(orig)
    new_of[orig] = torch.arange(orig.numel())
    src, dst = new_of[g.src], new_of[g.dst]
    for p in range(2):
        part = load_partition(tmp_path / "g.json", p)
        lo, hi = part.book.node_range(p)
        owned = torch.zeros(g.num_nodes(), dtype=torch.bool)
        owned[lo:hi] = True
        hop1 = torch.zeros_like(owned)
        hop1[src[owned[dst]]] = True
        hop1 &= ~owned
        edges = owned[dst] | hop1[dst]  # in-edges of owned nodes and of the first halo
        local = torch.zeros_like(owned)
        local[src[edges]] = True
        local |= owned
        assert torch.equal(part.global_nid.sort().values, torch.nonzero(local).flatten())
        assert torch.equal(part.eids.sort().values, _new_eids(orig_e, edges).sort().values)
        assert part.eids.numel() > part.num_inner_edges


def test_edge_ids_file_only_when_they_are_not_the_partition_range(tmp_path, sbm):
    """One edge type and a one-hop halo: a partition's in-edges are exactly its edge range, in
    CSC order, so no eids file is written and the loader gives back that range."""
    partition_graph(sbm, "g", 2, tmp_path / "a")
    cfg = json.loads((tmp_path / "a" / "g.json").read_text())
    for p in range(2):
        assert cfg["partitions"][p]["eids"] is None and not (tmp_path / "a" / f"part{p}" / "eids.npy").exists()
        part = load_partition(tmp_path / "a" / "g.json", p)
        lo, hi = part.book.edge_range(p, None)
        assert torch.equal(part.eids, torch.arange(lo, hi))
        dst_local = torch.repeat_interleave(torch.arange(part.num_local_nodes), part.indptr.diff())
        assert bool((dst_local[1:] >= dst_local[:-1]).all())  # new edge ids follow the CSC
    partition_graph(sbm, "g", 2, tmp_path / "b", num_hops=2)
    cfg = json.loads((tmp_path / "b" / "g.json").read_text())
    assert all((tmp_path / "b" / cfg["partitions"][p]["eids"]).exists() for p in range(2))
    partition_graph(sbm, "g", 2, tmp_path / "b")  # again into the same folder: the old eids files go
    assert not any((tmp_path / "b" / f"part{p}" / "eids.npy").exists() for p in range(2))


def _without_kernels(monkeypatch) -> None:
    """Every partitioning module as on an install without the C kernels (numpy paths)."""
    from distgraph import arrays
    from distgraph.partition import in_edges, symmetric

    for module in (arrays, in_edges, symmetric):
        monkeypatch.setattr(module, "kernels", lambda: None)


@pytest.mark.parametrize("native", [True, False], ids=["native", "numpy"])
def test_in_edge_index_when_the_packed_keys_take_all_63_bits(monkeypatch, native):
    """2 * 21 node bits + 21 edge bits = 63: node 2**21's start would be 2**63 (it overflowed)."""
    from distgraph.partition.in_edges import InEdges

    if not native:
        _without_kernels(monkeypatch)
    n, m = 2**21, 2**20 + 5
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    index = InEdges.build(Graph(src, dst, num_nodes=n))
    assert np.array_equal(index.indptr, np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=n))]))
    order = np.argsort(dst, kind="stable")
    assert np.array_equal(index.eids, order) and np.array_equal(index.srcs, src[order])


@pytest.mark.parametrize("native", [True, False], ids=["native", "numpy"])
def test_in_edges_of_nodes_come_node_after_node(monkeypatch, native):
    from distgraph.partition.in_edges import InEdges

    if not native:
        _without_kernels(monkeypatch)
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 300, 5000), rng.integers(0, 300, 5000)
    index = InEdges.build(Graph(src, dst, num_nodes=300))
    nodes = np.concatenate([rng.permutation(300)[:200], [7, 7]])  # a subset, one node twice
    eids, srcs = index.of(nodes)
    want = np.concatenate([np.flatnonzero(dst == v) for v in nodes])
    assert np.array_equal(eids, want) and np.array_equal(srcs, src[want])
    assert srcs.dtype == np.int32 and eids.dtype == np.int64


@pytest.mark.parametrize("graph,halo_hops", [("sbm", 1), ("mag", 2)])
def test_the_c_kernels_and_the_numpy_paths_write_the_same_files(tmp_path, monkeypatch, request, graph, halo_hops):
    g = request.getfixturevalue(graph)
    partition_graph(g, "g", 3, tmp_path / "native", num_hops=halo_hops)
    _without_kernels(monkeypatch)
    partition_graph(g, "g", 3, tmp_path / "numpy", num_hops=halo_hops)
    files = sorted(f.relative_to(tmp_path / "native") for f in (tmp_path / "native").rglob("*.npy"))
    assert files == sorted(f.relative_to(tmp_path / "numpy") for f in (tmp_path / "numpy").rglob("*.npy"))
    for f in files:
        assert (tmp_path / "native" / f).read_bytes() == (tmp_path / "numpy" / f).read_bytes(), f


def _new_eids(orig_e, mask):
    """New edge ids of the original edges selected by `mask`."""
    new_of = torch.empty_like(orig_e)
    new_of[orig_e] = torch.arange(orig_e.numel())
    return new_of[torch.nonzero(mask).flatten()]


def test_ranges_are_contiguous_per_type_and_partition(tmp_path, mag):
    partition_graph(mag, "mag", 3, tmp_path, balance_ntypes=split_categories(mag))
    cfg = json.loads((tmp_path / "mag.json").read_text())
    starts = []
    for p in range(3):
        for t in mag.ntypes:
            starts.append(cfg["node_map"][t][p])
    flat = np.array(starts)
    assert flat[0, 0] == 0 and (flat[1:, 0] == flat[:-1, 1]).all() and flat[-1, 1] == mag.num_nodes()
    for t in mag.ntypes:
        assert sum(e - s for s, e in cfg["node_map"][t]) == mag.num_nodes(t)


def test_heterogeneous_round_trip_in_per_type_original_ids(tmp_path, mag):
    orig_nids, orig_eids = partition_graph(mag, "mag", 2, tmp_path, return_mapping=True)
    feat = mag.nodes["paper"].data["feat"]
    for p in range(2):
        part = load_partition(tmp_path / "mag.json", p)
        got = part.node_data["paper"]["feat"]
        lo, hi = part.book.node_range(p, "paper")
        assert torch.equal(got, feat[orig_nids["paper"][lo:hi]])
        assert "author" not in part.node_data or not part.node_data["author"]
    # every relation's edges come back with their original endpoints
    for ci, c in enumerate(mag.canonical_etypes):
        assert torch.equal(orig_eids[c].sort().values, torch.arange(mag.num_edges(c)))
    book = load_partition(tmp_path / "mag.json", 0).book
    writes = ("author", "writes", "paper")
    homo_src, homo_dst = [], []
    for p in range(2):
        part = load_partition(tmp_path / "mag.json", p)
        etype, per_type_eid = book.map_to_per_etype(part.eids)
        sel = etype == mag.canonical_etypes.index(writes)
        lo, hi = book.edge_range(p, writes)
        sel &= (per_type_eid >= lo) & (per_type_eid < hi)
        deg = part.indptr.diff()
        dst_local = torch.repeat_interleave(torch.arange(part.num_local_nodes), deg)
        s_t, s_id = book.map_to_per_ntype(part.global_nid[part.indices[sel]])
        d_t, d_id = book.map_to_per_ntype(part.global_nid[dst_local[sel]])
        assert (s_t == 1).all() and (d_t == 0).all()  # author -> paper
        homo_src.append(orig_nids["author"][s_id])
        homo_dst.append(orig_nids["paper"][d_id])
        eid = orig_eids[writes][per_type_eid[sel]]
        lo_e = int(mag.etype_offsets[0])
        assert torch.equal(mag.src[lo_e + eid], homo_src[-1] + int(mag.ntype_offsets[1]))
    assert sum(x.numel() for x in homo_src) == mag.num_edges("writes")


def test_balance_train_spreads_a_training_set_concentrated_in_one_community(tmp_path):
    from distgraph.data import generate_sbm

    g = generate_sbm(6000, 60000, num_classes=4, p_in=0.95, seed=3)
    train = g.ndata["label"] == 0
    g.ndata["train_mask"] = train
    g.ndata["val_mask"] = torch.zeros_like(train)
    g.ndata["test_mask"] = torch.zeros_like(train)

    def train_per_part(**kw):
        orig, _ = partition_graph(g, "g", 2, tmp_path, return_mapping=True, **kw)
        mid = load_partition(tmp_path / "g.json", 0).num_inner_nodes
        return [int(train[orig[:mid]].sum()), int(train[orig[mid:]].sum())]

    plain = train_per_part()
    balanced = train_per_part(balance_ntypes=split_categories(g), balance_edges=True)
    assert max(plain) / (sum(plain) / 2) > 1.6  # METIS alone keeps the community together
    assert max(balanced) / (sum(balanced) / 2) < 1.05  # the train constraint spreads it
    stats = partition_graph(g, "g", 2, tmp_path, balance_ntypes=split_categories(g), balance_edges=True)
    assert max(stats.part_edges) / (sum(stats.part_edges) / 2) < 1.05
    assert max(stats.part_nodes) / (sum(stats.part_nodes) / 2) < 1.05


def test_string_ids_are_mapped_and_the_names_written_beside_the_partitions(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("bob\talice\nalice\tcarol\ncarol\tbob\ndave\tbob\n")
    orig, orig_e = partition_graph(load_edgelist(f), "names", 2, tmp_path / "out", part_method="random",
                                   return_mapping=True)
    names = np.load(tmp_path / "out" / "mapping" / "node_names.npy")
    assert names.tolist() == ["bob", "alice", "carol", "dave"]
    lines = [tuple(line.split("\t")) for line in f.read_text().splitlines()]
    got = {}
    for p in range(2):  # every stored edge, named through the mappings, is the line it came from
        part = load_partition(tmp_path / "out" / "names.json", p)
        dst_local = torch.repeat_interleave(torch.arange(part.num_local_nodes), part.indptr.diff())
        for s, d, e in zip(part.global_nid[part.indices], part.global_nid[dst_local], part.eids):
            got[int(orig_e[e])] = (names[orig[s]], names[orig[d]])
    assert [got[i] for i in range(len(lines))] == lines


def test_stats_describe_the_partitioning(tmp_path, sbm):
    stats = partition_graph(sbm, "g", 2, tmp_path / "metis")
    assert sum(stats.part_nodes) == sbm.num_nodes() and sum(stats.part_edges) == sbm.num_edges()
    assert 0 < stats.edge_cut < 0.5 and 0 < stats.halo_fraction < 1
    random_stats = partition_graph(sbm, "r", 2, tmp_path / "random", part_method="random")
    assert random_stats.edge_cut > 1.5 * stats.edge_cut  # METIS cuts far fewer edges than random


def test_degrees_of_owned_nodes(tmp_path, sbm):
    orig, _ = partition_graph(sbm, "g", 3, tmp_path, return_mapping=True)
    for p in range(3):
        part = load_partition(tmp_path / "g.json", p)
        lo, hi = part.book.node_range(p)
        assert torch.equal(part.in_degree(), sbm.in_degrees()[orig[lo:hi]])
        assert torch.equal(part.out_degree, sbm.out_degrees()[orig[lo:hi]])


def check_against_brute_force(g, cfg, num_parts, halo_hops, orig_nids, orig_eids):
    """Each partition's edges (in-edges of owned nodes, then of the halo up to `halo_hops`),
    local nodes, endpoints and node/edge data rows, all checked in original ids."""
    if g.is_homogeneous:
        orig_nids, orig_eids = {g.ntypes[0]: orig_nids}, {g.canonical_etypes[0]: orig_eids}
    book = load_partition_book(cfg)
    n, m = g.num_nodes(), g.num_edges()
    new2old_n, new2old_e = torch.empty(n, dtype=torch.int64), torch.empty(m, dtype=torch.int64)
    for ti, t in enumerate(g.ntypes):
        new2old_n[book.map_to_homo_nid(torch.arange(g.num_nodes(t)), t)] = orig_nids[t] + g.ntype_offsets[ti]
    for ci, c in enumerate(g.canonical_etypes):
        new2old_e[book.map_to_homo_eid(torch.arange(g.num_edges(c)), c)] = orig_eids[c] + g.etype_offsets[ci]
    old2new = torch.empty(n, dtype=torch.int64)
    old2new[new2old_n] = torch.arange(n)
    src, dst = old2new[g.src], old2new[g.dst]  # new endpoints, by original edge id
    inner_edges = []
    for p in range(num_parts):
        part = load_partition(cfg, p)
        lo, hi = book.node_range(p, None)
        local = torch.zeros(n, dtype=torch.bool)
        local[lo:hi] = True
        frontier, edges = local.clone(), torch.zeros(m, dtype=torch.bool)
        for _ in range(halo_hops):
            hop = frontier[dst] & ~edges
            edges |= hop
            frontier = torch.zeros(n, dtype=torch.bool)
            frontier[src[hop]] = True
            frontier &= ~local
            local |= frontier
        got = new2old_e[part.eids]
        assert torch.equal(got.sort().values, torch.nonzero(edges).flatten())
        assert torch.equal(part.global_nid[: hi - lo], torch.arange(lo, hi))
        assert torch.equal(part.global_nid.sort().values, torch.nonzero(local).flatten())
        dst_local = torch.repeat_interleave(torch.arange(part.num_local_nodes), part.indptr.diff())
        assert torch.equal(part.global_nid[part.indices], src[got]) and torch.equal(part.global_nid[dst_local], dst[got])
        elo, ehi = book.edge_range(p, None)
        inner_edges.append(got[(part.eids >= elo) & (part.eids < ehi)])
        for t in g.ntypes:
            rows = orig_nids[t][slice(*book.node_range(p, t))]
            for k, v in g.nodes[t].data.items():
                assert torch.equal(part.node_data[t][k], v[rows])
        for c in g.canonical_etypes:
            rows = orig_eids[c][slice(*book.edge_range(p, c))]
            for k, v in g.edges[c].data.items():
                assert torch.equal(part.edge_data[":".join(c)][k], v[rows])
    assert torch.equal(torch.cat(inner_edges).sort().values, torch.arange(m))


def test_edge_data_rows_follow_their_edges(tmp_path):
    from distgraph.data import generate_sbm

    g = generate_sbm(500, 3000, feat_dim=3, seed=7)
    g.edata["w"] = torch.arange(g.num_edges(), dtype=torch.float32)
    g.edata["pair"] = torch.stack([g.src, g.dst], 1)
    orig_nids, orig_eids = partition_graph(g, "g", 3, tmp_path, return_mapping=True)
    check_against_brute_force(g, tmp_path / "g.json", 3, 1, orig_nids, orig_eids)
    part = load_partition(tmp_path / "g.json", 1)
    lo, hi = part.book.edge_range(1)
    assert torch.equal(part.edge_data["_N:_E:_N"]["w"], orig_eids[lo:hi].float())


@pytest.mark.parametrize("method, halo_hops", [("metis", 1), ("metis", 2), ("random", 2), ("random", 3)])
def test_heterogeneous_halo_hops_with_an_empty_node_type_and_edge_type(tmp_path, method, halo_hops):
    rng = np.random.default_rng(halo_hops)
    counts = {"user": 40, "item": 25, "shop": 0}
    edges = {("user", "follows", "user"): (rng.integers(0, 40, 120), rng.integers(0, 40, 120)),
             ("user", "buys", "item"): (rng.integers(0, 40, 90), rng.integers(0, 25, 90)),
             ("item", "bought_by", "user"): (rng.integers(0, 25, 90), rng.integers(0, 40, 90)),
             ("shop", "sells", "item"): (np.zeros(0, np.int64), np.zeros(0, np.int64))}
    ndata = {"user": {"x": torch.from_numpy(rng.random((40, 2))), "train_mask": torch.from_numpy(rng.random(40) < 0.5)},
             "item": {"price": torch.arange(25.0)}, "shop": {"feat": torch.zeros(0, 4)}}
    edata = {c: {"w": torch.arange(len(s), dtype=torch.float32) + 1000 * i} for i, (c, (s, _)) in enumerate(edges.items())}
    g = Graph.from_hetero(edges, counts, ndata, edata)
    orig_nids, orig_eids = partition_graph(g, "h", 3, tmp_path, part_method=method, num_hops=halo_hops,
                                           balance_ntypes=split_categories(g), balance_edges=True, return_mapping=True)
    check_against_brute_force(g, tmp_path / "h.json", 3, halo_hops, orig_nids, orig_eids)
    assert orig_nids["shop"].numel() == 0 and orig_eids[("shop", "sells", "item")].numel() == 0
    part = load_partition(tmp_path / "h.json", 2)
    assert part.node_data["shop"]["feat"].shape == (0, 4) and part.edge_data["shop:sells:item"]["w"].numel() == 0


@pytest.mark.parametrize("method", ["metis", "random"])
def test_as_many_parts_as_nodes_leaves_no_part_empty(tmp_path, method):
    from distgraph.data import generate_sbm

    g = generate_sbm(12, 40, seed=0)  # METIS alone leaves parts empty here
    orig_nids, orig_eids = partition_graph(g, "g", 12, tmp_path, part_method=method, return_mapping=True)
    stats = json.loads((tmp_path / "g.json").read_text())["stats"]
    assert stats["part_nodes"] == [1] * 12
    check_against_brute_force(g, tmp_path / "g.json", 12, 1, orig_nids, orig_eids)


def test_metis_gives_every_part_a_node_when_parts_are_close_to_nodes():
    from distgraph.data import generate_sbm
    from distgraph.partition.assign import assign_parts

    for n, e, k in [(12, 40, 12), (12, 40, 11), (100, 400, 16), (200, 1000, 32)]:
        counts = np.bincount(assign_parts(generate_sbm(n, e, seed=0), k), minlength=k)
        assert counts.min() >= 1 and counts.sum() == n


def test_loaded_partitions_are_writable_copy_on_write(tmp_path):
    """Tensors over read-only maps segfaulted when written; run apart so a crash is a failure."""
    script = f"""
import numpy as np, torch
from distgraph.data import generate_sbm
from distgraph.partition import load_partition, partition_graph
partition_graph(generate_sbm(300, 2000, feat_dim=4, seed=0), "g", 2, {str(tmp_path)!r})
part = load_partition({str(tmp_path / "g.json")!r}, 0)
part.node_data["_N"]["feat"][0] = 42.0
part.indices += 0
assert part.node_data["_N"]["feat"][0].tolist() == [42.0] * 4
assert (np.load({str(tmp_path / "part0" / "node._N.feat.npy")!r})[0] != 42.0).all()  # the file is unchanged
"""
    proc = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_halo_lookup_memory_follows_the_halo_not_the_graph(tmp_path):
    from distgraph.partition.in_edges import InEdges
    from distgraph.partition.relabel import relabel_nodes
    from distgraph.partition.writer import _PartWriter

    n = 400_000  # mostly isolated nodes: a partition's work is tiny, but a table over all ids is 3.2 MB
    rng = np.random.default_rng(0)
    g = Graph(rng.integers(0, n, 2000), rng.integers(0, n, 2000), num_nodes=n)
    parts = (np.arange(n) * 64 // n).astype(np.int64)
    writer = _PartWriter(g, relabel_nodes(g, parts, 64), InEdges.build(g), tmp_path, 1, {}, {}, {}, {})
    writer.number_edges(parts)
    tracemalloc.start()
    writer.write_edges(5)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * n / 4


def test_repartitioning_a_folder_replaces_the_earlier_partitioning(tmp_path, sbm):
    """Three parts, then two into the same folder under the same name: the third part's files
    and the old edge id files go, the new partitioning loads, and other files stay."""
    (tmp_path / "notes.txt").write_text("mine")
    partition_graph(sbm, "g", 3, tmp_path, num_hops=2)
    assert (tmp_path / "part2" / "indices.npy").exists() and (tmp_path / "part0" / "eids.npy").exists()
    partition_graph(sbm, "g", 2, tmp_path)
    assert not (tmp_path / "part2").exists()
    assert not (tmp_path / "part0" / "eids.npy").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    for p in range(2):
        load_partition(tmp_path / "g.json", p)


def folder_bytes(folder) -> dict:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def test_another_graphs_partition_in_the_folder_is_kept_unless_overwrite_is_asked(tmp_path, sbm, mag, capsys):
    """A second graph into the same folder is refused, naming the graph there, its files
    untouched; a JSON that is no partition config does not count; --overwrite replaces it,
    its config and its stale third part folder gone."""
    out = tmp_path / "parts"
    partition_graph(sbm, "first", 3, out, part_method="random")
    (out / "settings.json").write_text("{}")
    before = folder_bytes(out)
    with pytest.raises(PartitionError, match=r"holds the partition of graph 'first' .*--overwrite"):
        partition_graph(mag, "second", 2, out, part_method="random")
    argv = ["partition", "--input", str(tmp_path / "mag.npz"), "--graph_name", "second", "--num_parts", "2",
            "--part_method", "random", "--out", str(out)]
    save_npz(mag, tmp_path / "mag.npz")
    assert main(argv) == 2
    assert "graph 'first'" in capsys.readouterr().err
    assert folder_bytes(out) == before
    assert load_partition(out / "first.json", 2).num_inner_nodes > 0
    assert main(argv + ["--overwrite"]) == 0
    assert sorted(f.name for f in out.glob("*.json")) == ["second-report.json", "second.json", "settings.json"]
    assert not (out / "first-report.svg").exists() and not (out / "part2").exists() and not any(out.glob("mapping/*_N*"))
    book = load_partition_book(out / "second.json")
    assert book.num_nodes("paper") == mag.num_nodes("paper")


def test_a_partitioning_that_dies_while_writing_leaves_no_config_to_load(tmp_path, sbm, monkeypatch):
    """The earlier config goes before any file is replaced and the new one is written last, so
    a run killed midway leaves nothing a later load would take for a partition; the next run
    writes a whole one."""
    from distgraph.partition import writer

    partition_graph(sbm, "g", 2, tmp_path, part_method="random")

    def dies(self, p):
        self._save(f"part{p}/indptr.npy", np.zeros(3, dtype=np.int64))  # half a partition on disk
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(writer._PartWriter, "write_edges", dies)
        with pytest.raises(KeyboardInterrupt):
            partition_graph(sbm, "g", 2, tmp_path, part_method="random")
    assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob(".*"))
    with pytest.raises(PartitionError, match="does not exist"):
        load_partition(tmp_path / "g.json", 0)
    partition_graph(sbm, "g", 2, tmp_path, part_method="random")
    assert load_partition(tmp_path / "g.json", 0).indptr.numel() > 3


@pytest.mark.parametrize("typed", [False, True])
def test_find_owned_edges_reads_each_owned_edge_off_the_csc(tmp_path, sbm, mag, typed):
    """Owned edges by id give the endpoints stored in the CSC, whether the partition's edge
    ids are its own range in order (no eids file) or listed in a file (several edge types)."""
    out = tmp_path / "parts"
    partition_graph(mag if typed else sbm, "g", 3, out, part_method="random")
    for p in range(3):
        part = load_partition(out / "g.json", p)
        assert (part.stored_eids is not None) == typed
        lo, hi = part.book.edge_range(p, None)
        slots = torch.nonzero((part.eids >= lo) & (part.eids < hi)).flatten()
        dst_local = torch.repeat_interleave(torch.arange(part.num_local_nodes), part.indptr.diff())
        order = torch.randperm(slots.numel(), generator=torch.Generator().manual_seed(p))
        src, dst = part.find_owned_edges(part.eids[slots[order]])
        assert slots.numel() == hi - lo > 0
        assert torch.equal(src, part.global_nid[part.indices[slots[order]]])
        assert torch.equal(dst, part.global_nid[dst_local[slots[order]]])


def test_memory_mapped_partition_arrays_are_advised_2mb_pages(tmp_path):
    """`huge_pages` marks a mapped array's range for 2 MB pages (the mapping's VmFlags show `hg`);
    arrays under 2 MB are left alone."""
    from distgraph.malloc import huge_pages
    from memcap import mapping_flags

    np.save(tmp_path / "big.npy", np.arange(1 << 20, dtype=np.int64))  # 8 MB
    np.save(tmp_path / "small.npy", np.arange(16, dtype=np.int64))
    big = np.load(tmp_path / "big.npy", mmap_mode="c")
    assert not huge_pages(np.load(tmp_path / "small.npy", mmap_mode="c"))
    if not huge_pages(big):
        pytest.skip("this kernel has no transparent huge pages")
    flags = mapping_flags(big.ctypes.data)
    assert flags is not None and "hg" in flags
    assert int(big[12345]) == 12345  # still reads the file

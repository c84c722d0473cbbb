"""Typed sampling: per-edge-type fanouts are honoured exactly (never more than k in-edges of a
type per destination, all of them when it has fewer), draws are uniform within a type, and
the C kernel and the torch path agree; typed blocks and loaders give DGL's per-type views."""

import pytest
import torch

import distgraph as dgl
from distgraph.data import add_reverse_edges, generate_mag

from test_sampling import chi_square


@pytest.fixture(scope="module")
def mag():
    return add_reverse_edges(generate_mag(400, 300, 20, 50, seed=4))


@pytest.fixture(params=["native", "torch"])
def path(request, monkeypatch):
    import distgraph.block as block
    import distgraph.sampling.kernel as kernel

    if request.param == "torch":
        for module in (kernel, block):
            monkeypatch.setattr(module, "kernels", lambda: None)
    elif kernel.kernels() is None:
        pytest.skip("the C kernels are not built")
    return request.param


def in_degree_by_type(g, nodes: torch.Tensor) -> torch.Tensor:
    """(len(nodes), num_etypes) in-degree of each node per edge type."""
    kinds = g.map_to_per_etype(torch.arange(g.num_edges()))[0]
    deg = torch.zeros(g.num_nodes(), len(g.canonical_etypes), dtype=torch.int64)
    deg.index_put_((g.dst, kinds), torch.ones(g.num_edges(), dtype=torch.int64), accumulate=True)
    return deg[nodes]


def test_per_type_fanouts_are_honoured_exactly(mag, path):
    fanout = {c: k for c, k in zip(mag.canonical_etypes, [2, -1, 3, 0, 1, 5, 2, 4])}
    seeds = {t: torch.arange(min(mag.num_nodes(t), 60)) for t in mag.ntypes}
    homo = torch.cat([mag.map_to_homo_nid(v, t) for t, v in seeds.items()])
    e = dgl.sample_neighbors(mag, seeds, fanout, generator=torch.Generator().manual_seed(1))
    kinds = mag.map_to_per_etype(e.eids)[0]
    assert torch.equal(mag.src[e.eids], e.src) and torch.equal(mag.dst[e.eids], e.dst)  # real edges
    assert e.eids.unique().numel() == e.eids.numel()  # none twice
    got = torch.zeros(mag.num_nodes(), len(mag.canonical_etypes), dtype=torch.int64)
    got.index_put_((e.dst, kinds), torch.ones_like(kinds), accumulate=True)
    deg = in_degree_by_type(mag, homo)
    ks = torch.tensor([fanout[c] for c in mag.canonical_etypes])
    expected = torch.where(ks < 0, deg, torch.minimum(deg, ks.clamp(min=0)))
    assert torch.equal(got[homo], expected)
    assert (deg > ks.clamp(min=0)).any() and (deg[:, ks > 0] > 0).any()  # the bounds were tested
    # per-type views of the frontier
    c = ("author", "writes", "paper")
    u, v = e.edges(etype="writes")
    assert u.numel() == e.num_edges(c) and (u < mag.num_nodes("author")).all() and (v < 60).all()
    assert torch.equal(e.edata[dgl.EID][c], mag.map_to_per_etype(e.eids[kinds == mag.get_etype_id(c)])[1])
    with pytest.raises(dgl.InputError, match="lacks edge types"):
        dgl.sample_neighbors(mag, seeds, {"writes": 2})


def test_typed_draws_are_uniform_within_a_type(mag, path):
    c = ("paper", "cites", "paper")
    kinds = mag.map_to_per_etype(torch.arange(mag.num_edges()))[0]
    cites = kinds == mag.get_etype_id(c)
    node = int(torch.bincount(mag.dst[cites]).argmax())  # the paper with the most citations
    deg = int((mag.dst[cites] == node).sum())
    assert deg >= 8
    fanout = {x: (2 if x == c else 0) for x in mag.canonical_etypes}
    gen = torch.Generator().manual_seed(3)
    picked = torch.cat([dgl.sample_neighbors(mag, {"paper": torch.tensor([node])}, fanout, generator=gen).eids
                        for _ in range(3000)])
    _, counts = torch.unique(picked, return_counts=True)
    assert counts.numel() == deg
    expected = torch.full((deg,), 2 * 3000 / deg, dtype=torch.float64)
    assert chi_square(counts.double(), expected) < deg - 1 + 4 * (2 * (deg - 1)) ** 0.5


def test_typed_loader_yields_dicts_and_blocks_with_per_type_views(mag):
    sampler = dgl.dataloading.NeighborSampler([{c: 2 for c in mag.canonical_etypes}, 3], prefetch_node_feats=["feat"],
                                              prefetch_labels=["label"])
    train = {"paper": torch.arange(100), "author": torch.arange(40)}
    loader = dgl.dataloading.DistNodeDataLoader(mag, train, sampler, batch_size=50, shuffle=True,
                                                generator=torch.Generator().manual_seed(0))
    seen = {t: [] for t in mag.ntypes}
    for input_nodes, output_nodes, blocks in loader:
        assert set(input_nodes) == set(mag.ntypes) and set(output_nodes) == set(mag.ntypes)
        for t in mag.ntypes:
            assert torch.equal(blocks[0].srcdata[dgl.NID][t], input_nodes[t])
            assert torch.equal(blocks[-1].dstdata[dgl.NID][t], output_nodes[t])
            assert blocks[0].num_src_nodes(t) == input_nodes[t].numel()
            seen[t].append(output_nodes[t])
        assert torch.equal(blocks[0].srcdata["feat"]["paper"], mag.nodes["paper"].data["feat"][input_nodes["paper"]])
        assert torch.equal(blocks[-1].dstdata["label"]["paper"],
                           mag.nodes["paper"].data["label"][output_nodes["paper"]])
        for b in blocks:  # every typed edge joins nodes of its types, as in the graph
            for c in b.canonical_etypes:
                u, v = b.edges(etype=c)
                eids = mag.map_to_homo_eid(b.edata[dgl.EID][c], c)
                assert torch.equal(mag.map_to_homo_nid(b.srcdata[dgl.NID][c[0]][u], c[0]), mag.src[eids])
                assert torch.equal(mag.map_to_homo_nid(b.dstdata[dgl.NID][c[2]][v], c[2]), mag.dst[eids])
            assert torch.equal(b.src_homogeneous({t: b.srcdata[dgl.NID][t].unsqueeze(1).float()
                                                  for t in b.srctypes}).flatten().long(), b.types.src_tid)
    for t, ids in train.items():
        assert torch.equal(torch.cat(seen[t]).sort().values, ids)  # every seed of every type once
    with pytest.raises(dgl.InputError, match="as a dict"):
        dgl.dataloading.DistNodeDataLoader(mag, torch.arange(10), sampler)


def test_typed_edge_loader_negatives_and_reverse_types(mag):
    writes, rev = ("author", "writes", "paper"), ("paper", "rev-writes", "author")
    loader = dgl.dataloading.DistEdgeDataLoader(
        mag, {writes: torch.arange(200)}, dgl.dataloading.NeighborSampler([-1]),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(3), exclude="reverse_types",
        reverse_etypes={writes: rev, rev: writes}, batch_size=64)
    for input_nodes, pos, neg, blocks in loader:
        assert pos.num_edges(writes) == pos.num_edges() and neg.num_edges(writes) == 3 * pos.num_edges()
        u, v = pos.edges(etype=writes)
        ids = pos.edata[dgl.EID][writes]
        assert torch.equal(pos.ndata[dgl.NID]["author"][u], mag.map_to_per_ntype(mag.src[mag.map_to_homo_eid(ids, writes)])[1])
        nu, nv = neg.edges(etype=writes)
        assert (neg.ndata[dgl.NID]["paper"][nv] < mag.num_nodes("paper")).all()
        blocked = torch.cat([mag.map_to_homo_eid(ids, writes), mag.map_to_homo_eid(ids, rev)])
        assert not torch.isin(blocks[0].eids, blocked).any()  # the batch's edges and their reverses left out
        pos.ndata["h"] = {t: torch.ones(pos.num_nodes(t), 2) for t in pos.ntypes}
        pos.apply_edges(dgl.function.u_dot_v("h", "h", "s"), etype=writes)
        assert torch.equal(pos.edata["s"][writes], torch.full((pos.num_edges(writes), 1), 2.0))
        assert pos.edges["writes"].data[dgl.EID] is ids and pos.nodes["author"].data["h"].shape[1] == 2
        for c in blocks[-1].canonical_etypes:  # DGL's `edges[etype].data` beside `edges(etype=...)`
            assert blocks[-1].edges[c].data[dgl.EID] is blocks[-1].edata[dgl.EID][c]


def test_weights_on_some_edge_types_draw_the_others_uniformly(mag):
    """In memory as on a DistGraph: `prob` names data that some edge types lack; their edges
    are drawn as without weights, and a zero weight is never drawn (`sample_etype_neighbors`
    takes homogeneous seed ids)."""
    cites = ("paper", "cites", "paper")
    w = (torch.arange(mag.num_edges(cites)) % 2).float()
    g = mag.local_var()
    g.edges[cites].data["w"] = w
    papers = torch.arange(0, mag.num_nodes("paper"), 2)
    e = dgl.distributed.sample_etype_neighbors(g, mag.map_to_homo_nid(papers, "paper"), 3, prob="w",
                                               generator=torch.Generator().manual_seed(0))
    assert bool((w[e.edges(form="eid", etype=cites)] > 0).all()) and e.num_edges(cites) > 0
    deg = in_degree_by_type(mag, mag.map_to_homo_nid(papers, "paper"))[:, mag.get_etype_id("writes")]
    assert e.num_edges("writes") == int(torch.clamp(deg, max=3).sum())
    with pytest.raises(dgl.InputError, match="no edge type has edge data 'nope'"):
        dgl.sample_neighbors(g, {"paper": papers}, 3, prob="nope")


@pytest.mark.parametrize("replace", [False, True])
def test_typed_draws_of_several_partitions_keep_each_edge_with_its_seed(mag, path, tmp_path, replace):
    """A host's partitions sampled at once with per-type fanouts, with replacement or not (the
    torch path samples a type at a time): merged, every edge is a real edge into the seed it
    is listed for, as the partitions hold it."""
    from distgraph.partition import load_partition, load_partition_book, partition_graph
    from distgraph.sampling.local import sample_partitions

    partition_graph(mag, "mag", 2, tmp_path)
    config = str(tmp_path / "mag.json")
    book = load_partition_book(config, 0)
    parts = [load_partition(config, m) for m in range(2)]
    g = torch.Generator().manual_seed(0)
    seeds = torch.cat([book.partid2nids(0)[:150], book.partid2nids(1)[:150]])
    seeds = seeds[torch.randperm(seeds.numel(), generator=g)]
    fanout = torch.tensor([2, 3] * len(book.canonical_etypes))[:len(book.canonical_etypes)]
    jobs = {m: (parts[m], torch.Generator().manual_seed(m), None) for m in range(2)}
    e = sample_partitions(jobs, seeds, book.nid2partid(seeds, None), fanout, replace)
    assert e.eids.numel() > 300
    for m in range(2):
        lo, hi = book.edge_range(m, None)
        here = (e.eids >= lo) & (e.eids < hi)
        src, dst = parts[m].find_owned_edges(e.eids[here])
        assert torch.equal(src, e.src[here]) and torch.equal(dst, e.dst[here])

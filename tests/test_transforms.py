"""DGL's graph transforms and data scopes, checked against the examples and rules of DGL's
documentation: `reverse`, `add_self_loop`, `remove_self_loop`, `to_simple`, `to_bidirected`
(as functions and as graph methods, homogeneous and per edge type), `local_var` /
`local_scope` on graphs, blocks and pair graphs, and `from distgraph import DGLGraph`."""

import pytest
import torch

import distgraph as dgl
from distgraph import DGLGraph
from distgraph.errors import InputError

T = torch.tensor


def hetero(edges: dict, counts: dict) -> DGLGraph:
    return DGLGraph.from_hetero({c: (T(u), T(v)) for c, (u, v) in edges.items()}, counts)


def pairs(g, etype=None) -> list[tuple[int, int]]:
    u, v = g.edges(etype=etype)
    return list(zip(u.tolist(), v.tolist()))


def test_dglgraph_is_the_graph_class_with_dgl_edge_listing():
    g = DGLGraph(T([2, 0, 1]), T([0, 1, 0]))
    assert DGLGraph is dgl.Graph and g.num_nodes() == 3
    assert pairs(g) == [(2, 0), (0, 1), (1, 0)] and torch.equal(g.edges(form="eid"), T([0, 1, 2]))
    u, v, e = g.edges(form="all", order="srcdst")
    assert (u.tolist(), v.tolist(), e.tolist()) == ([0, 1, 2], [1, 0, 0], [1, 2, 0])
    assert torch.equal(g.nodes(), T([0, 1, 2]))


def test_reverse_keeps_edge_order_and_copies_data_as_asked():
    g = DGLGraph(T([0, 1, 2]), T([1, 2, 0]))
    g.ndata["h"] = T([[0.0], [1.0], [2.0]])
    g.edata["h"] = T([[3.0], [4.0], [5.0]])
    rg = dgl.reverse(g, copy_edata=True)
    assert pairs(rg) == [(1, 0), (2, 1), (0, 2)]
    assert rg.ndata["h"] is g.ndata["h"] and torch.equal(rg.edata["h"], g.edata["h"])
    assert "h" not in g.reverse().edata and "h" not in dgl.reverse(g, copy_ndata=False).ndata
    hg = hetero({("user", "follows", "user"): ([0, 2], [1, 2]), ("user", "plays", "game"): ([1, 2, 1], [2, 1, 1])},
                {"user": 3, "game": 3})
    hg.nodes["game"].data["hv"] = torch.ones(3, 1)
    hg.edges["plays"].data["he"] = torch.zeros(3, 1)
    rg = dgl.reverse(hg, copy_ndata=True)
    assert rg.canonical_etypes == [("user", "follows", "user"), ("game", "plays", "user")]
    assert pairs(rg, "follows") == [(1, 0), (2, 2)] and pairs(rg, "plays") == [(2, 1), (1, 2), (1, 1)]
    assert torch.equal(rg.nodes["game"].data["hv"], torch.ones(3, 1)) and dict(rg.edges["plays"].data) == {}


def test_add_self_loop_fills_or_reduces_edge_data():
    g = DGLGraph(T([0, 0, 2]), T([2, 1, 0]))
    g.ndata["hv"] = torch.arange(3.0).reshape(-1, 1)
    g.edata["he"] = torch.arange(3.0).reshape(-1, 1)
    s = dgl.add_self_loop(g, fill_data="sum")
    assert s.num_edges() == 6 and pairs(s)[3:] == [(0, 0), (1, 1), (2, 2)]
    assert s.edata["he"].flatten().tolist() == [0, 1, 2, 2, 1, 0]  # DGL's doc example
    assert g.add_self_loop().edata["he"].flatten().tolist() == [0, 1, 2, 1, 1, 1]
    g.edata["w"] = T([4, 6, 9])
    m = dgl.add_self_loop(g, edge_feat_names=["w"], fill_data="max")
    assert m.edata["w"].tolist() == [4, 6, 9, 9, 6, 4] and m.edata["he"].flatten().tolist()[3:] == [0, 0, 0]
    assert dgl.add_self_loop(g, fill_data="mean").edata["w"].tolist()[3:] == [9, 6, 4]
    again = dgl.add_self_loop(s)  # loops are added whether or not they exist
    assert again.num_edges() == 9
    hg = hetero({("user", "follows", "user"): ([1, 2], [0, 1]), ("user", "plays", "game"): ([0, 1], [0, 1])},
                {"user": 3, "game": 2})
    hs = dgl.add_self_loop(hg, etype="follows")
    assert hs.num_edges("follows") == 5 and hs.num_edges("plays") == 2
    with pytest.raises(InputError, match="one type"):
        dgl.add_self_loop(hg, etype="plays")
    with pytest.raises(InputError, match="fill_data"):
        dgl.add_self_loop(g, fill_data="median")


def test_remove_self_loop_drops_every_loop_and_keeps_other_data():
    g = DGLGraph(T([0, 0, 0, 1]), T([1, 0, 0, 2]))
    g.edata["he"] = torch.arange(4.0).reshape(-1, 1)
    r = dgl.remove_self_loop(g)
    assert pairs(r) == [(0, 1), (1, 2)] and r.edata["he"].flatten().tolist() == [0, 3]
    hg = hetero({("user", "follows", "user"): ([0, 1, 1, 1, 2], [0, 0, 1, 1, 1]),
                 ("user", "plays", "game"): ([0, 1], [0, 1])}, {"user": 3, "game": 2})
    hr = hg.remove_self_loop(etype="follows")
    assert (hr.num_nodes("user"), hr.num_nodes("game"), hr.num_edges("follows"), hr.num_edges("plays")) == (3, 2, 2, 2)


def test_to_simple_merges_parallel_edges_in_order_of_first_appearance():
    g = DGLGraph(T([0, 1, 2, 1]), T([1, 2, 0, 2]))
    g.ndata["h"] = T([[0.0], [1.0], [2.0]])
    g.edata["h"] = T([[3.0], [4.0], [5.0], [6.0]])
    sg, wm = dgl.to_simple(g, return_counts="cnt", writeback_mapping=True)  # DGL's doc example
    assert pairs(sg) == [(0, 1), (1, 2), (2, 0)] and sg.edata["cnt"].tolist() == [1, 2, 1]
    assert wm.tolist() == [0, 1, 2, 1] and "h" not in sg.edata and torch.equal(sg.ndata["h"], g.ndata["h"])
    assert dgl.to_simple(g, copy_edata=True, aggregator="sum").edata["h"].flatten().tolist() == [3, 10, 5]
    assert dgl.to_simple(g, copy_edata=True, aggregator="mean").edata["h"].flatten().tolist() == [3, 5, 5]
    assert dgl.to_simple(g, copy_edata=True).edata["h"].flatten().tolist() == [3, 4, 5]
    hg = hetero({("user", "wins", "user"): ([0, 2, 0, 2, 2], [1, 1, 2, 1, 0]),
                 ("user", "plays", "game"): ([1, 2, 1], [2, 1, 1])}, {"user": 3, "game": 3})
    hg.nodes["game"].data["hv"] = torch.ones(3, 1)
    hg.edges["plays"].data["he"] = torch.zeros(3, 1)
    sg, wm = hg.to_simple(copy_ndata=False, writeback_mapping=True)
    assert pairs(sg, "wins") == [(0, 1), (2, 1), (0, 2), (2, 0)]
    assert wm[("user", "wins", "user")].tolist() == [0, 1, 2, 1, 3]
    assert pairs(sg, "plays") == [(1, 2), (2, 1), (1, 1)] and wm[("user", "plays", "game")].tolist() == [0, 1, 2]
    assert "hv" not in sg.nodes["game"].data and "he" not in sg.edges["plays"].data
    assert sg.edges["wins"].data["count"].tolist() == [1, 2, 1, 1]
    assert sg.edges["plays"].data["count"].tolist() == [1] * 3
    with pytest.raises(InputError, match="aggregator"):
        dgl.to_simple(g, aggregator="max")


def test_to_bidirected_is_simple_and_symmetric_per_edge_type():
    g = DGLGraph(T([0, 1, 2]), T([1, 2, 0]))
    assert pairs(dgl.to_bidirected(g)) == [(0, 1), (1, 2), (2, 0), (1, 0), (2, 1), (0, 2)]  # DGL's doc example
    g2 = DGLGraph(T([0, 1, 2, 0]), T([1, 2, 0, 2]))
    g2.ndata["x"] = torch.ones(3, 2)
    g2.edata["w"] = torch.ones(4)
    b = dgl.to_bidirected(g2)
    assert sorted(pairs(b)) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)] and "w" not in b.edata
    assert "x" not in b.ndata and dgl.to_bidirected(g2, copy_ndata=True).ndata["x"] is g2.ndata["x"]
    with pytest.warns(UserWarning, match="deprecated"):
        dgl.to_bidirected(g2, readonly=True)
    hg = hetero({("user", "wins", "user"): ([0, 2, 0, 2], [1, 1, 2, 0]),
                 ("user", "follows", "user"): ([1, 2, 1], [2, 1, 1])}, {"user": 3})
    hb = dgl.to_bidirected(hg)
    assert sorted(pairs(hb, "wins")) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert sorted(pairs(hb, "follows")) == [(1, 1), (1, 2), (2, 1)]
    big = DGLGraph(torch.randint(0, 50, (400,)), torch.randint(0, 50, (400,)), 50)
    b = dgl.to_bidirected(big)
    edges = set(pairs(b))
    assert len(edges) == b.num_edges() and all((v, u) in edges for u, v in edges)
    assert edges == {p for u, v in pairs(big) for p in ((u, v), (v, u))}
    bip = hetero({("user", "plays", "game"): ([0], [0])}, {"user": 1, "game": 1})
    with pytest.raises(InputError, match="one type"):
        dgl.to_bidirected(bip)
    block = dgl.to_block(dgl.sample_neighbors(big, T([1, 2]), 2), T([1, 2]))
    with pytest.raises(InputError, match="not a block"):
        dgl.to_simple(block)


def test_local_var_and_local_scope_keep_assignments_away_from_the_graph():
    g = DGLGraph(T([0, 1]), T([1, 2]))
    g.ndata["x"] = torch.zeros(3)
    local = g.local_var()
    local.ndata["y"] = torch.ones(3)
    local.ndata["x"] = torch.ones(3)
    assert "y" not in g.ndata and torch.equal(g.ndata["x"], torch.zeros(3))
    with g.local_scope():
        g.ndata["y"] = torch.ones(3)
        g.edata["w"] = torch.ones(2)
        g.ndata["x"][0] = 5.0  # in place: the tensor is shared, as in DGL
        del g.ndata["x"]
        assert "y" in g.ndata and "x" not in g.ndata
    assert "y" not in g.ndata and "w" not in g.edata and float(g.ndata["x"][0]) == 5.0


def test_blocks_and_pair_graphs_have_local_scopes():
    g = DGLGraph(torch.randint(0, 20, (80,)), torch.randint(0, 20, (80,)), 20)
    block = dgl.to_block(dgl.sample_neighbors(g, T([1, 2, 3]), 3), T([1, 2, 3]))
    local = block.local_var()
    assert local.is_block and local.num_src_nodes() == block.num_src_nodes()
    local.srcdata["h"] = torch.ones(block.num_src_nodes())
    local.dstdata["h"] = torch.ones(3)
    assert "h" not in block.srcdata and "h" not in block.dstdata and "h" in local.srcdata
    with block.local_scope():
        block.edata["w"] = torch.ones(block.num_edges())
        assert "w" in block.edata
    assert "w" not in block.edata and torch.equal(block.srcdata[dgl.NID], local.srcdata[dgl.NID])
    pair = dgl.dataloading.pair_graph.PairGraph(T([4, 5, 6]), T([0, 1]), T([1, 2]))
    with pair.local_scope():
        pair.ndata["h"] = torch.ones(3, 2)
        pair.apply_edges(dgl.function.u_dot_v("h", "h", "score"))
        assert pair.edata["score"].flatten().tolist() == [2.0, 2.0]
    assert "h" not in pair.ndata and "score" not in pair.edata and pair.local_var() is not pair

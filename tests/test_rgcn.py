"""RelGraphConv and HeteroGraphConv on typed blocks: equal to a dense reference computed here
(per relation, adjacency matrices times features times weights), and to torch_geometric's
RGCNConv given the same weights when it is installed."""

import pytest
import torch

import distgraph as dgl
from distgraph.nn import HeteroGraphConv, RelGraphConv, SAGEConv, relation_norm


def dense(block, feat, weights, norm, loop, bias):
    """sum_r A_r (feat W_r) + feat_dst W_0 + b, with A_r[v, u] the summed norms of u -> v edges of r."""
    nd, ns = block.num_dst_nodes(), block.num_src_nodes()
    out = feat[:nd] @ loop + bias
    u, v = block.edge_index
    for r in range(weights.shape[0]):
        a = torch.zeros(nd, ns)
        at = block.edge_type() == r
        a.index_put_((v[at], u[at]), norm[at].flatten(), accumulate=True)
        out = out + a @ feat @ weights[r]
    return out


@pytest.mark.parametrize("bases", [None, 2])
def test_rel_graph_conv_equals_the_dense_reference(block, bases):
    torch.manual_seed(1)
    conv = RelGraphConv(6, 5, 4, regularizer="basis" if bases else None, num_bases=bases)
    torch.nn.init.normal_(conv.h_bias)
    feat = torch.randn(block.num_src_nodes(), 6)
    norm = relation_norm(block)
    out = conv(block, feat, norm=norm)
    ref = dense(block, feat, conv.relation_weights(), norm, conv.loop_weight, conv.h_bias)
    assert torch.allclose(out, ref, atol=1e-5)
    # the mean of each relation: its norms sum to 1 at every destination that has its edges
    key = block.edge_index[1] * 4 + block.edge_type()
    sums = torch.zeros(block.num_dst_nodes() * 4).index_add_(0, key, norm.flatten())
    assert torch.allclose(sums[torch.unique(key)], torch.ones(torch.unique(key).numel()))
    # edges in any order give the same (bags are sorted inside)
    perm = torch.randperm(block.num_edges())
    shuffled = dgl.Block(block.src_nodes, block.dst_nodes, block.edge_index[:, perm], block.eids[perm])
    assert torch.allclose(conv(shuffled, feat, block.edge_type()[perm], norm[perm]), out, atol=1e-5)
    loud = RelGraphConv(6, 5, 4, layer_norm=True, activation=torch.relu, dropout=0.0)
    assert (loud(block, feat) >= 0).all()


def test_rel_graph_conv_equals_pyg_rgcnconv(block):
    nn = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(2)
    conv = RelGraphConv(6, 5, 4, regularizer="basis", num_bases=2)
    torch.nn.init.normal_(conv.h_bias)
    pyg = nn.RGCNConv(6, 5, num_relations=4, num_bases=2, aggr="mean")
    with torch.no_grad():
        pyg.weight.copy_(conv.bases)
        pyg.comp.copy_(conv.coeff)
        pyg.root.copy_(conv.loop_weight)
        pyg.bias.copy_(conv.h_bias)
    feat = torch.randn(block.num_src_nodes(), 6)
    ours = conv(block, feat, norm=relation_norm(block))
    theirs = pyg((feat, feat[: block.num_dst_nodes()]), block.edge_index, block.edge_type())
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_hetero_graph_conv_runs_a_module_per_relation(block):
    torch.manual_seed(3)
    mods = {c[1]: SAGEConv(4, 3) for c in block.canonical_etypes}
    conv = HeteroGraphConv(mods, aggregate="sum")
    feats = {t: torch.randn(block.num_src_nodes(t), 4) for t in block.srctypes if block.num_src_nodes(t)}
    out = conv(block, feats)
    for t, h in out.items():
        expected = 0
        for c in block.canonical_etypes:
            if c[2] == t and block.num_edges(c) and c[0] in feats:
                expected = expected + mods[c[1]](block.relation(c), (feats[c[0]], feats[t][: block.num_dst_nodes(t)]))
        assert h.shape == (block.num_dst_nodes(t), 3) and torch.allclose(h, expected)
    assert set(out) == {c[2] for c in block.canonical_etypes if block.num_edges(c)}
    # a relation block indexes its types' rows: its edges are those of the typed view
    c = ("author", "writes", "paper")
    rel = block.relation(c)
    u, v = block.edges(etype=c)
    assert torch.equal(rel.edge_index[0], u) and torch.equal(rel.edge_index[1], v)
    assert torch.equal(block.srcdata[dgl.NID]["author"][u],
                       block.types.src_tid[block.edge_index[0][block.edge_type() == 0]])

"""`GraphConv` and `WeightBasis` (DGL's arguments) against dense references computed here:
every normalisation, own / external / no weight, edge weights, both multiplication orders,
graphs and blocks; DGL's zero-in-degree refusal; and DGL's distributed RGCN layer (a
HeteroGraphConv of per-relation `GraphConv(norm="right", weight=False)` fed `WeightBasis`
weights) equal to `RelGraphConv` with the same weights."""

import pytest
import torch

import distgraph as dgl
import distgraph.nn.pytorch as dglnn
from distgraph.data import generate_mag
from distgraph.errors import InputError
from distgraph.nn import HeteroGraphConv, RelGraphConv, relation_norm


def dense(u, v, n_src, n_dst, x, w, norm, edge_weight=None):
    """D_in^a A D_out^b x W over the adjacency A[v, u] = sum of the edges' weights."""
    a = torch.zeros(n_dst, n_src)
    a.index_put_((v, u), torch.ones(u.numel()) if edge_weight is None else edge_weight, accumulate=True)
    out_deg = torch.bincount(u, minlength=n_src).clamp(min=1).float()
    in_deg = torch.bincount(v, minlength=n_dst).clamp(min=1).float()
    left = {"both": out_deg ** -0.5, "left": 1 / out_deg}.get(norm, torch.ones(n_src))
    right = {"both": in_deg ** -0.5, "right": 1 / in_deg}.get(norm, torch.ones(n_dst))
    h = right[:, None] * (a @ (left[:, None] * x))
    return h if w is None else h @ w


@pytest.fixture
def graph():
    """A random multigraph whose edges are not grouped by destination, with self-loops added."""
    gen = torch.Generator().manual_seed(0)
    g = dgl.DGLGraph(torch.randint(0, 30, (120,), generator=gen), torch.randint(0, 30, (120,), generator=gen), 30)
    return dgl.add_self_loop(g)


@pytest.mark.parametrize("norm", ["none", "both", "right", "left"])
@pytest.mark.parametrize("dims", [(6, 3), (3, 6)])  # weight first / aggregation first
def test_graph_conv_equals_the_dense_reference_on_a_graph(graph, norm, dims):
    torch.manual_seed(1)
    conv = dglnn.GraphConv(*dims, norm=norm, activation=torch.tanh)
    torch.nn.init.normal_(conv.bias)
    x = torch.randn(graph.num_nodes(), dims[0])
    ew = torch.rand(graph.num_edges())
    ref = dense(graph.src, graph.dst, 30, 30, x, conv.weight, norm, ew) + conv.bias
    assert torch.allclose(conv(graph, x, edge_weight=ew), torch.tanh(ref), atol=1e-5)
    plain = dglnn.GraphConv(*dims, norm=norm, weight=False, bias=False)
    assert torch.allclose(plain(graph, x), dense(graph.src, graph.dst, 30, 30, x, None, norm), atol=1e-5)


def test_graph_conv_on_a_block_takes_its_sources_or_a_pair_and_an_external_weight(block):
    rel = block.relation("cites")
    u, v = rel.edge_index
    torch.manual_seed(2)
    x = torch.randn(rel.num_src_nodes(), 5)
    w = torch.randn(5, 4, requires_grad=True)
    conv = dglnn.GraphConv(5, 4, norm="right", weight=False, bias=False, allow_zero_in_degree=True)
    out = conv(rel, (x, x[: rel.num_dst_nodes()]), weight=w)
    assert out.shape == (rel.num_dst_nodes(), 4)
    assert torch.allclose(out, dense(u, v, rel.num_src_nodes(), rel.num_dst_nodes(), x, w, "right"), atol=1e-5)
    assert torch.equal(conv(rel, x, weight=w), out)
    out.sum().backward()
    assert w.grad is not None and w.grad.abs().sum() > 0
    with pytest.raises(InputError, match="create it with weight=False"):
        dglnn.GraphConv(5, 4)(rel, x, weight=w)
    with pytest.raises(InputError, match="source rows"):
        conv(rel, x[:-1], weight=w)


def test_zero_in_degree_is_refused_unless_allowed_as_in_dgl():
    g = dgl.DGLGraph(torch.tensor([0, 1, 2, 3, 2, 5]), torch.tensor([1, 2, 3, 4, 0, 3]))  # DGL's doc example
    x = torch.ones(6, 10)
    with pytest.raises(InputError, match="add_self_loop"):
        dglnn.GraphConv(10, 2)(g, x)
    conv = dglnn.GraphConv(10, 2, allow_zero_in_degree=True)
    torch.nn.init.normal_(conv.bias)
    out = conv(g, x)
    assert torch.equal(out[5], conv.bias)  # node 5 has no in-edge: only the bias
    assert conv(dgl.add_self_loop(g), x).shape == (6, 2)  # DGL's remedy
    conv.set_allow_zero_in_degree(False)
    with pytest.raises(InputError):
        conv(g, x)
    with pytest.raises(InputError, match="norm must be one of"):
        dglnn.GraphConv(3, 3, norm="sym")


def test_graph_conv_refuses_a_heterogeneous_graph_and_edge_weights_of_another_length(graph):
    hetero = generate_mag(20, 10, 2, 3, seed=0)
    with pytest.raises(InputError, match="HeteroGraphConv"):
        dglnn.GraphConv(4, 4)(hetero, torch.ones(hetero.num_nodes(), 4))
    with pytest.raises(InputError, match="edge_weight"):
        dglnn.GraphConv(4, 4)(graph, torch.ones(30, 4), edge_weight=torch.ones(3))


def test_weight_basis_composes_its_bases():
    basis = dglnn.WeightBasis((4, 3), 2, 5)
    w = basis()
    assert w.shape == (5, 4, 3)
    assert torch.allclose(w, torch.einsum("ob,bij->oij", basis.w_comp, basis.weight), atol=1e-6)
    w.sum().backward()
    assert basis.weight.grad is not None and basis.w_comp.grad is not None
    with pytest.warns(UserWarning, match="fewer bases"):
        dglnn.WeightBasis((2, 2), 3, 3)


def test_dgl_distributed_rgcn_layer_equals_rel_graph_conv(block):
    """DGL's entity_classify_dist.py layer: per relation a GraphConv(norm="right", weight=False,
    bias=False) given that relation's WeightBasis weight, summed per destination type; on a
    `local_var()` of the block, which keeps the block's data unchanged."""
    torch.manual_seed(3)
    rels = block.etypes
    basis = dglnn.WeightBasis((6, 5), 2, len(rels))
    conv = HeteroGraphConv({r: dglnn.GraphConv(6, 5, norm="right", weight=False, bias=False,
                                               allow_zero_in_degree=True) for r in rels})
    feats = {t: torch.randn(block.num_src_nodes(t), 6) for t in block.srctypes}
    weight = basis()
    local = block.local_var()
    local.srcdata["h"] = feats
    out = conv(local, feats, mod_kwargs={r: {"weight": w.squeeze(0)} for r, w in zip(rels, torch.split(weight, 1))})
    assert "h" not in block.srcdata
    ref_conv = RelGraphConv(6, 5, len(rels), bias=False, self_loop=False)
    with torch.no_grad():
        ref_conv.weight.copy_(weight)
    ref = block.dst_per_type(ref_conv(block, block.src_homogeneous(feats), norm=relation_norm(block)))
    assert set(out) == set(ref)
    for t in ref:
        assert torch.allclose(out[t], ref[t], atol=1e-5)

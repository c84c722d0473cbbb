"""On a CUDA device (`make test-gpu`; skipped without one): mini-batches moved there from pinned
buffers on a stream of their own are the CPU's batches, and the layers compute on them what
they compute on the CPU (typed blocks' views made on the GPU included)."""

import pytest
import torch
import torch.nn.functional as F

import distgraph as dgl
from distgraph.dataloading import loader as loader_module
from distgraph.nn import GraphConv, GraphSAGE, HeteroGraphConv, RelGraphConv, relation_norm
from distgraph.optim.sparse import coalesce

from test_device_loaders import arrays, loaders, node_loader

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="torch finds no CUDA device")]
CUDA = torch.device("cuda", 0)


@pytest.mark.parametrize("threads", [0, 2])
@pytest.mark.parametrize("pin, stream", [(None, None), (False, False)])
def test_batches_on_the_gpu_are_the_cpu_batches(sbm, mag, threads, pin, stream, monkeypatch):
    monkeypatch.setattr(loader_module, "batch_threads", lambda runs_user_code, remote=False: threads)
    for plain, moved in zip(loaders(sbm, mag), loaders(sbm, mag, "cuda", pin_prefetcher=pin,
                                                       use_alternate_streams=stream)):
        assert moved.mover.pin == (pin is None) and (moved.mover.stream is not None) == (stream is None)
        for a, b in zip(plain, moved):
            here, there = arrays(a), arrays(b)
            assert all(y.device == CUDA for y in there)
            assert len(here) == len(there) and all(torch.equal(x, y.cpu()) for x, y in zip(here, there))


def test_graphsage_computes_on_gpu_blocks_what_it_computes_on_cpu_ones(sbm):
    torch.manual_seed(0)
    model = GraphSAGE(8, 16, 6, dropout=0.0)
    gpu_model = GraphSAGE(8, 16, 6, dropout=0.0).to(CUDA)
    gpu_model.load_state_dict(model.state_dict())
    for (_, _, blocks), (_, _, gpu_blocks) in zip(node_loader(sbm, torch.arange(200)),
                                                  node_loader(sbm, torch.arange(200), CUDA)):
        out = model(blocks, blocks[0].srcdata["feat"])
        gpu_out = gpu_model(gpu_blocks, gpu_blocks[0].srcdata["feat"])
        assert gpu_out.device == CUDA and torch.allclose(out, gpu_out.cpu(), atol=1e-5)
        F.cross_entropy(out, blocks[-1].dstdata["label"]).backward()
        F.cross_entropy(gpu_out, gpu_blocks[-1].dstdata["label"]).backward()
    for p, q in zip(model.parameters(), gpu_model.parameters()):
        assert torch.allclose(p.grad, q.grad.cpu(), atol=1e-4)


def test_typed_blocks_on_the_gpu_give_the_cpu_views_and_layers(mag):
    """Per-type edge ids, relations and per-type edges are worked out on the GPU (the C grouping
    reads host memory only; the id map is asked on the CPU)."""
    torch.manual_seed(0)
    rels = sorted({c[1] for c in mag.canonical_etypes})
    hetero = HeteroGraphConv({r: GraphConv(8, 5, norm="right", allow_zero_in_degree=True) for r in rels})
    rgcn = RelGraphConv(8, 5, len(mag.canonical_etypes), "basis", 2, self_loop=True)
    gpu_hetero, gpu_rgcn = (HeteroGraphConv({r: GraphConv(8, 5, norm="right", allow_zero_in_degree=True)
                                             for r in rels}).to(CUDA),
                            RelGraphConv(8, 5, len(mag.canonical_etypes), "basis", 2, self_loop=True).to(CUDA))
    gpu_hetero.load_state_dict(hetero.state_dict())
    gpu_rgcn.load_state_dict(rgcn.state_dict())
    for (_, _, blocks), (_, _, gpu_blocks) in zip(node_loader(mag, {"paper": torch.arange(100)}),
                                                  node_loader(mag, {"paper": torch.arange(100)}, CUDA)):
        b, gb = blocks[0], gpu_blocks[0]
        for c in b.canonical_etypes:
            assert torch.equal(b.edges[c].data[dgl.EID], gb.edges[c].data[dgl.EID].cpu())
            assert all(torch.equal(x, y.cpu()) for x, y in zip(b.edges(etype=c), gb.edges(etype=c)))
        h = {t: torch.randn(b.num_src_nodes(t), 8) for t in b.srctypes}
        gh = {t: x.to(CUDA) for t, x in h.items()}
        out, gpu_out = hetero(b, h), gpu_hetero(gb, gh)
        assert set(out) == set(gpu_out) and all(torch.allclose(out[t], gpu_out[t].cpu(), atol=1e-5) for t in out)
        x, gx = b.src_homogeneous(h), gb.src_homogeneous(gh)
        assert torch.allclose(rgcn(b, x, norm=relation_norm(b)), gpu_rgcn(gb, gx, norm=relation_norm(gb)).cpu(),
                              atol=1e-5)


def test_gradients_of_repeated_ids_are_summed_on_their_device():
    gen = torch.Generator().manual_seed(2)
    ids, grads = torch.randint(0, 50, (400,), generator=gen), torch.randn(400, 3, generator=gen)
    uniq, summed = coalesce(ids, grads)
    gpu_uniq, gpu_summed = coalesce(ids, grads.to(CUDA))
    assert gpu_uniq.device == gpu_summed.device == CUDA
    assert torch.equal(uniq, gpu_uniq.cpu()) and torch.allclose(summed, gpu_summed.cpu(), atol=1e-5)

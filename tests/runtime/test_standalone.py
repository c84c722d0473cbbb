"""Standalone mode: the whole API in one process over a 1-part partition."""

import gc

import pytest
import torch

from distgraph.errors import DistGraphError, InputError
from distgraph.optim import SparseAdagrad, SparseAdam

from .test_kvstore import dense_lazy_adam


@pytest.fixture
def standalone(runtime, parts):
    runtime.initialize(part_config=str(parts[1]))
    return runtime


def test_graph_data_and_tensor_indexing(standalone, graph):
    dist = standalone
    ctx = dist.get_context()
    assert ctx.standalone and ctx.book.num_partitions() == 1
    names = {t["name"] for t in ctx.client.list()}
    assert {"node~_N~feat", "node~_N~label", "node~_N~train_mask"} <= names
    feat = dist.DistTensor((2000, 16), torch.float32, "node~_N~feat")
    assert feat.part_policy.policy_str == "node~_N" and len(feat) == 2000 and feat.shape == (2000, 16)
    full = feat[torch.arange(2000)]
    ids = torch.tensor([5, 1999, 5, 0])
    assert torch.equal(feat[ids], full[ids]) and torch.equal(feat[3:6], full[3:6])
    assert feat[torch.tensor([], dtype=torch.int64)].shape == (0, 16)
    with pytest.raises(InputError, match="row id 2000 is out of range"):
        feat[torch.tensor([2000])]
    with pytest.raises(InputError, match="shape and dtype must match|already exists"):
        dist.DistTensor((2000, 8), torch.float32, "node~_N~feat")


def test_assignment_broadcast_cast_and_errors(standalone):
    dist = standalone
    t = dist.DistTensor((2000, 2), torch.float64, "t", init_func=dist.Constant(1.0))
    t[[7, 3]] = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)  # int32 -> float64 is safe
    t[[9]] = torch.tensor([5.0, 6.0])  # one row for every id
    assert t[[3, 7, 9, 0]].tolist() == [[3, 4], [1, 2], [5, 6], [1, 1]]
    with pytest.raises(InputError, match="cannot store"):
        dist.DistTensor((2000,), torch.int64, "i")[[0]] = torch.tensor([0.5])
    with pytest.raises(InputError, match="must have shape"):
        t[[1, 2]] = torch.zeros(3, 2)
    with pytest.raises(InputError, match="pass part_policy"):
        dist.DistTensor((5, 2), torch.float32, "odd")


def test_non_persistent_tensor_is_deleted_with_its_owner(standalone):
    dist = standalone
    client = dist.get_context().client
    t = dist.DistTensor((2000,), torch.float32)
    name = t.name
    assert name.startswith("anonymous-") and name in {x["name"] for x in client.list()}
    kept = dist.DistTensor((2000,), torch.float32, "kept", persistent=True)
    del t, kept
    gc.collect()
    names = {x["name"] for x in client.list()}
    assert name not in names and "kept" in names


def test_sparse_adagrad_and_adam_match_dense_references(standalone):
    dist = standalone
    emb = dist.DistEmbedding(2000, 4, "e1", init_func=dist.Uniform(-1, 1, seed=9))
    emb2 = dist.DistEmbedding(2000, 4, "e2", init_func=dist.Uniform(-1, 1, seed=9))
    dense = torch.nn.Parameter(emb.weight[torch.arange(2000)].clone())
    start2 = emb2.weight[torch.arange(2000)]
    ref = torch.optim.Adagrad([dense], lr=0.2, eps=1e-10)
    opt, opt2 = SparseAdagrad([emb], lr=0.2), SparseAdam([emb2], lr=0.02, betas=(0.8, 0.95))
    gen = torch.Generator().manual_seed(4)
    steps = []
    for _ in range(3):
        ids = torch.randint(0, 2000, (500,), generator=gen)  # with repeats
        target = torch.randn(500, 4, generator=gen)
        ((emb(ids) - target) ** 2).sum().backward()
        out2 = emb2(ids)
        ((out2 - target) ** 2).sum().backward()
        steps.append((ids, out2.grad.clone()))
        opt.step()
        opt2.step()
        ref.zero_grad()
        ((dense[ids] - target) ** 2).sum().backward()
        ref.step()
    assert torch.allclose(emb.weight[torch.arange(2000)], dense.detach(), atol=1e-6)
    expected = dense_lazy_adam(start2, steps, 0.02, 0.8, 0.95, 1e-8)
    assert torch.allclose(emb2.weight[torch.arange(2000)], expected, atol=1e-5)
    with torch.no_grad():
        emb(torch.tensor([1]))
    opt.step()  # nothing traced with grad: a no-op


def test_usage_errors(runtime, parts):
    with pytest.raises(DistGraphError, match="initialize"):
        runtime.DistTensor((2, 2), torch.float32, "x")
    with pytest.raises(InputError, match="1-part partition"):
        runtime.initialize(part_config=str(parts[2]))
    runtime.initialize(part_config=str(parts[1]))
    with pytest.raises(DistGraphError, match="already called"):
        runtime.initialize()
    runtime.barrier()  # a single trainer: returns at once
    with pytest.raises(InputError, match="DistEmbedding"):
        SparseAdagrad([torch.zeros(2)], lr=0.1)
    with pytest.raises(InputError, match="eps"):
        SparseAdam([runtime.DistEmbedding(2000, 2, "e")], lr=0.1, eps=0)

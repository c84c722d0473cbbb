"""DGL's names over a runtime: the DGL-shaped partition functions, ranks and counts,
`DistGraph`'s DGL methods (and `g._client`), `node_split` without a partition book and with
trainer ids, `zero_grad` before `backward` (DGL's idiom) training the embeddings, and
`DistTensor` / `DistEmbedding` pickled by reference as DGL's are (`th.save(t, f)`)."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import distgraph as dgl
from distgraph.errors import DistGraphError, InputError
from distgraph.partition import partition_graph


@pytest.fixture
def g(runtime, parts):
    runtime.initialize(part_config=str(parts[1]))
    return dgl.distributed.DistGraph("g", part_config=str(parts[1]))


def test_partition_functions_return_dgl_shapes(parts, graph):
    local, node_feats, edge_feats, book, name, ntypes, etypes = dgl.distributed.load_partition(parts[2], 1)
    assert name == "g" and ntypes == ["_N"] and etypes == [("_N", "_E", "_N")] and book.partid == 1
    inner = local.ndata["inner_node"]
    assert int(inner.sum()) == book.partid2nids(1).numel() and torch.equal(local.ndata[dgl.NID][inner],
                                                                           book.partid2nids(1))
    assert torch.equal(node_feats["_N/feat"], dgl.distributed.load_partition(parts[2], 1)[1]["_N/feat"])
    assert node_feats["_N/feat"].shape == (book.partid2nids(1).numel(), 16)
    assert local.edata["inner_edge"].all() and local.num_edges() == local.edata[dgl.EID].numel()
    assert dgl.distributed.load_partition(parts[2], 1, load_feats=False)[1] == {}
    book2, name2, nt, et = dgl.distributed.load_partition_book(parts[2], 0)
    assert name2 == "g" and nt == {"_N": 0} and et == {("_N", "_E", "_N"): 0} and book2.num_partitions() == 2


def test_distgraph_dgl_methods_roles_and_split_without_a_book(g, graph, monkeypatch):
    assert g.rank() == 0 and g.get_ntype_id("_N") == 0 and g.get_etype_id("_E") == 0
    assert g.to_canonical_etype("_E") == ("_N", "_E", "_N") and g.idtype == torch.int64 and g.device.type == "cpu"
    g.barrier()
    role = dgl.distributed.role
    assert (role.get_trainer_rank(), role.get_num_trainers(), role.get_role()) == (0, 1, "standalone")
    assert dgl.distributed.get_num_client() == dgl.distributed.get_num_clients() == 1 and dgl.distributed.get_rank() == 0
    train = dgl.distributed.node_split(g.ndata["train_mask"])  # the book comes from the mask, as in DGL
    assert torch.equal(train, torch.nonzero(g.ndata["train_mask"][torch.arange(g.num_nodes())]).flatten())
    monkeypatch.setattr(dgl.dataloading.split, "MASK_SLICE", 7)  # a mask is pulled a slice at a time
    assert torch.equal(dgl.distributed.node_split(g.ndata["train_mask"]), train) and train.numel() > 7
    assert dgl.distributed.node_split(np.arange(g.num_nodes())).numel() == g.num_nodes()  # ids, so node 0 stays
    sub = g.edge_subgraph(torch.tensor([3, 7, 3]))
    u, v = sub.edges()
    src, dst = g.find_edges(torch.tensor([3, 7, 3]))
    assert torch.equal(sub.ndata[dgl.NID][u], src) and torch.equal(sub.ndata[dgl.NID][v], dst)
    assert torch.equal(sub.edata[dgl.EID], torch.tensor([3, 7, 3]))
    assert torch.equal(torch.stack(dgl.distributed.find_edges(g, torch.tensor([3, 7]))), torch.stack(
        g.find_edges(torch.tensor([3, 7]))))
    frontier = g.sample_neighbors(torch.tensor([5, 9]), -1, exclude_edges=torch.arange(g.num_edges() // 2))
    assert (frontier.edata[dgl.EID] >= g.num_edges() // 2).all()
    assert dgl.distributed.in_subgraph(g, torch.tensor([5])).num_edges() == int(g.in_degrees(torch.tensor([5])))
    with pytest.raises(InputError):
        g.sample_neighbors(torch.tensor([5]), 2, output_device="cuda")


def test_zero_grad_before_backward_trains_the_embedding(g):
    emb = dgl.distributed.DistEmbedding(g.num_nodes(), 4, "e", init_func=dgl.distributed.Constant(1.0))
    opt = dgl.distributed.optim.SparseAdagrad([emb], lr=0.1)
    stale = emb(torch.tensor([7]))
    stale.sum().backward()  # a gradient computed, then zero_grad: dropped, as torch's would be
    rows = emb(torch.tensor([1, 2]))
    opt.zero_grad()
    rows.sum().backward()
    opt.step()
    after = emb.weight[torch.tensor([1, 2, 7])]
    assert (after[:2] < 1).all() and torch.equal(after[2], torch.ones(4))


def test_trainer_ids_from_partition_graph_split_each_trainers_part(graph, tmp_path):
    copy_before = {k: v.clone() for k, v in graph.ndata.items()}
    partition_graph(graph, "t", 2, tmp_path, num_trainers_per_machine=2, balance_edges=True)
    assert set(graph.ndata) == set(copy_before)  # the input graph is left as it was (DGL adds trainer_id to it)
    parts = [dgl.distributed.load_partition(tmp_path / "t.json", p) for p in range(2)]
    for p, (_, node_feats, _, book, *_) in enumerate(parts):
        tid = node_feats["_N/trainer_id"]
        assert set(tid.tolist()) <= {2 * p, 2 * p + 1} and tid.numel() == book.partid2nids(p).numel()
    trainer_ids = torch.cat([node_feats["_N/trainer_id"] for _, node_feats, *_ in parts])
    book = parts[0][3]
    every = torch.arange(graph.num_nodes())
    shares = [dgl.distributed.node_split(every, book, rank=r, world_size=4, node_trainer_ids=trainer_ids)
              for r in range(4)]
    assert torch.equal(torch.cat(shares).sort().values, every)
    assert max(s.numel() for s in shares) - min(s.numel() for s in shares) <= 1
    own = [float((trainer_ids[s] == r).float().mean()) for r, s in enumerate(shares)]
    assert min(own) > 0.9  # each trainer's share is (nearly all) its own METIS part
    exact = [dgl.distributed.node_split(every, book, rank=r, world_size=4, force_even=False,
                                        node_trainer_ids=trainer_ids) for r in range(4)]
    assert all(bool((trainer_ids[s] == r).all()) for r, s in enumerate(exact))


def test_partition_graph_takes_dgl_arguments(graph, tmp_path):
    from distgraph.errors import PartitionError

    stats = partition_graph(graph, "v", 2, tmp_path, 1, "metis", None, False, False, 1, "vol", None, False)
    assert stats.edge_cut < 0.3  # METIS minimising volume still cuts far fewer than random's half
    with pytest.raises(PartitionError, match="objtype"):
        partition_graph(graph, "v", 2, tmp_path, objtype="edges")


def test_dgl_scripts_reach_the_client_as_g_client(g):
    client = g._client
    assert client is g._client and client.num_servers == 1 and client.machine_id == 0
    client.barrier()  # standalone: the only trainer
    assert "node~_N~feat" in client.data_name_list()


def test_dist_tensor_pickles_by_name_and_is_the_same_tensor_again(g, tmp_path):
    n = g.num_nodes()
    t = dgl.distributed.DistTensor((n, 3), torch.float32, "pred", persistent=True)
    t[torch.arange(n)] = torch.arange(3.0 * n).reshape(n, 3)
    torch.save(t, tmp_path / "pred.pt")
    assert (tmp_path / "pred.pt").stat().st_size < 2000 < 12 * n  # a reference, not the rows
    back = torch.load(tmp_path / "pred.pt", weights_only=False)
    assert (back.name, back.shape, back.dtype) == ("pred", (n, 3), torch.float32)
    assert torch.equal(back[torch.arange(n)], t[torch.arange(n)])
    back[torch.tensor([5])] = torch.full((1, 3), -1.0)  # writes reach the tensor the job holds
    assert torch.equal(t[torch.tensor([5])], torch.full((1, 3), -1.0))
    assert back.part_policy.policy_str == t.part_policy.policy_str == "node~_N"
    del back  # an unpickled handle never deletes the tensor
    assert torch.equal(t[torch.tensor([5])], torch.full((1, 3), -1.0))

    emb = dgl.distributed.DistEmbedding(n, 4, "emb", init_func=dgl.distributed.Constant(2.0))
    emb(torch.tensor([1, 2]))  # a traced lookup: not part of the pickle
    again = pickle.loads(pickle.dumps(emb))
    assert again.name == "emb" and again.weight.shape == (n, 4) and again._trace == []
    assert torch.equal(again(torch.tensor([3])), torch.full((1, 4), 2.0))


def test_an_unpickled_dist_tensor_outside_its_job_is_a_clear_error(g, tmp_path, runtime, parts):
    t = dgl.distributed.DistTensor((g.num_nodes(), 2), torch.int64, "kept", persistent=True)
    torch.save(t, tmp_path / "kept.pt")
    code = ("import torch, sys; t = torch.load(sys.argv[1], weights_only=False); print(t.name, t.shape); "
            "t[torch.tensor([0])]")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "kept.pt")], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout.startswith("kept (")  # it loads; using it is the error
    assert "DistGraphError" in done.stderr and "unpickled outside a distgraph job" in done.stderr
    runtime.exit_client()  # another job (a new standalone runtime) has no tensor of that name
    runtime.initialize(part_config=str(parts[1]))
    with pytest.raises(DistGraphError, match="no tensor of that name"):
        torch.load(tmp_path / "kept.pt", weights_only=False)[torch.tensor([0])]

"""DGL's API under distgraph's import: the names resolve where a DGL user looks for them, and
the pieces that need no runtime behave as DGL's do (blocks, frontiers, samplers, negative
samplers, pair graphs, loaders over an in-memory graph, converters)."""

import importlib

import pytest
import torch

import distgraph as dgl
import distgraph.function as fn
from distgraph.block import block_from_edges
from distgraph.data import from_dgl, from_pyg
from distgraph.errors import InputError
from distgraph.tensor_graph import Graph

NAMES = {
    "distgraph": ["NID", "EID", "to_block", "DistGraph", "node_split", "edge_split", "sample_neighbors",
                  "partition_graph", "load_partition", "load_partition_book"],
    "distgraph.distributed": ["initialize", "exit_client", "DistGraph", "DistTensor", "DistEmbedding", "node_split",
                              "edge_split", "sample_neighbors", "find_edges", "in_subgraph", "partition_graph",
                              "load_partition", "load_partition_book", "get_num_client", "get_num_clients", "get_rank",
                              "SparseAdagrad", "SparseAdam", "DistDataLoader", "DistNodeDataLoader",
                              "DistEdgeDataLoader", "GraphPartitionBook", "PartitionPolicy", "NodePartitionPolicy",
                              "EdgePartitionPolicy", "DEFAULT_NTYPE", "DEFAULT_ETYPE"],
    "distgraph.distributed.optim": ["SparseAdagrad", "SparseAdam"],
    "distgraph.distributed.role": ["get_trainer_rank", "get_num_trainers", "get_global_rank", "get_rank", "get_role"],
    "distgraph.dataloading": ["NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler",
                              "NodeDataLoader", "EdgeDataLoader", "DataLoader", "DistNodeDataLoader",
                              "DistEdgeDataLoader", "as_edge_prediction_sampler", "negative_sampler"],
    "distgraph.dataloading.negative_sampler": ["Uniform", "PerSourceUniform", "GlobalUniform"],
    "distgraph.nn.pytorch": ["SAGEConv"],
    "distgraph.function": ["u_dot_v", "u_add_v", "u_mul_v", "v_dot_u", "e_sub_v"],
}


@pytest.mark.parametrize("module", sorted(NAMES))
def test_dgl_names_resolve(module):
    m = importlib.import_module(module)
    missing = [n for n in NAMES[module] if not hasattr(m, n)]
    assert not missing
    # one implementation behind each name: the distributed names are the top-level objects
    if module == "distgraph.distributed":
        for n in ("DistGraph", "node_split", "sample_neighbors", "partition_graph", "DistNodeDataLoader"):
            assert getattr(m, n) is getattr(dgl, n) or getattr(m, n) is getattr(dgl.dataloading, n, None)
        assert m.SparseAdam is dgl.optim.SparseAdam is m.optim.SparseAdam
        assert dgl.NID == dgl.EID == "_ID"


@pytest.fixture
def path():
    """0 -> 1 -> 2 -> 3, plus 3 -> 1 and 0 -> 2."""
    return Graph(torch.tensor([0, 1, 2, 3, 0]), torch.tensor([1, 2, 3, 1, 2]), 4,
                 ndata={"feat": torch.arange(8.0).reshape(4, 2), "label": torch.tensor([0, 1, 0, 1])},
                 edata={"w": torch.arange(5.0)})


def test_a_frontier_and_to_block_read_as_in_dgl(path):
    frontier = dgl.sample_neighbors(path, torch.tensor([2, 1]), -1)
    src, dst = frontier.edges()
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 1), (0, 2), (1, 2), (3, 1)]
    assert torch.equal(frontier.edata[dgl.EID], frontier.eids) and frontier.num_edges() == 4
    assert frontier.num_nodes() == 4
    block = dgl.to_block(frontier, torch.tensor([2, 1]))
    assert block.is_block and block.num_dst_nodes() == 2 and block.number_of_src_nodes() == 4
    assert torch.equal(block.dstdata[dgl.NID], torch.tensor([2, 1]))
    assert torch.equal(block.srcdata[dgl.NID][:2], torch.tensor([2, 1]))
    u, v = block.edges()
    assert sorted(zip(block.srcdata[dgl.NID][u].tolist(), block.dstdata[dgl.NID][v].tolist())) == \
        [(0, 1), (0, 2), (1, 2), (3, 1)]
    assert torch.equal(block.in_degrees(), torch.tensor([2, 2]))
    assert torch.equal(path.src[block.edata[dgl.EID]], block.srcdata[dgl.NID][u])
    block.srcdata["h"] = torch.ones(4, 3)
    assert block.srcnodes["_N"].data["h"].shape == (4, 3) and "h" in block.srcdata
    assert block.to("cpu") is block and block.srctypes == ["_N"] and block.canonical_etypes == [("_N", "_E", "_N")]
    with pytest.raises(InputError, match="dst_nodes must include"):
        dgl.to_block(frontier, torch.tensor([2]))
    left = dgl.sample_neighbors(path, torch.tensor([2, 1]), -1, exclude_edges=torch.tensor([1, 3]))
    assert not torch.isin(left.eids, torch.tensor([1, 3])).any() and left.num_edges() == 2


def test_neighbor_sampler_prefetches_and_full_sampler_takes_all(path):
    sampler = dgl.dataloading.NeighborSampler([-1, -1], prefetch_node_feats=["feat"], prefetch_labels=["label"],
                                              prefetch_edge_feats=["w"])
    inputs, outputs, blocks = sampler.sample(path, torch.tensor([1]))
    assert torch.equal(blocks[0].srcdata["feat"], path.ndata["feat"][inputs])
    assert torch.equal(blocks[-1].dstdata["label"], path.ndata["label"][outputs])
    assert all(torch.equal(b.edata["w"], path.edata["w"][b.eids]) for b in blocks)
    full = dgl.dataloading.MultiLayerFullNeighborSampler(2)
    _, _, again = full.sample(path, torch.tensor([1]))
    assert [b.num_edges() for b in again] == [b.num_edges() for b in blocks]
    assert dgl.dataloading.MultiLayerNeighborSampler is dgl.dataloading.NeighborSampler
    masked = dgl.dataloading.NeighborSampler([-1], mask="keep")
    path.edata["keep"] = torch.tensor([True, False, True, True, False])
    _, _, (b,) = masked.sample(path, torch.tensor([1, 2]))
    assert sorted(b.eids.tolist()) == [0, 2, 3] or set(b.eids.tolist()) <= {0, 2, 3}
    with pytest.raises(InputError):
        dgl.dataloading.NeighborSampler([2], output_device=f"cuda:{torch.cuda.device_count()}")  # a GPU it lacks


def test_negative_samplers(path):
    gen = torch.Generator().manual_seed(0)
    src, dst = dgl.dataloading.negative_sampler.Uniform(3)(path, torch.tensor([0, 4]), generator=gen)
    assert torch.equal(src, torch.tensor([0, 0, 0, 0, 0, 0])) and dst.numel() == 6
    big = dgl.data.generate_sbm(300, 3000, seed=3)
    u, v = dgl.dataloading.negative_sampler.GlobalUniform(4)(big, torch.arange(50), generator=gen)
    assert u.numel() == 200 and not (u == v).any()
    edges = big.src * 300 + big.dst
    assert not torch.isin(u * 300 + v, edges).any()  # no pair is an edge
    assert (u * 300 + v).unique().numel() == 200  # without replacement


def test_pair_graphs_score_with_builtins_in_a_local_scope():
    from distgraph.dataloading import PairGraph

    g = PairGraph(torch.tensor([10, 11, 12]), torch.tensor([0, 1]), torch.tensor([2, 2]), torch.tensor([5, 6]))
    h = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with g.local_scope():
        g.ndata["h"] = h
        g.apply_edges(fn.u_dot_v("h", "h", "score"))
        assert torch.equal(g.edata["score"], torch.tensor([[17.0], [39.0]]))
        g.apply_edges(fn.u_add_v("h", "h", "sum"))
        assert torch.equal(g.edata["sum"], torch.tensor([[6.0, 8.0], [8.0, 10.0]]))
        g.apply_edges(lambda edges: {"diff": edges.dst["h"] - edges.src["h"]})
        assert torch.equal(g.edata["diff"], torch.tensor([[4.0, 4.0], [2.0, 2.0]]))
    assert "score" not in g.edata and "h" not in g.ndata and torch.equal(g.edata[dgl.EID], torch.tensor([5, 6]))
    assert g.num_nodes() == 3 and g.num_edges() == 2 and torch.equal(g.edges()[1], torch.tensor([2, 2]))


def test_loaders_yield_dgl_tuples_and_apply_exclusion(sbm):
    sampler = dgl.dataloading.NeighborSampler([-1])
    eids = torch.arange(0, 400, 4)
    three = dgl.dataloading.DataLoader(sbm, eids, dgl.dataloading.as_edge_prediction_sampler(sampler, exclude="self"),
                                       batch_size=50)
    for inputs, pair, blocks in three:
        assert torch.equal(pair.ndata[dgl.NID], blocks[-1].dstdata[dgl.NID])
        u, v = pair.edges()
        assert torch.equal(pair.ndata[dgl.NID][u], sbm.src[pair.edata[dgl.EID]])
        assert not torch.isin(blocks[0].eids, pair.edata[dgl.EID]).any()
    reverse = torch.arange(sbm.num_edges()).flip(0)  # any map will do: its images must be left out too
    four = dgl.dataloading.DistEdgeDataLoader(sbm, eids, sampler, exclude="reverse_id", reverse_eids=reverse,
                                              negative_sampler=dgl.dataloading.negative_sampler.Uniform(2),
                                              batch_size=50, device=torch.device("cpu"))
    for inputs, pos, neg, blocks in four:
        assert neg.num_edges() == 2 * pos.num_edges() and torch.equal(neg.ndata[dgl.NID], pos.ndata[dgl.NID])
        assert not torch.isin(blocks[0].eids, torch.cat([pos.eids, reverse[pos.eids]])).any()
    nodes = dgl.dataloading.DataLoader(sbm, torch.arange(100), sampler, batch_size=30)
    assert isinstance(nodes, dgl.dataloading.DistNodeDataLoader) and len(nodes) == 4
    with pytest.raises(InputError):
        dgl.dataloading.DistNodeDataLoader(sbm, torch.arange(10), sampler, device=f"cuda:{torch.cuda.device_count()}")
    batches = list(dgl.distributed.DistDataLoader(torch.arange(10), batch_size=4, collate_fn=sum))
    assert batches == [6, 22, 17]


def test_sage_conv_takes_dgl_arguments_and_calls():
    conv = dgl.nn.pytorch.SAGEConv(4, 3, "mean", 0.0, True, None, torch.relu)
    b = block_from_edges(torch.tensor([0, 1]), torch.tensor([2, 3, 2]), torch.tensor([0, 0, 1]), torch.arange(3))
    h = torch.randn(4, 4)
    assert torch.equal(conv(b, h), conv(b, (h, h[: b.num_dst_nodes()])))
    assert (conv(b, h) >= 0).all()


def test_from_pyg_and_from_dgl_keep_structure_and_data():
    pyg = pytest.importorskip("torch_geometric.data")
    d = pyg.Data(x=torch.randn(5, 3), y=torch.arange(5), edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]]),
                 edge_attr=torch.randn(4, 2), train_mask=torch.tensor([1, 0, 1, 0, 1]).bool())
    g = from_pyg(d)
    assert g.num_nodes() == 5 and torch.equal(g.src, d.edge_index[0]) and torch.equal(g.ndata["feat"], d.x)
    assert torch.equal(g.ndata["label"], d.y) and torch.equal(g.ndata["train_mask"], d.train_mask)
    assert torch.equal(g.edata["feat"], d.edge_attr)
    h = pyg.HeteroData()
    h["paper"].x, h["paper"].y, h["author"].num_nodes = torch.randn(4, 3), torch.arange(4), 3
    h["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 2], [1, 2, 3]])
    h["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [2, 3]])
    hg = from_pyg(h)
    assert hg.num_nodes("author") == 3 and hg.num_edges(("author", "writes", "paper")) == 3
    assert torch.equal(hg.nodes["paper"].data["feat"], h["paper"].x)

    class FakeDGL:  # the DGL graph attributes from_dgl reads (real DGL is not a dependency)
        ntypes, canonical_etypes = ["_N"], [("_N", "_E", "_N")]
        ndata = {"feat": torch.ones(3, 2), "_ID": torch.arange(3)}
        edata = {"w": torch.ones(2)}

        def edges(self, etype=None):
            return torch.tensor([0, 1]), torch.tensor([1, 2])

        def num_nodes(self, ntype=None):
            return 3

    g = from_dgl(FakeDGL())
    assert g.num_edges() == 2 and list(g.ndata) == ["feat"] and list(g.edata) == ["w"]


def test_use_graphbolt_is_said_once_and_changes_nothing(path, tmp_path, capsys, monkeypatch):
    import distgraph.graphbolt as gb

    monkeypatch.setattr(gb, "_SAID", False)
    plain = dgl.sample_neighbors(path, torch.tensor([2, 1]), -1)
    assert capsys.readouterr().err == ""
    bolt = dgl.sample_neighbors(path, torch.tensor([2, 1]), -1, use_graphbolt=True)
    dgl.distributed.partition_graph(path, "p", 1, tmp_path, use_graphbolt=True)
    dgl.distributed.dgl_partition_to_graphbolt(tmp_path / "p.json", store_eids=True, graph_formats="csc")
    err = capsys.readouterr().err
    assert err.count("use_graphbolt: distgraph's own partitions and sampler serve both") == 1, err
    assert torch.equal(plain.eids.sort().values, bolt.eids.sort().values)
    with pytest.raises(InputError, match="does not exist"):
        dgl.distributed.dgl_partition_to_graphbolt(tmp_path / "missing.json")


def test_graph_and_heterograph_build_as_dgl_does():
    g = dgl.graph((torch.tensor([0, 1, 2]), [1, 2, 0]), num_nodes=5)
    assert g.num_nodes() == 5 and g.num_edges() == 3 and torch.equal(g.edges()[1], torch.tensor([1, 2, 0]))
    csr = dgl.graph(("csr", (torch.tensor([0, 2, 3, 3]), torch.tensor([1, 2, 0]), torch.tensor([]))))
    assert sorted(zip(*(t.tolist() for t in csr.edges()))) == [(0, 1), (0, 2), (1, 0)]
    hg = dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 2]),
                          ("user", "plays", "game"): (torch.tensor([0, 2]), torch.tensor([1, 0]))},
                         num_nodes_dict={"user": 4})
    assert hg.ntypes == ["game", "user"] or hg.ntypes == ["user", "game"]
    assert hg.num_nodes("user") == 4 and hg.num_nodes("game") == 2 and hg.num_edges(("user", "plays", "game")) == 2
    assert torch.equal(hg.edges(etype="plays")[1], torch.tensor([1, 0]))
    with pytest.raises(InputError, match="num_nodes_dict"):
        dgl.heterograph({("a", "r", "a"): ([0], [5])}, num_nodes_dict={"a": 3})
    with pytest.raises(InputError, match="canonical edge types"):
        dgl.heterograph({"r": ([0], [1])})


def test_partition_graph_takes_dgls_per_type_balance_dict(tmp_path):
    hg = dgl.heterograph({("paper", "cites", "paper"): (torch.randint(0, 200, (800,)), torch.randint(0, 200, (800,))),
                          ("author", "writes", "paper"): (torch.randint(0, 50, (300,)), torch.randint(0, 200, (300,)))})
    train = torch.zeros(200, dtype=torch.bool)
    train[:60] = True
    hg.nodes["paper"].data["train_mask"] = train
    orig, _ = dgl.distributed.partition_graph(hg, "h", 2, tmp_path, balance_ntypes={"paper": train},
                                              balance_edges=True, return_mapping=True)
    book = dgl.distributed.load_partition_book(tmp_path / "h.json", 0)[0]
    per_part = [int(train[orig["paper"][book.partid2nids(p, "paper")]].sum()) for p in range(2)]
    assert sum(per_part) == 60 and abs(per_part[0] - per_part[1]) <= 6  # the training papers spread evenly
    with pytest.raises(Exception, match="names node type 'venue'"):
        dgl.distributed.partition_graph(hg, "h", 2, tmp_path / "x", balance_ntypes={"venue": train})

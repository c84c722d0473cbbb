import pickle

import numpy as np
import pytest
import torch

from distgraph.errors import InputError
from distgraph.tensor_graph import Graph


def test_homogeneous_graph_counts_data_and_adjacency():
    g = Graph([0, 0, 1, 2, 2], [1, 2, 2, 0, 1], ndata={"x": torch.arange(3.0)}, edata={"w": torch.arange(5)})
    assert g.num_nodes() == 3 and g.num_edges() == 5 and g.is_homogeneous
    assert g.in_degrees().tolist() == [1, 2, 2] and g.out_degrees().tolist() == [2, 1, 2]
    indptr, src, eid = g.csc()
    assert indptr.tolist() == [0, 1, 3, 5]
    assert src.tolist() == [2, 0, 2, 0, 1] and eid.tolist() == [3, 0, 4, 1, 2]
    indptr, dst, eid = g.csr()
    assert indptr.tolist() == [0, 2, 3, 5] and dst.tolist() == [1, 2, 2, 0, 1]
    assert g.csc() is g.csc()  # cached
    assert g.ndata["x"].tolist() == [0.0, 1.0, 2.0] and g.edata["w"].tolist() == [0, 1, 2, 3, 4]


def test_heterogeneous_graph_is_a_typed_homogeneous_view():
    g = Graph.from_hetero(
        {("user", "follows", "user"): ([0, 1], [1, 2]), ("user", "buys", "item"): ([0, 2, 2], [1, 0, 1])},
        {"user": 3, "item": 2},
        ndata={"item": {"price": torch.tensor([5.0, 7.0])}},
        edata={("user", "buys", "item"): {"qty": torch.tensor([1, 2, 3])}},
    )
    assert g.ntypes == ["user", "item"] and g.etypes == ["follows", "buys"]
    assert g.num_nodes() == 5 and g.num_nodes("item") == 2 and g.num_edges("buys") == 3
    # items are homogeneous ids 3 and 4; 'buys' edges follow the 'follows' edges
    assert g.dst[2:].tolist() == [4, 3, 4] and g.src[2:].tolist() == [0, 2, 2]
    assert g.node_type_ids().tolist() == [0, 0, 0, 1, 1] and g.edge_type_ids().tolist() == [0, 0, 1, 1, 1]
    assert g.nodes["item"].data["price"].tolist() == [5.0, 7.0]
    assert g.edges["buys"].data["qty"].tolist() == [1, 2, 3]
    assert g.to_canonical_etype("buys") == ("user", "buys", "item")
    with pytest.raises(InputError, match="ndata needs a single type"):
        g.ndata


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(src=[0, 1], dst=[1]), "must pair up"),
        (dict(src=[0, 5], dst=[1, 2], num_nodes=3), "out of range for num_nodes=3"),
        (dict(src=[0, -1], dst=[1, 2]), "must be >= 0"),
        (dict(src=[0.5, 1.0], dst=[1, 2]), "must be integer ids"),
        (dict(src=[0, 1], dst=[1, 2], ndata={"x": np.zeros(2)}), "first dimension must be the number of nodes"),
    ],
)
def test_bad_graph_input_is_one_clear_error(kwargs, message):
    with pytest.raises(InputError, match=message):
        Graph(**kwargs)


def test_hetero_ids_out_of_range_name_the_type():
    with pytest.raises(InputError, match="item ids must lie in \\[0, 2\\)"):
        Graph.from_hetero({("user", "buys", "item"): ([0], [2])}, {"user": 1, "item": 2})


def test_hetero_src_and_dst_of_each_edge_type_must_pair_up():
    with pytest.raises(InputError, match=r"edge type \('a', 'r', 'a'\): src has 2 ids but dst has 1"):
        Graph.from_hetero({("a", "r", "a"): ([0, 1], [0]), ("a", "s", "a"): ([0], [0, 1])}, {"a": 2})


def test_ids_empty_lists_accepted_two_dimensional_rejected():
    g = Graph([], [], num_nodes=3)  # np.asarray([]) is float64: fine when empty
    assert g.num_nodes() == 3 and g.num_edges() == 0 and g.src.dtype == torch.int64
    h = Graph.from_hetero({("a", "r", "b"): ([], [])}, {"a": 2, "b": 1})
    assert h.num_edges() == 0 and h.num_nodes("b") == 1
    with pytest.raises(InputError, match=r"src must be a 1-D array of ids, got shape \(2, 2\)"):
        Graph(torch.tensor([[0, 1], [1, 2]]), torch.tensor([[1, 2], [2, 0]]))
    with pytest.raises(InputError, match="must be integer ids"):
        Graph(["a"], ["b"])
    g = Graph(np.arange(3)[::-1], np.arange(3))  # negative strides
    assert g.src.tolist() == [2, 1, 0]


def test_counts_must_be_one_non_negative_integer():
    assert Graph([0], [1], num_nodes=np.int64(4)).num_nodes() == 4
    for bad in (np.array([5, 6]), 2.5, "3"):
        with pytest.raises(InputError, match="num_nodes must be one non-negative integer"):
            Graph([0], [1], num_nodes=bad)
    with pytest.raises(InputError, match="num_nodes must be >= 0, got -1"):
        Graph([], [], num_nodes=-1)
    with pytest.raises(InputError, match="number of 'a' nodes must be >= 0"):
        Graph.from_hetero({("b", "r", "b"): ([], [])}, {"a": -2, "b": 3})


def test_data_assigned_after_construction_is_checked():
    g = Graph([0, 1], [1, 2])
    with pytest.raises(InputError, match=r"node data 'train_mask' of type '_N' has shape \(7,\)"):
        g.ndata["train_mask"] = torch.ones(7, dtype=torch.bool)
    with pytest.raises(InputError, match="number of edges \\(2\\)"):
        g.edata.update(w=torch.ones(3))
    with pytest.raises(InputError, match="number of nodes"):
        g.ndata |= {"x": torch.ones(2)}
    g.ndata["x"] = torch.arange(3.0)
    g.edata.setdefault("w", torch.ones(2))
    assert g.ndata["x"].tolist() == [0.0, 1.0, 2.0] and g.edata["w"].tolist() == [1.0, 1.0]
    assert "train_mask" not in g.ndata
    h = Graph.from_hetero({("user", "buys", "item"): ([0], [1])}, {"user": 3, "item": 2})
    with pytest.raises(InputError, match="node data 'train_mask' of type 'user' has shape \\(5,\\)"):
        h.nodes["user"].data["train_mask"] = torch.ones(5, dtype=torch.bool)
    h.nodes["item"].data["price"] = torch.tensor([1.0, 2.0])
    copy = pickle.loads(pickle.dumps(h))  # data loader workers pickle graphs
    assert copy.nodes["item"].data["price"].tolist() == [1.0, 2.0]
    with pytest.raises(InputError, match="number of nodes"):
        copy.nodes["item"].data["price"] = torch.ones(3)


def test_unknown_node_type_is_a_clear_error():
    g = Graph.from_hetero({("user", "buys", "item"): ([0], [1])}, {"user": 1, "item": 2})
    with pytest.raises(InputError, match="unknown node type 'bad'; the graph has \\['user', 'item'\\]"):
        g.nodes["bad"]
    with pytest.raises(InputError, match="edge type 'bad' is unknown"):
        g.edges["bad"]


def test_unknown_types_in_views_are_clear_errors():
    g = Graph.from_hetero({("user", "buys", "item"): ([0], [1])}, {"user": 1, "item": 2})
    with pytest.raises(InputError, match="unknown node type 'shop'"):
        g.nodes["shop"]
    with pytest.raises(InputError, match="edge type 'sells' is unknown"):
        g.edges["sells"]
    assert g.edges["user:buys:item"].data is g.edges[("user", "buys", "item")].data

import numpy as np
import pytest
import torch

from distgraph.errors import InputError
from distgraph.graph import Graph


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

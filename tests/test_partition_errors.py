"""Every bad partitioning input gives one clear error naming the file or the value."""

import json

import numpy as np
import pytest
import torch

from distgraph.errors import PartitionError
from distgraph.tensor_graph import Graph
from distgraph.partition import load_partition, load_partition_book, partition_graph, split_categories


@pytest.fixture()
def parts(tmp_path, sbm):
    partition_graph(sbm, "g", 2, tmp_path, part_method="random")
    return tmp_path


def test_more_parts_than_nodes():
    with pytest.raises(PartitionError, match="cannot split 3 nodes into 4 parts"):
        partition_graph(Graph([0, 1], [1, 2]), "g", 4, "/nonexistent")


def test_unknown_method_and_bad_counts(tmp_path, sbm):
    with pytest.raises(PartitionError, match="unknown part_method 'kmeans'; choose one of metis, kaminpar, random"):
        partition_graph(sbm, "g", 2, tmp_path, part_method="kmeans")
    with pytest.raises(PartitionError, match="num_parts must be a positive integer"):
        partition_graph(sbm, "g", 0, tmp_path)
    with pytest.raises(PartitionError, match="graph name 'a/b' cannot be used in partition file names"):
        partition_graph(sbm, "a/b", 2, tmp_path)


def test_missing_config_and_part_files(parts):
    with pytest.raises(PartitionError, match="partition config .*nope.json does not exist"):
        load_partition(parts / "nope.json", 0)
    (parts / "part1" / "indices.npy").unlink()
    with pytest.raises(PartitionError, match="partition file .*part1/indices.npy is missing"):
        load_partition(parts / "g.json", 1)
    with pytest.raises(PartitionError, match="partition id 2 is out of range"):
        load_partition(parts / "g.json", 2)


def test_truncated_array(parts):
    f = parts / "part0" / "node._N.feat.npy"
    f.write_bytes(f.read_bytes()[:1000])
    with pytest.raises(PartitionError, match="node._N.feat.npy is unreadable or truncated"):
        load_partition(parts / "g.json", 0)


def test_array_shape_or_dtype_disagreeing_with_the_config(parts):
    f = parts / "part0" / "global_nid.npy"
    np.save(f, np.load(f)[:-1])
    with pytest.raises(PartitionError, match="global_nid.npy has shape .* but .*g.json says"):
        load_partition(parts / "g.json", 0)
    f = parts / "part1" / "node._N.label.npy"
    np.save(f, np.load(f).astype(np.int32))
    with pytest.raises(PartitionError, match="has dtype int32 but .* says int64"):
        load_partition(parts / "g.json", 1)


def test_json_counts_disagreeing_with_the_ranges(parts):
    cfg = json.loads((parts / "g.json").read_text())
    cfg["num_nodes"] += 1
    (parts / "g.json").write_text(json.dumps(cfg))
    with pytest.raises(PartitionError, match="node_map ranges cover .* ids but num_nodes is"):
        load_partition_book(parts / "g.json")
    cfg["num_nodes"] -= 1
    cfg["partitions"][0]["num_inner_nodes"] += 1
    (parts / "g.json").write_text(json.dumps(cfg))
    with pytest.raises(PartitionError, match="partition 0 lists .* nodes"):
        load_partition(parts / "g.json", 0)


def test_edge_ids_left_out_where_the_range_does_not_fit(tmp_path, sbm):
    partition_graph(sbm, "g", 2, tmp_path, num_hops=2)  # partitions also store their halo's in-edges
    cfg = json.loads((tmp_path / "g.json").read_text())
    cfg["partitions"][0]["eids"] = None
    (tmp_path / "g.json").write_text(json.dumps(cfg))
    with pytest.raises(PartitionError, match="partition 0 stores .* edges but lists no eids file"):
        load_partition(tmp_path / "g.json", 0)


def test_not_json_or_wrong_version(parts):
    (parts / "bad.json").write_text("{not json")
    with pytest.raises(PartitionError, match="is not valid JSON"):
        load_partition_book(parts / "bad.json")
    cfg = json.loads((parts / "g.json").read_text())
    cfg["format_version"] = 99
    (parts / "v.json").write_text(json.dumps(cfg))
    with pytest.raises(PartitionError, match="format_version 99; this distgraph reads 1 and 2"):
        load_partition_book(parts / "v.json")


def test_version_1_partitions_still_load(tmp_path, sbm):
    """Version 1 always listed an eids file; a config saying so loads as before."""
    partition_graph(sbm, "g", 2, tmp_path, num_hops=2)  # eids files are written
    cfg = json.loads((tmp_path / "g.json").read_text())
    cfg["format_version"] = 1
    (tmp_path / "g.json").write_text(json.dumps(cfg))
    part = load_partition(tmp_path / "g.json", 1)
    assert torch.equal(part.eids, torch.from_numpy(np.load(tmp_path / cfg["partitions"][1]["eids"])))


def test_bad_balance_categories(tmp_path, sbm):
    with pytest.raises(PartitionError, match="balance_ntypes must hold one category .* per node"):
        partition_graph(sbm, "g", 2, tmp_path, balance_ntypes=torch.zeros(5, dtype=torch.int64))


def test_dots_in_type_and_data_names_are_rejected(tmp_path):
    # node.<ntype>.<name>.npy: type "a" with data "b.c" and type "a.b" with data "c" would share a file
    g = Graph.from_hetero({("a", "r", "a_b"): ([0, 1], [1, 0])}, {"a": 2, "a_b": 2},
                          ndata={"a": {"b.c": torch.tensor([1.0, 2.0])}})
    with pytest.raises(PartitionError, match=r"data name 'b.c' cannot be used .* \(no '.'\)"):
        partition_graph(g, "g", 1, tmp_path)
    g = Graph.from_hetero({("a", "r", "a.b"): ([0, 1], [1, 0])}, {"a": 2, "a.b": 2})
    with pytest.raises(PartitionError, match="node type 'a.b' cannot be used"):
        partition_graph(g, "g", 1, tmp_path)
    g = Graph.from_hetero({("a", "r.s", "a"): ([0, 1], [1, 0])}, {"a": 2})
    with pytest.raises(PartitionError, match="edge type part 'r.s' cannot be used"):
        partition_graph(g, "g", 1, tmp_path)
    assert partition_graph(Graph([0, 1], [1, 0]), "ogbn.products", 1, tmp_path).num_parts == 1  # graph names may


@pytest.mark.parametrize("value", ["2", 1.5, True, 0])
def test_num_parts_and_halo_hops_must_be_positive_integers(tmp_path, sbm, value):
    with pytest.raises(PartitionError, match=f"num_parts must be a positive integer, got {value!r}"):
        partition_graph(sbm, "g", value, tmp_path)
    with pytest.raises(PartitionError, match=f"num_hops must be a positive integer, got {value!r}"):
        partition_graph(sbm, "g", 2, tmp_path, num_hops=value)


def test_numpy_integers_are_accepted(tmp_path, sbm):
    stats = partition_graph(sbm, "g", np.int64(2), tmp_path, num_hops=np.int32(1), part_method="random")
    assert stats.num_parts == 2 and type(stats.num_parts) is int
    assert json.loads((tmp_path / "g.json").read_text())["num_parts"] == 2


def test_negative_balance_categories(tmp_path, sbm):
    cat = torch.zeros(sbm.num_nodes(), dtype=torch.int64)
    cat[:10] = -1
    with pytest.raises(PartitionError, match="balance_ntypes categories must be >= 0, found -1"):
        partition_graph(sbm, "g", 2, tmp_path, balance_ntypes=cat)


def test_data_resized_in_place_is_caught_before_partitioning(tmp_path):
    g = Graph([0, 1, 2], [1, 2, 0], ndata={"x": torch.zeros(3)})
    g.ndata["x"].resize_(7)
    with pytest.raises(PartitionError, match=r"node data 'x' of type '_N' has shape \(7,\) but the type has 3 nodes"):
        partition_graph(g, "g", 2, tmp_path)
    assert not (tmp_path / "part0").exists()
    h = Graph.from_hetero({("a", "r", "b"): ([0], [0])}, {"a": 2, "b": 3},
                          ndata={"a": {"train_mask": torch.tensor([True, False])}})
    h.nodes["a"].data["train_mask"].resize_(4)
    with pytest.raises(PartitionError, match="'train_mask' of type 'a' has shape \\(4,\\); a mask needs one value"):
        split_categories(h)

"""Every bad partitioning input gives one clear error naming the file or the value."""

import json

import numpy as np
import pytest
import torch

from distgraph.errors import PartitionError
from distgraph.graph import Graph
from distgraph.partition import load_partition, load_partition_book, partition_graph


@pytest.fixture()
def parts(tmp_path, sbm):
    partition_graph(sbm, "g", 2, tmp_path, part_method="random")
    return tmp_path


def test_more_parts_than_nodes():
    with pytest.raises(PartitionError, match="cannot split 3 nodes into 4 parts"):
        partition_graph(Graph([0, 1], [1, 2]), "g", 4, "/nonexistent")


def test_unknown_method_and_bad_counts(tmp_path, sbm):
    with pytest.raises(PartitionError, match="unknown part_method 'kmeans'; choose one of metis, random"):
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


def test_not_json_or_wrong_version(parts):
    (parts / "bad.json").write_text("{not json")
    with pytest.raises(PartitionError, match="is not valid JSON"):
        load_partition_book(parts / "bad.json")
    cfg = json.loads((parts / "g.json").read_text())
    cfg["format_version"] = 99
    (parts / "v.json").write_text(json.dumps(cfg))
    with pytest.raises(PartitionError, match="format_version 99"):
        load_partition_book(parts / "v.json")


def test_bad_balance_categories(tmp_path, sbm):
    with pytest.raises(PartitionError, match="balance_ntypes must hold one integer category per node"):
        partition_graph(sbm, "g", 2, tmp_path, balance_ntypes=torch.zeros(5, dtype=torch.int64))

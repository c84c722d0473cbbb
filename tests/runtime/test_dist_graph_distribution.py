"""Standalone and 2-machine runs sample from the same distribution."""

import numpy as np
import torch

from distgraph.dist_graph import DistGraph
from distgraph.sampling import sample_neighbors

from .conftest import Cluster


def neighbour_counts(g, part_config, node: int, draws: int, fanout: int) -> dict[int, int]:
    """How often each original in-neighbour of original node `node` is sampled."""
    orig = torch.from_numpy(np.load(part_config.parent / "mapping" / "node._N.npy"))
    new_of = torch.empty_like(orig)
    new_of[orig] = torch.arange(orig.numel())
    e = sample_neighbors(g, new_of[node].repeat(draws), fanout)
    src, counts = torch.unique(orig[e.src], return_counts=True)
    return dict(zip(src.tolist(), counts.tolist()))


def test_standalone_and_two_machines_sample_alike(graph, parts, tmp_path, monkeypatch, runtime):
    deg = graph.in_degrees()
    node = int(torch.argmax(deg))  # the busiest node: many neighbours to compare
    draws, fanout = 3000, 3
    runtime.initialize()
    alone = neighbour_counts(DistGraph("g", part_config=str(parts[1])), parts[1], node, draws, fanout)
    runtime.exit_client()

    cluster = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1])
    try:
        for k, v in cluster.env("trainer", 0).items():
            monkeypatch.setenv(k, v)
        runtime.initialize()
        book = DistGraph("g").get_partition_book()
        two = neighbour_counts(DistGraph("g"), parts[2], node, draws, fanout)
        owner = int(book.nid2partid(torch.tensor([node])))  # ids differ, but either machine may own it
        runtime.exit_client()
    finally:
        assert all(code == 0 for code in cluster.stop().values())
    assert owner in (0, 1)
    neighbours = sorted(set(alone) | set(two))
    assert len(neighbours) == len(set(graph.src[graph.dst == node].tolist()))
    a = torch.tensor([alone.get(n, 0) for n in neighbours], dtype=torch.float64)
    b = torch.tensor([two.get(n, 0) for n in neighbours], dtype=torch.float64)
    assert a.sum() == b.sum() == draws * min(fanout, int(deg[node]))
    # chi-square test of homogeneity between the two samples (k-1 degrees of freedom)
    expected = (a + b) / 2
    stat = float((((a - expected) ** 2 + (b - expected) ** 2) / expected).sum())
    dof = len(neighbours) - 1
    assert stat < dof + 4 * (2 * dof) ** 0.5  # far below what differing distributions give

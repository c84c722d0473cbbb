"""The streamed coarsening level in front of KaMinPar (partition/stream/coarsen.py): clusters
within their bound, a contracted graph that carries every projected partition's cut, refinement
that never cuts more and keeps the balance, the C rating equal to numpy's, and the streaming
path's result with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from distgraph.data import generate_sbm
from distgraph.partition import partition_graph
from distgraph.partition.stream import coarsen, from_array_graph, partition_stream
from distgraph.partition.stream import kaminpar as kaminpar_module
from distgraph.partition.stream.adjacency import ParhipGraph, write_rows

kaminpar = pytest.importorskip("kaminpar")


def _parhip(tmp_path: Path, src: np.ndarray, dst: np.ndarray, n: int, weights=None) -> ParhipGraph:
    keep = src != dst
    rows, cols = np.r_[src[keep], dst[keep]], np.r_[dst[keep], src[keep]]
    path = tmp_path / "g.parhip"
    write_rows(path, n, np.array([0, n]), lambda b: {"row": rows, "col": cols}, weights)
    return ParhipGraph.open(path)


@pytest.fixture(scope="module")
def sbm():
    g = generate_sbm(20_000, 200_000, num_classes=8, feat_dim=2, seed=3)
    return np.asarray(g.src), np.asarray(g.dst), g.num_nodes(), np.asarray(g.ndata["label"])


def _cut(src: np.ndarray, dst: np.ndarray, parts: np.ndarray) -> int:
    """Undirected simple edges (self-loops and repeats dropped) whose ends lie in different parts."""
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    key = np.unique(lo[lo != hi].astype(np.int64) << 32 | hi[lo != hi])
    return int((parts[key >> 32] != parts[key & 0xFFFFFFFF]).sum())


def test_edge_repeats_become_weights_that_kaminpar_reads(tmp_path):
    rows = np.array([0, 1] + [1] * 5 + [2] * 5 + [2, 3])  # the path 0-1-2-3, 1-2 given five times
    cols = np.array([1, 0] + [2] * 5 + [1] * 5 + [3, 2])
    path = tmp_path / "w.parhip"
    m = write_rows(path, 4, np.array([0, 4]), lambda b: {"row": rows, "col": cols}, np.array([1, 2, 3, 4]),
                   edge_weights=True)
    assert m == 6 and not list(tmp_path.glob("*.weights"))
    g = kaminpar.load_graph(str(path), kaminpar.GraphFileFormat.PARHIP, compress=True)
    assert [list(g.neighbors(u)) for u in range(4)] == [[(1, 1)], [(0, 1), (2, 5)], [(1, 5), (3, 1)], [(2, 1)]]
    assert [g.node_weight(u) for u in range(4)] == [1, 2, 3, 4]
    assert kaminpar.edge_cut(g, [0, 0, 1, 1]) == 5


def test_clusters_stay_within_their_bound_and_the_contracted_graph_carries_the_cut(sbm, tmp_path):
    src, dst, n, label = sbm
    weights = np.random.default_rng(0).integers(1, 4, n)
    graph = _parhip(tmp_path, src, dst, n, weights)
    deg = graph.degrees()
    ranges = graph.ranges(deg, coarsen.RATE_ENTRIES)
    node_weight = graph.vertex_weights()
    assert np.array_equal(node_weight, weights)
    co = coarsen.cluster(ranges, node_weight, 4, 0.03, seed=0)
    cap = coarsen.CLUSTER_SHARE * 0.03 * weights.sum() / 4
    c = int(co.max()) + 1
    assert np.bincount(co, weights=weights).max() <= cap and n / 20 < c < n / 2  # clusters formed, none too heavy
    assert np.array_equal(np.unique(co), np.arange(c))
    coarse = tmp_path / "c.parhip"
    m = coarsen.contract(ranges, co, node_weight, coarse, 1 << 15)
    cg = kaminpar.load_graph(str(coarse), kaminpar.GraphFileFormat.PARHIP, compress=True)
    assert cg.n() == c and cg.m() == m
    assert [cg.node_weight(u) for u in range(c)] == np.bincount(co, weights=weights).astype(int).tolist()
    # Every coarse edge weighs the fine entries between its two clusters (numpy reference).
    keep = src != dst
    fine = np.unique(np.r_[src[keep], dst[keep]].astype(np.int64) << 32 | np.r_[dst[keep], src[keep]])
    cu, cv = co[fine >> 32].astype(np.int64), co[fine & 0xFFFFFFFF].astype(np.int64)
    pair, count = np.unique((cu << 32 | cv)[cu != cv], return_counts=True)
    got = np.array([(u << 32 | v, w) for u in range(c) for v, w in cg.neighbors(u)])
    got = got[np.argsort(got[:, 0])]
    assert np.array_equal(got[:, 0], pair) and np.array_equal(got[:, 1], count)
    parts = np.random.default_rng(1).integers(0, 4, c).astype(np.int32)
    assert kaminpar.edge_cut(cg, parts.tolist()) == _cut(src, dst, parts[co])


def test_refinement_restores_a_scrambled_partition_and_keeps_the_balance(sbm, tmp_path):
    src, dst, n, label = sbm
    graph = _parhip(tmp_path, src, dst, n)
    ranges = graph.ranges(graph.degrees(), coarsen.RATE_ENTRIES)
    planted = (label % 4).astype(np.int32)  # two communities a part
    parts = planted.copy()
    flip = np.random.default_rng(2).random(n) < 0.2
    parts[flip] = np.random.default_rng(3).integers(0, 4, int(flip.sum()))
    before = _cut(src, dst, parts)
    coarsen.refine(ranges, parts, graph.vertex_weights(), 4, 0.03, seed=0)
    after = _cut(src, dst, parts)
    assert after < 0.6 * before and after <= 1.02 * _cut(src, dst, planted)
    bound = (1 + 0.03) * -(-n // 4)
    assert np.bincount(parts, minlength=4).max() <= max(bound, np.bincount(planted).max())


def test_the_c_rating_moves_the_nodes_numpy_moves(sbm, tmp_path, monkeypatch):
    src, dst, n, _ = sbm
    if coarsen.kernels() is None:
        pytest.skip("the C kernels are not built")
    graph = _parhip(tmp_path, src, dst, n, np.random.default_rng(0).integers(1, 5, n))
    ranges = graph.ranges(graph.degrees(), coarsen.RATE_ENTRIES)
    w = graph.vertex_weights()
    results = []
    for native in (True, False):
        if not native:
            monkeypatch.setattr(coarsen, "kernels", lambda: None)
        co = coarsen.cluster(ranges, w, 4, 0.03, seed=5)
        parts = (co % 4).astype(np.int32)
        coarsen.refine(ranges, parts, w, 4, 0.03, seed=5)
        results.append((co, parts))
    assert np.array_equal(results[0][0], results[1][0]) and np.array_equal(results[0][1], results[1][1])
    assert results[0][0].max() + 1 < n / 2


def test_streaming_kaminpar_through_the_coarse_level_cuts_as_kaminpar_alone(tmp_path, monkeypatch):
    g = generate_sbm(6000, 60_000, num_classes=6, feat_dim=4, seed=1)
    alone = partition_stream(from_array_graph(g), "g", 3, tmp_path / "alone", part_method="kaminpar", seed=2)
    monkeypatch.setattr(kaminpar_module, "COARSEN_ABOVE_ENTRIES", 0)
    stats = partition_stream(from_array_graph(g), "g", 3, tmp_path / "coarse", part_method="kaminpar", seed=2,
                             bucket_edges=5000)
    metis = partition_graph(g, "g", 3, tmp_path / "metis", part_method="metis")
    assert stats.edge_cut <= 1.05 * alone.edge_cut and stats.edge_cut <= 1.15 * metis.edge_cut
    assert max(stats.part_nodes) <= 1.031 * g.num_nodes() / 3
    assert not list((tmp_path / "coarse").glob(".*")), "scratch left behind"

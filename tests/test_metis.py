"""The two METIS builds: cmeel-metis's 32-bit one whenever the graph fits, pymetis's 64-bit one otherwise."""

import numpy as np
import pytest
import torch
from test_partition import check_against_brute_force

from distgraph.data import generate_sbm
from distgraph.partition import metis, partition_graph, split_categories
from distgraph.partition.assign import balance_weights
from distgraph.partition.symmetric import symmetric_adjacency


def cut_of(xadj, adjncy, parts):
    """Undirected edges whose endpoints are in different parts."""
    rows = np.repeat(np.arange(xadj.size - 1), np.diff(xadj))
    return int((parts[rows] != parts[adjncy]).sum()) // 2


@pytest.fixture(scope="module")
def graph():
    g = generate_sbm(4000, 40000, num_classes=8, feat_dim=4, seed=5)
    xadj, adjncy = symmetric_adjacency(g.src.numpy(), g.dst.numpy(), g.num_nodes())
    return g, xadj, adjncy


def test_the_32_bit_build_is_chosen_when_everything_fits():
    lib32, lib64 = metis.library32(), metis.library64()
    assert lib32 is not None and lib32.idx is np.int32 and lib64.idx is np.int64
    assert metis.choose_library(10**6, 10**8, np.array([10**6, 10**8])) is lib32
    assert metis.choose_library(10**6, 2**31, None) is lib64  # adjacency entries reach 2**31
    assert metis.choose_library(10**6, 10**8, np.array([5, 2**31])) is lib64  # a weight total does


@pytest.mark.parametrize("build", ["library32", "library64"])
def test_each_build_gives_a_valid_balanced_partition_with_its_reported_cut(graph, build):
    g, xadj, adjncy = graph
    lib = getattr(metis, build)()
    weights = balance_weights(g, split_categories(g), balance_edges=True)
    for k in (2, 4, 8):  # recursive bisection below 8 parts, k-way from 8
        parts, cut = metis.part_graph(xadj, adjncy, k, weights, library=lib)
        assert parts.dtype == np.int64 and parts.shape == (g.num_nodes(),)
        assert parts.min() == 0 and parts.max() == k - 1
        assert cut == cut_of(xadj, adjncy, parts)  # METIS's own edge cut is the real one
        per_part = np.stack([weights[parts == p].sum(0) for p in range(k)])
        # every constraint: ufactor 30 allows 3 % per bisection, which compounds over the levels
        assert (per_part.max(0) / (weights.sum(0) / k)).max() < 1.03 ** np.ceil(np.log2(k)) + 0.01
        random_cut = cut_of(xadj, adjncy, np.random.default_rng(0).integers(0, k, g.num_nodes()))
        assert cut < 0.5 * random_cut


def test_both_builds_cut_about_as_many_edges(graph):
    _, xadj, adjncy = graph
    for k in (2, 4):
        cut32 = metis.part_graph(xadj, adjncy, k, library=metis.library32())[1]
        cut64 = metis.part_graph(xadj, adjncy, k, library=metis.library64())[1]
        assert abs(cut32 - cut64) <= 0.1 * cut64, (k, cut32, cut64)


def test_partition_graph_falls_back_to_the_64_bit_build(tmp_path, monkeypatch):
    g = generate_sbm(1500, 12000, feat_dim=4, seed=6)
    used = []
    choose = metis.choose_library
    monkeypatch.setattr(metis, "choose_library", lambda *a: used.append(choose(*a)) or used[-1])
    partition_graph(g, "g32", 3, tmp_path / "a", balance_ntypes=split_categories(g), balance_edges=True)
    monkeypatch.setattr(metis, "INT32_LIMIT", 5000)  # the graph's ~23,000 adjacency entries no longer fit
    orig_nids, orig_eids = partition_graph(g, "g", 3, tmp_path / "b", balance_ntypes=split_categories(g),
                                           balance_edges=True, return_mapping=True)
    assert [lib.idx for lib in used] == [np.int32, np.int64]
    check_against_brute_force(g, tmp_path / "b" / "g.json", 3, 1, orig_nids, orig_eids)
    import json

    stats = json.loads((tmp_path / "b" / "g.json").read_text())["stats"]
    parts = torch.repeat_interleave(torch.arange(3), torch.tensor(stats["part_nodes"]))[torch.argsort(orig_nids)]
    assert stats["edge_cut"] == pytest.approx(float((parts[g.src] != parts[g.dst]).double().mean()))
    assert max(stats["part_nodes"]) / (g.num_nodes() / 3) < 1.06


@pytest.mark.parametrize("weighted", [False, True])
def test_isolated_vertices_fill_the_parts_and_metis_cuts_the_rest_as_alone(graph, weighted):
    """Isolated vertices (which make METIS's coarsening crawl) are left out of the METIS call and
    fill the parts up to equal shares: the parts are balanced, every vertex has one, and the cut
    is the one METIS gives the graph without them."""
    g, xadj, adjncy = graph
    n, spare = g.num_nodes(), 30_000
    big_xadj = np.concatenate([xadj, np.full(spare, xadj[-1])])  # 30,000 vertices with no edge after the graph's
    weights = (np.arange(n + spare) % 3 + 1).reshape(-1, 1) if weighted else None
    for k in (2, 3, 8):
        parts, cut = metis.part_graph(big_xadj, adjncy, k, weights)
        alone, alone_cut = metis.part_graph(xadj, adjncy, k, None if weights is None else weights[:n])
        assert np.array_equal(parts[:n], alone) and cut == alone_cut == cut_of(big_xadj, adjncy, parts)
        load = np.bincount(parts, weights=None if weights is None else weights[:, 0], minlength=k)
        assert load.max() / load.mean() < 1.04, load  # METIS's own tolerance is 1.03 for the vertices it places

"""Filtered ranking and its metrics against brute force on tiny knowledge graphs."""

import pytest
import torch

from distgraph.kge import evaluate as ev
from distgraph.kge.models import create_model
from distgraph.kge.params import KGEParams


def _random_kg(E=12, R=3, n=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    tri = torch.stack([torch.randint(E, (n,), generator=g), torch.randint(R, (n,), generator=g),
                       torch.randint(E, (n,), generator=g)], 1)
    return torch.unique(tri, dim=0)


def _brute_force_ranks(model, params, triples, known, corrupt_head):
    ent, rel = params.tables["entity"], [params.tables[n] for n in params.relation_names()]
    known = set(map(tuple, known.tolist()))
    ranks = []
    for h, r, t in triples.tolist():
        def score(a, b):
            return model.pair(ent[a:a + 1], tuple(x[r:r + 1] for x in rel), ent[b:b + 1]).item()
        true = score(h, t)
        rank = 1
        for e in range(len(ent)):
            cand = (e, r, t) if corrupt_head else (h, r, e)
            if cand not in known and (score(*cand[::2]) >= true):
                rank += 1
        ranks.append(rank)
    return ranks


def test_filter_lookup_matches_sets():
    kg = _random_kg()
    filt = ev.TripleFilter.build(kg, 3)
    queries = torch.tensor([[0, 0], [5, 2], [11, 1], [3, 0]])
    for corrupt_head in (False, True):
        rows, ents = filt.known(queries[:, 0], queries[:, 1], corrupt_head)
        got = {(int(i), int(e)) for i, e in zip(rows, ents)}
        want = {(i, (h if corrupt_head else t)) for i, (a, r) in enumerate(queries.tolist())
                for h, rr, t in kg.tolist() if rr == r and (t if corrupt_head else h) == a}
        assert got == want


@pytest.mark.parametrize("name, de, dr", [("DistMult", False, False), ("TransE_l2", False, False),
                                          ("TransR", False, False), ("RotatE", True, False)])
def test_filtered_ranks_match_brute_force(name, de, dr):
    kg = _random_kg()
    model = create_model(name, 4, 2.0, de, dr)
    params = KGEParams.create(model, 12, 3, seed=3)
    test = kg[::4]
    filt = ev.TripleFilter.build(kg, 3)
    for corrupt_head in (True, False):
        got = ev.filtered_ranks(model, params, test, filt, corrupt_head)
        assert got.tolist() == _brute_force_ranks(model, params, test, kg, corrupt_head)


def test_candidate_blocks_give_the_same_ranks(monkeypatch):
    kg = _random_kg()
    model = create_model("TransE_l1", 4, 2.0)
    params = KGEParams.create(model, 12, 3, seed=1)
    filt = ev.TripleFilter.build(kg, 3)
    whole = ev.filtered_ranks(model, params, kg, filt, False)
    monkeypatch.setattr(ev, "_BLOCK_ELEMENTS", len(kg) * 5)  # blocks of 5 entities
    torch.testing.assert_close(ev.filtered_ranks(model, params, kg, filt, False), whole)


def test_ties_count_against_the_model_and_unfiltered_ranking():
    model = create_model("DistMult", 2, 1.0)
    params = KGEParams({"entity": torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]),
                        "relation": torch.tensor([[1.0, 1.0]])}, {})
    test = torch.tensor([[0, 0, 1]])
    # entity 0 scores like the true tail 1 (a tie): rank 2 unfiltered, 1 when (0, 0, 0) is known
    assert ev.filtered_ranks(model, params, test, None, False).tolist() == [2]
    filt = ev.TripleFilter.build(torch.tensor([[0, 0, 1], [0, 0, 0]]), 1)
    assert ev.filtered_ranks(model, params, test, filt, False).tolist() == [1]


def test_metrics_from_ranks_and_combining_processes():
    sums = [ev.metric_sums(torch.tensor([1, 2, 4])), ev.metric_sums(torch.tensor([10, 20]))]
    got = ev.combine(sums)
    ranks = [1, 2, 4, 10, 20]
    assert got["MRR"] == pytest.approx(sum(1 / r for r in ranks) / 5)
    assert got["MR"] == pytest.approx(37 / 5)
    assert (got["HITS@1"], got["HITS@3"], got["HITS@10"]) == (pytest.approx(0.2), pytest.approx(0.4),
                                                             pytest.approx(0.8))


def test_evaluate_ranks_both_sides_in_batches():
    kg = _random_kg()
    model = create_model("DistMult", 4, 1.0)
    params = KGEParams.create(model, 12, 3, seed=0)
    filt = ev.TripleFilter.build(kg, 3)
    sums = ev.evaluate(model, params, kg, filt, batch_size=7)
    assert sums["count"] == 2 * len(kg)
    ranks = (_brute_force_ranks(model, params, kg, kg, True) + _brute_force_ranks(model, params, kg, kg, False))
    assert sums["MR"] == pytest.approx(sum(ranks))
    assert sums["MRR"] == pytest.approx(sum(1 / r for r in ranks))

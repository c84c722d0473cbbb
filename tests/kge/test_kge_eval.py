"""Ranking and its metrics against brute force on tiny knowledge graphs: filtered and not,
against every entity and against sampled candidates, the whole table as one shard and cut
into shards (equal exactly), non-finite scores ranked last."""

import pytest
import torch

from distgraph.errors import InputError
from distgraph.kge.evaluate import link_prediction as ev
from distgraph.kge.evaluate import ranking
from distgraph.kge.evaluate.metrics import combine, metric_sums
from distgraph.kge.models import create_model


def _random_kg(E=12, R=3, n=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    tri = torch.stack([torch.randint(E, (n,), generator=g), torch.randint(R, (n,), generator=g),
                       torch.randint(E, (n,), generator=g)], 1)
    return torch.unique(tri, dim=0)


def _tables(model, E=12, R=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = {"entity": torch.rand(E, model.entity_dim, generator=g) * 2 - 1}
    out.update({n: torch.rand(R, w, generator=g) * 2 - 1 for n, w in model.relation_tables().items()})
    return out


def _queries(model, tables, triples, corrupt_head):
    return ev.queries(model, lambda n, ids: tables[n][ids], [n for n in tables if n != "entity"], triples,
                      corrupt_head)


def _ranks(model, tables, triples, filt, corrupt_head, shards=(0,), candidates=None):
    """Ranks summed over shards starting at the given entity ids."""
    q = _queries(model, tables, triples, corrupt_head)
    ent = tables["entity"]
    bounds = [*shards, len(ent)]
    counts = sum(ranking.shard_counts(model, q, ent[a:b], a, filt,
                                      None if candidates is None else candidates[(candidates >= a) & (candidates < b)])
                 for a, b in zip(bounds, bounds[1:]))
    return ranking.ranks(counts, q.target, len(ent) if candidates is None else len(candidates))


def _brute_force(model, tables, triples, known, corrupt_head, candidates=None):
    ent, rel = tables["entity"], [tables[n] for n in tables if n != "entity"]
    known = set(map(tuple, known.tolist())) if known is not None else set()
    out = []
    for h, r, t in triples.tolist():
        def score(a, b):
            return model.pair(ent[a:a + 1], tuple(x[r:r + 1] for x in rel), ent[b:b + 1]).item()
        true = score(h, t)
        rank = 1
        for e in (range(len(ent)) if candidates is None else candidates.tolist()):
            cand = (e, r, t) if corrupt_head else (h, r, e)
            if cand == (h, r, t) or cand in known:
                continue
            rank += score(*cand[::2]) >= true
        out.append(rank)
    return out


def test_filter_lookup_matches_sets():
    kg = _random_kg()
    filt = ranking.TripleFilter.build(3, kg)
    queries = torch.tensor([[0, 0], [5, 2], [11, 1], [3, 0]])
    for corrupt_head in (False, True):
        rows, ents = filt.known(queries[:, 0], queries[:, 1], corrupt_head)
        got = {(int(i), int(e)) for i, e in zip(rows, ents)}
        want = {(i, (h if corrupt_head else t)) for i, (a, r) in enumerate(queries.tolist())
                for h, rr, t in kg.tolist() if rr == r and (t if corrupt_head else h) == a}
        assert got == want


@pytest.mark.parametrize("name, de, dr", [("DistMult", False, False), ("TransE_l2", False, False),
                                          ("TransR", False, False), ("RotatE", True, False)])
def test_filtered_and_unfiltered_ranks_match_brute_force(name, de, dr):
    kg = _random_kg()
    model = create_model(name, 4, 2.0, de, dr)
    tables = _tables(model, seed=3)
    test = kg[::4]
    filt = ranking.TripleFilter.build(3, kg)
    for corrupt_head in (True, False):
        assert _ranks(model, tables, test, filt, corrupt_head).tolist() == \
            _brute_force(model, tables, test, kg, corrupt_head)
        assert _ranks(model, tables, test, None, corrupt_head).tolist() == \
            _brute_force(model, tables, test, None, corrupt_head)


@pytest.mark.parametrize("name", ["TransE_l2", "DistMult", "ComplEx", "TransR"])
def test_shard_wise_ranking_equals_whole_table_ranking_exactly(name, monkeypatch):
    kg = _random_kg(E=40, n=200, seed=2)
    model = create_model(name, 8, 2.0, name == "ComplEx", name == "ComplEx")
    tables = _tables(model, E=40, seed=5)
    filt = ranking.TripleFilter.build(3, kg)
    cand = torch.tensor([1, 3, 4, 9, 17, 22, 23, 30, 38])
    for corrupt_head in (True, False):
        whole = _ranks(model, tables, kg, filt, corrupt_head)
        for shards in ((0, 13, 27), (0, 5, 6, 33)):
            assert torch.equal(_ranks(model, tables, kg, filt, corrupt_head, shards), whole)
        sampled = _ranks(model, tables, kg, filt, corrupt_head, candidates=cand)
        assert torch.equal(_ranks(model, tables, kg, filt, corrupt_head, (0, 13, 27), cand), sampled)
        assert sampled.tolist() == _brute_force(model, tables, kg, kg, corrupt_head, cand)
    monkeypatch.setattr(ranking, "_BLOCK_ELEMENTS", len(kg) * 5)  # blocks of 5 candidates
    assert torch.equal(_ranks(model, tables, kg, filt, False), whole)


def test_ties_count_against_the_model():
    model = create_model("DistMult", 2, 1.0)
    tables = {"entity": torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), "relation": torch.tensor([[1.0, 1.0]])}
    test = torch.tensor([[0, 0, 1]])
    # entity 0 scores like the true tail 1 (a tie): rank 2 unfiltered, 1 when (0, 0, 0) is known
    assert _ranks(model, tables, test, None, False).tolist() == [2]
    filt = ranking.TripleFilter.build(1, torch.tensor([[0, 0, 1], [0, 0, 0]]))
    assert _ranks(model, tables, test, filt, False).tolist() == [1]


def test_non_finite_scores_rank_last():
    kg = _random_kg()
    model = create_model("TransE_l2", 4, 2.0)
    tables = _tables(model)
    tables["relation"][:] = float("nan")  # every query's target is NaN, the candidates are finite
    got = _ranks(model, tables, kg, ranking.TripleFilter.build(3, kg), False)
    assert got.tolist() == [13] * len(kg)  # last of 12 entities, not first
    sums = metric_sums(got)
    assert sums["MRR"] / sums["count"] == pytest.approx(1 / 13)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_shard_with_non_finite_rows_is_refused_naming_how_many(bad):
    """NaN candidates never score >= the target: counted as beaten, 34 NaN rows of 60 raised
    the MRR of a diverged model. The shard holding them refuses to rank, wherever it is."""
    kg = _random_kg(E=60, n=300, seed=4)
    model = create_model("TransE_l2", 4, 2.0)
    tables = _tables(model, E=60, seed=1)
    filt = ranking.TripleFilter.build(3, kg)
    tables["entity"][torch.arange(26, 60)] = bad  # rows 26..59: 4 in the first shard, 30 in the second
    tables["entity"][40, 1] = 0.0  # one bad entry is enough to refuse a row
    with pytest.raises(InputError, match="ranking against entities 0 to 59: 34 of the 60 rows of the entity "
                                         r"table are not finite \(NaN or infinite\)"):
        _ranks(model, tables, kg, filt, False)
    with pytest.raises(InputError, match="ranking against entities 0 to 29: 4 of the 30 rows of the entity"):
        _ranks(model, tables, kg, filt, True, shards=(0, 30))
    with pytest.raises(InputError, match="ranking against entities 30 to 59: 30 of the 30 rows of the entity"):
        _ranks(model, tables, kg[(kg[:, 0] < 26) & (kg[:, 2] < 26)], filt, True, shards=(0, 30),
               candidates=torch.tensor([1, 2, 35, 50]))  # finite queries; only the second shard's candidates
    tables["entity"][26:] = torch.rand(34, 4)  # finite again: ranked as brute force ranks
    assert _ranks(model, tables, kg, filt, False, shards=(0, 30)).tolist() == _brute_force(model, tables, kg, kg, False)


def test_metrics_from_ranks_and_combining_processes():
    sums = [metric_sums(torch.tensor([1, 2, 4])), metric_sums(torch.tensor([10, 20]))]
    got = combine(sums)
    ranks = [1, 2, 4, 10, 20]
    assert got["MRR"] == pytest.approx(sum(1 / r for r in ranks) / 5)
    assert got["MR"] == pytest.approx(37 / 5)
    assert (got["HITS@1"], got["HITS@3"], got["HITS@10"]) == (pytest.approx(0.2), pytest.approx(0.4),
                                                             pytest.approx(0.8))


def test_evaluate_ranks_both_sides_in_batches():
    kg = _random_kg()
    model = create_model("DistMult", 4, 1.0)
    tables = _tables(model)
    filt = ranking.TripleFilter.build(3, kg)
    sums = ev.evaluate(model, lambda n, ids: tables[n][ids],
                       lambda q, c: ranking.shard_counts(model, q, tables["entity"], 0, filt, c), ["relation"], kg, 12,
                       batch_size=7)
    assert sums["count"] == 2 * len(kg)
    ranks = _brute_force(model, tables, kg, kg, True) + _brute_force(model, tables, kg, kg, False)
    assert sums["MR"] == pytest.approx(sum(ranks))
    assert sums["MRR"] == pytest.approx(sum(1 / r for r in ranks))


def test_eval_share_samples_the_same_triples_on_every_trainer():
    kg = _random_kg()
    shares = [ev.eval_share(kg, 0.5, r, 3, seed=4) for r in range(3)]
    together = torch.cat(shares)
    assert len(together) == len(kg) // 2 and len(torch.unique(together, dim=0)) == len(together)

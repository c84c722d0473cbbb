"""Data loaders over an in-memory graph, and GraphSAGE learning through them."""

import torch
import torch.nn.functional as F

from distgraph.data import generate_sbm
from distgraph.dataloading import DistEdgeDataLoader, DistNodeDataLoader, MultiLayerNeighborSampler, negative_sampler
from distgraph.nn import GraphSAGE


def test_every_seed_once_per_epoch(sbm):
    seeds = torch.nonzero(sbm.ndata["train_mask"]).flatten()
    loader = DistNodeDataLoader(sbm, seeds, MultiLayerNeighborSampler([3, 3]), batch_size=64, shuffle=True,
                                generator=torch.Generator().manual_seed(0))
    for _ in range(2):
        seen = torch.cat([out for _, out, _ in loader])
        assert torch.equal(seen.sort().values, seeds)
    dropped = DistNodeDataLoader(sbm, seeds, MultiLayerNeighborSampler([2]), batch_size=64, drop_last=True)
    assert len(dropped) == seeds.numel() // 64 and all(out.numel() == 64 for _, out, _ in dropped)


def test_edge_loader_pairs_negatives_and_exclusion(sbm):
    eids = torch.arange(0, 600, 2)
    loader = DistEdgeDataLoader(sbm, eids, MultiLayerNeighborSampler([-1, -1]), batch_size=100, exclude="reverse",
                                negative_sampler=negative_sampler.Uniform(4), generator=torch.Generator().manual_seed(1))
    seen = []
    for inputs, pos, neg, blocks in loader:
        out = blocks[-1].dst_nodes
        assert torch.equal(out[pos.edge_index[0]], sbm.src[pos.eids])
        assert torch.equal(out[pos.edge_index[1]], sbm.dst[pos.eids])
        assert neg.num_edges() == 4 * pos.num_edges()
        assert torch.equal(out[neg.edge_index[0]], sbm.src[pos.eids].repeat_interleave(4))
        pairs = torch.cat([sbm.src[pos.eids] * sbm.num_nodes() + sbm.dst[pos.eids],
                           sbm.dst[pos.eids] * sbm.num_nodes() + sbm.src[pos.eids]])
        for b in blocks:  # fanout -1 would take every edge: the seeds and their reverses must be gone
            assert not torch.isin(b.eids, pos.eids).any()
            key = b.src_nodes[b.edge_index[0]] * sbm.num_nodes() + b.dst_nodes[b.edge_index[1]]
            assert not torch.isin(key, pairs).any()
        seen.append(pos.eids)
    assert torch.equal(torch.cat(seen), eids)


def test_graphsage_learns_sbm_labels_far_better_than_features_alone():
    torch.manual_seed(0)
    g = generate_sbm(6000, 60000, num_classes=6, feat_dim=16, seed=7)
    feat, label = g.ndata["feat"], g.ndata["label"]
    train = torch.nonzero(g.ndata["train_mask"]).flatten()
    test = torch.nonzero(g.ndata["test_mask"]).flatten()
    sampler = MultiLayerNeighborSampler([10, 10])
    model = GraphSAGE(16, 32, 6, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(10):
        for inputs, outputs, blocks in DistNodeDataLoader(g, train, sampler, batch_size=100, shuffle=True):
            loss = F.cross_entropy(model(blocks, feat[inputs]), label[outputs])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        inputs, outputs, blocks = next(iter(DistNodeDataLoader(g, test, sampler, batch_size=test.numel())))
        acc = float((model(blocks, feat[inputs]).argmax(1) == label[outputs]).float().mean())
    assert acc > 0.72  # 0.81 when written; a features-only MLP gets about 0.3 on this graph


def auc(pos: torch.Tensor, neg: torch.Tensor) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    scores = torch.cat([pos, neg])
    ranks = torch.empty_like(scores)
    ranks[scores.argsort()] = torch.arange(1, scores.numel() + 1, dtype=scores.dtype)
    return float((ranks[: pos.numel()].sum() - pos.numel() * (pos.numel() + 1) / 2) / (pos.numel() * neg.numel()))


def test_link_prediction_beats_an_auc_bar():
    torch.manual_seed(0)
    g = generate_sbm(3000, 30000, num_classes=6, feat_dim=16, p_in=0.9, feat_signal=0.5, seed=8)
    feat = g.ndata["feat"]
    perm = torch.randperm(g.num_edges())
    train_e, test_e = perm[:25000], perm[25000:26000]
    sampler = MultiLayerNeighborSampler([10, 10])
    model = GraphSAGE(16, 32, 32, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)

    def scores(inputs, pairs, blocks):
        h = model(blocks, feat[inputs])
        return (h[pairs.edge_index[0]] * h[pairs.edge_index[1]]).sum(1)

    loader = DistEdgeDataLoader(g, train_e, sampler, batch_size=250, shuffle=True, exclude="reverse",
                                negative_sampler=negative_sampler.Uniform(2))
    for _ in range(2):
        for inputs, pos, neg, blocks in loader:
            ps, ns = scores(inputs, pos, blocks), scores(inputs, neg, blocks)
            logits = torch.cat([ps, ns])
            loss = F.binary_cross_entropy_with_logits(logits, torch.cat([torch.ones_like(ps), torch.zeros_like(ns)]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        loader = DistEdgeDataLoader(g, test_e, sampler, batch_size=1000, exclude="reverse",
                                    negative_sampler=negative_sampler.Uniform(1), generator=torch.Generator().manual_seed(3))
        inputs, pos, neg, blocks = next(iter(loader))
        value = auc(scores(inputs, pos, blocks), scores(inputs, neg, blocks))
    assert value > 0.78  # 0.83 when written; 0.5 is chance

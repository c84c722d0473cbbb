"""Link prediction with GraphSAGE on a partitioned graph (DistDGL's unsupervised example, for distgraph).

Edges are split 90/10 into training and held-out edges (the same split on every trainer);
each trainer trains on its share of the training edges with `--num_negs` uniform negatives
per positive, scoring pairs by the dot product of their embeddings; the AUC on held-out
edges (against as many uniform negatives) is printed after every epoch. Seed edges and
their reverses are excluded from the sampled neighbourhoods. Features come with each
mini-batch, which the loader moves to the trainer's device (`--num_gpus`).

Standalone:  python train_dist_link.py --graph_name sbm --part_config parts1/sbm.json
Launched:    distgraph launch ... "python train_dist_link.py --graph_name sbm"
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from common import (Checkpoints, add_common_args, all_sum, digest, fanouts, finish, joined, optimizer,
                    parse, start, wrap)
from tqdm import tqdm

import distgraph as dg


def scores(model, pairs, blocks) -> torch.Tensor:
    h = model(blocks, blocks[0].srcdata["feat"].float())
    return (h[pairs.edge_index[0]] * h[pairs.edge_index[1]]).sum(1)


def auc_counts(pos: torch.Tensor, neg: torch.Tensor) -> tuple[float, float]:
    """(pairs where the positive outscores the negative, ties counted half; number of pairs)."""
    greater = (pos.unsqueeze(1) > neg.unsqueeze(0)).sum() + 0.5 * (pos.unsqueeze(1) == neg.unsqueeze(0)).sum()
    return float(greater), float(pos.numel() * neg.numel())


def evaluate(model, g, eids, sampler, batch_size: int, device: torch.device) -> tuple[float, float]:
    model.eval()
    wins = pairs = 0.0
    with torch.no_grad():
        loader = dg.DistEdgeDataLoader(g, eids, sampler, device, batch_size=batch_size, exclude="reverse",
                                       negative_sampler=dg.dataloading.negative_sampler.Uniform(1),
                                       generator=torch.Generator().manual_seed(1))
        for _, pos, neg, blocks in loader:
            w, n = auc_counts(scores(model, pos, blocks), scores(model, neg, blocks))
            wins, pairs = wins + w, pairs + n
    model.train()
    return wins, pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    ap.add_argument("--num_negs", type=int, default=2)
    ap.add_argument("--eval_edges", type=int, default=2000, help="held-out edges scored per epoch (in all)")
    args = parse(ap)
    g, distributed, rank, device = start(args)
    dg.distributed.require_fields(g, ["feat"], script=__file__)
    book = g.get_partition_book()
    held_out = torch.rand(g.num_edges(), generator=torch.Generator().manual_seed(0)) < 0.1
    train_eid = dg.edge_split(~held_out, book, force_even=True)
    test_eid = dg.edge_split(torch.nonzero(held_out).flatten()[: args.eval_edges], book, force_even=True)
    in_feats = g.ndata["feat"].shape[1]
    if rank == 0:
        print(f"{g}: trainer 0 has {train_eid.numel()} training edges")
    dg.distributed.check_train_shares(train_eid.numel(), args.batch_size, "training edge")

    sampler = dg.MultiLayerNeighborSampler(fanouts(args.fan_out), prefetch_node_feats=["feat"])
    eval_sampler = dg.MultiLayerNeighborSampler(fanouts(args.eval_fan_out or args.fan_out),
                                                prefetch_node_feats=["feat"])
    model = wrap(dg.nn.GraphSAGE(in_feats, args.num_hidden, args.num_hidden, args.num_layers, args.dropout),
                 distributed, device)
    opt = optimizer(model, args)
    loader = dg.DistEdgeDataLoader(g, train_eid, sampler, device, batch_size=args.batch_size, shuffle=True,
                                   exclude="reverse",
                                   negative_sampler=dg.dataloading.negative_sampler.Uniform(args.num_negs))
    checkpoints = Checkpoints(args, model, opt)
    for epoch in range(checkpoints.start_epoch(), args.num_epochs):
        begin = time.perf_counter()
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, leave=False, mininterval=1)
        loss_sum = steps = 0
        with joined(model, distributed):
            for _, pos, neg, blocks in bar:
                h = model(blocks, blocks[0].srcdata["feat"].float())
                logits = torch.cat([(h[p.edge_index[0]] * h[p.edge_index[1]]).sum(1) for p in (pos, neg)])
                labels = torch.cat([torch.ones(pos.num_edges(), device=device),
                                    torch.zeros(neg.num_edges(), device=device)])
                loss = F.binary_cross_entropy_with_logits(logits, labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
                loss_sum, steps = loss_sum + loss.item(), steps + 1
        seconds = time.perf_counter() - begin
        wins, pairs = all_sum(list(evaluate(model, g, test_eid, eval_sampler, args.batch_size_eval, device)),
                              distributed)
        if rank == 0:  # the loss is trainer 0's mean over the epoch's steps
            print(f"epoch {epoch}: {len(loader)} steps in {seconds:.2f} s, loss {loss_sum / max(steps, 1):.3f}, "
                  f"held-out AUC {wins / max(pairs, 1):.4f}", flush=True)
        checkpoints.end_epoch(epoch, epoch == args.num_epochs - 1)
    if rank == 0:
        print(f"model digest {digest(model)}", flush=True)
    finish(distributed)


if __name__ == "__main__":
    main()

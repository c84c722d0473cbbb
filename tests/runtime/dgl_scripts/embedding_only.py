"""Node embeddings learnt with `DistEmbedding` and `SparseAdagrad` alone: no dense weights,
no DDP, no torch.distributed (DGL-KE-like training written against dgl.distributed). Edges
are split with `edge_split`, batched by a `DistDataLoader`, scored by the dot product of
their endpoints' embeddings against uniform negatives; held-out edges are scored at the end
(AUC). Only the import line differs from a DGL script."""

import torch as th
import torch.nn.functional as F

import distgraph as dgl
from common import auc, parse_args, result


def initializer(shape, dtype):
    return th.empty(shape, dtype=dtype).normal_(0, 0.1)


def score(emb, src, dst):
    return (emb(src) * emb(dst)).sum(1)


def main():
    args = parse_args([("--dim", int, 16)])
    th.manual_seed(0)
    dgl.distributed.initialize(args.ip_config)
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    held_out = th.rand(g.num_edges(), generator=th.Generator().manual_seed(0)) < 0.1
    train_eids = dgl.distributed.edge_split(~held_out, g.get_partition_book(), force_even=True)
    test_eids = dgl.distributed.edge_split(held_out, g.get_partition_book(), force_even=True)
    emb = dgl.distributed.DistEmbedding(g.num_nodes(), args.dim, name="emb", init_func=initializer)
    optimizer = dgl.distributed.optim.SparseAdagrad([emb], lr=args.lr)
    dataloader = dgl.distributed.DistDataLoader(dataset=train_eids, batch_size=args.batch_size,
                                                collate_fn=lambda eids: th.tensor(eids), shuffle=True)
    for epoch in range(args.num_epochs):
        for eids in dataloader:
            src, dst = g.find_edges(eids)
            neg = th.randint(0, g.num_nodes(), (len(eids),))
            pos_score, neg_score = score(emb, src, dst), score(emb, src, neg)
            loss = F.binary_cross_entropy_with_logits(th.cat([pos_score, neg_score]),
                                                      th.cat([th.ones_like(pos_score), th.zeros_like(neg_score)]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print("epoch {} loss {:.4f}".format(epoch, loss.item()))
    g.barrier()  # every trainer's last pushes are in before anyone scores
    src, dst = g.find_edges(test_eids)
    with th.no_grad():
        pos = score(emb, src, dst)
        neg = score(emb, src, th.randint(0, g.num_nodes(), (len(test_eids),), generator=th.Generator().manual_seed(1)))
    result(rank=dgl.distributed.role.get_trainer_rank(), auc=f"{auc(pos, neg):.4f}",
           trainers=dgl.distributed.role.get_num_trainers())
    g.barrier()


if __name__ == "__main__":
    main()

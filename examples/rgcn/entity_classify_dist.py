"""RGCN entity classification on a partitioned heterogeneous graph: DGL's distributed RGCN
example (examples/pytorch/rgcn/experimental/entity_classify_dist.py) for distgraph, with its
flags (dashes or underscores).

Papers (the `--category` type) are classified. Node types with features (`feat`) enter
through a linear projection; the others through learnt embeddings: `DistEmbedding`s trained
with `SparseAdam` (`--sparse-lr`) with `--sparse-embedding`, dense `nn.Embedding`s otherwise.
Every layer is a `RelGraphConv` (basis decomposition with `--n-bases`, self-loop, layer
norm, dropout) over the block's homogeneous view, each relation averaged (RGCN's norm).
Dense weights are trained with DDP when launched. Mini-batches sample `--fanout` in-edges of
every edge type per node; paper features and labels come with them (prefetched where the
batch is made), and the loader moves them to the trainer's device (`--num-gpus`: DGL's flag,
cuda:<local rank % num_gpus>; -1: the CPU), where the embeddings' rows are gathered and their
gradients summed too. Validation and test predictions go into a persistent DistTensor, and
trainer 0 reports the accuracy over all of them. `--checkpoint-dir` saves every `--checkpoint-interval`
epochs (the model, both optimizers, the sparse embeddings with their SparseAdam state, the
random state and the best epoch so far); `--resume` continues from the newest.
`--save-embeddings DIR` / `--save-predictions DIR` run a layer-wise full-graph inference after
training (every trainer its share of every type's nodes, each layer's output in DistTensors)
and write the `--category` nodes' last hidden layer / predicted class and class probabilities
into DIR, one part per trainer keyed by the input's per-type node ids
(`distgraph.load_results(DIR)` joins them); the accuracy of those predictions is printed.

Standalone (a 1-part partition):
    python entity_classify_dist.py --graph-name mag --dataset mag --conf-path parts1/mag.json --standalone
Launched (the DGL README's command, with distgraph launch):
    distgraph launch --workspace . --num_trainers 1 --num_servers 1 --num_samplers 4 \
        --part_config data/ogbn-mag.json --ip_config ip_config.txt \
        "python entity_classify_dist.py --graph-name ogbn-mag --dataset ogbn-mag --fanout='25,25' \
         --batch-size 512 --n-hidden 64 --lr 0.01 --eval-batch-size 16 --low-mem --dropout 0.5 \
         --use-self-loop --n-bases 2 --n-epochs 3 --layer-norm --ip-config ip_config.txt \
         --num-workers 4 --num-servers 1 --sparse-embedding --sparse-lr 0.06"
`--low-mem`, `--dgl-sparse`, `--relabel`, `--num-workers`, `--num-servers`, `--id` and
`--local_rank` are accepted for DGL's command lines: the layers always run in their
low-memory form, embeddings are always distgraph's, the number of sampler processes and
servers comes from `distgraph launch`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import distgraph as dgl
from distgraph.nn import RelGraphConv, relation_norm


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)

    def add(*names, **kwargs):  # DGL's dashed names, and the same with underscores
        spellings = list(dict.fromkeys(n for name in names
                                       for n in (name, "--" + name[2:].replace("-", "_") if name[:2] == "--" else name)))
        p.add_argument(*spellings, **kwargs)

    add("--graph-name", required=True, help="graph name (the partition config's)")
    add("-d", "--dataset", default=None, help="dataset name (reported only)")
    add("--ip-config", help="set by distgraph launch")
    add("--conf-path", help="the 1-part partition config, standalone only")
    add("--standalone", action="store_true", help="run in one process on --conf-path")
    add("--category", default="paper", help="the node type to classify")
    add("--num-gpus", type=int, default=-1, help="GPUs per machine: a machine's trainer i trains on "
                                                 "cuda:<i %% num_gpus>; -1 (or 0): the CPU")
    add("--dropout", type=float, default=0.0)
    add("--n-hidden", type=int, default=16)
    add("--lr", type=float, default=1e-2)
    add("--sparse-lr", type=float, default=1e-2)
    add("--n-bases", type=int, default=-1, help="bases of the relation weights; -1: one weight per relation")
    add("--n-layers", type=int, default=2)
    add("-e", "--n-epochs", type=int, default=50)
    add("--l2norm", type=float, default=0.0, help="weight decay of the dense weights")
    add("--fanout", default="4, 4", help="in-edges per edge type and node, input layer first; -1: all")
    add("--validation-fanout", default=None)
    add("--use-self-loop", action="store_true")
    add("--batch-size", type=int, default=100)
    add("--eval-batch-size", type=int, default=128)
    add("--log-every", type=int, default=20)
    add("--sparse-embedding", action="store_true", help="DistEmbedding + SparseAdam for featureless types")
    add("--layer-norm", action="store_true")
    add("--seed", type=int, default=0)
    add("--checkpoint-dir", help="save a checkpoint (model, optimizers, sparse embeddings, random state) into this folder")
    add("--checkpoint-interval", type=int, default=1, help="epochs between checkpoints")
    add("--resume", action="store_true",
        help="continue from the newest complete checkpoint in --checkpoint-dir (from scratch if none)")
    add("--log-dir", help="write each epoch's metrics as TensorBoard event files and JSON lines "
                          "(LOG_DIR/trainer-<rank>/)")
    add("--save-embeddings", metavar="DIR", help="write the category's embeddings (last hidden layer) into DIR")
    add("--save-predictions", metavar="DIR", help="write the category's predicted classes and probabilities into DIR")
    for flag in ("--low-mem", "--dgl-sparse", "--relabel"):
        add(flag, action="store_true", help="accepted for DGL's command lines")
    for flag in ("--num-workers", "--num-servers", "--id", "--local-rank"):
        add(flag, type=int, default=None, help="accepted for DGL's command lines")
    args = p.parse_args(argv)
    if args.resume and not args.checkpoint_dir:
        p.error("--resume needs --checkpoint-dir")
    if args.checkpoint_interval < 1:
        p.error(f"--checkpoint-interval must be at least 1, got {args.checkpoint_interval}")
    args.validation_fanout = args.validation_fanout or args.fanout
    return args


def init_emb(shape, dtype):
    arr = th.zeros(shape, dtype=dtype)
    nn.init.uniform_(arr, -1.0, 1.0)
    return arr


class DistEmbedLayer(nn.Module):
    """Each node type's input: its features projected, or a learnt embedding when it has none."""

    def __init__(self, g, embed_size: int, sparse_emb: bool, device: th.device, feat_name: str = "feat",
                 embed_name: str = "node_emb"):
        super().__init__()
        self.g, self.feat_name, self.device = g, feat_name, device
        self.node_projs = nn.ModuleDict()
        self.dense_embeds = nn.ModuleDict()
        self.node_embeds: dict = {}
        for ntype in g.ntypes:
            if feat_name in g.nodes[ntype].data:
                self.node_projs[ntype] = nn.Linear(g.nodes[ntype].data[feat_name].shape[1], embed_size)
                nn.init.xavier_uniform_(self.node_projs[ntype].weight)
            elif sparse_emb:
                self.node_embeds[ntype] = dgl.distributed.DistEmbedding(
                    g.num_nodes(ntype), embed_size, embed_name + "_" + ntype, init_emb,
                    g.get_node_partition_policy(ntype))
            else:
                self.dense_embeds[ntype] = nn.Embedding(g.num_nodes(ntype), embed_size)
                nn.init.uniform_(self.dense_embeds[ntype].weight, -1.0, 1.0)

    def forward(self, node_ids: dict, feats: dict) -> dict:
        """Rows on this layer's device of the nodes `node_ids` (ids on any device), from the
        batch's features `feats` where it has them."""
        out = {}
        for ntype, ids in node_ids.items():
            if ntype in self.node_projs:
                rows = feats[ntype] if ntype in feats else self.g.nodes[ntype].data[self.feat_name][ids.cpu()]
                out[ntype] = self.node_projs[ntype](rows.to(self.device).float())  # (may be stored as float16)
            elif ntype in self.node_embeds:
                out[ntype] = self.node_embeds[ntype](ids, self.device)
            else:
                out[ntype] = self.dense_embeds[ntype](ids.to(self.device))
        return out


class EntityClassify(nn.Module):
    """`n_layers` RelGraphConv layers over the blocks' homogeneous views."""

    def __init__(self, h_dim: int, out_dim: int, num_rels: int, num_bases: int, n_layers: int, dropout: float,
                 use_self_loop: bool, layer_norm: bool):
        super().__init__()
        regularizer = "basis" if 0 < num_bases < num_rels else None
        bases = num_bases if regularizer else None
        self.layers = nn.ModuleList(
            RelGraphConv(h_dim, h_dim, num_rels, regularizer, bases, activation=F.relu, self_loop=use_self_loop,
                         dropout=dropout, layer_norm=layer_norm) for _ in range(n_layers - 1))
        self.layers.append(RelGraphConv(h_dim, out_dim, num_rels, regularizer, bases, self_loop=use_self_loop))

    def forward(self, blocks, feats: dict) -> dict:
        h = blocks[0].src_homogeneous(feats)
        for layer, block in zip(self.layers, blocks):
            h = layer(block, h, norm=relation_norm(block))  # layer i's destinations are layer i+1's sources
        return blocks[-1].dst_per_type(h)


class Net(nn.Module):
    """Inputs and layers in one module, so one DDP wrapper (and one `join`) covers both."""

    def __init__(self, embed: DistEmbedLayer, model: EntityClassify, category: str):
        super().__init__()
        self.embed, self.model, self.category = embed, model, category

    def forward(self, input_nodes: dict, blocks) -> th.Tensor:
        feats = {t: f for t, f in blocks[0].srcdata["feat"].items()} if "feat" in blocks[0].srcdata else {}
        return self.model(blocks, self.embed(input_nodes, feats))[self.category]


def evaluate(g, net, loader, results, category: str) -> None:
    """Predictions of this trainer's nodes of `loader` into the DistTensor `results`."""
    net.eval()
    with th.no_grad():
        for input_nodes, seeds, blocks in loader:
            results[seeds[category].cpu()] = net(input_nodes, blocks).argmax(1).cpu()
    net.train()


def inference(g, net: Net, batch_size: int, device: th.device) -> list:
    """Every layer's output for every node (the last layer's for the category only), each
    batch computed on `device`."""
    net.eval()

    def conv(layer):
        def run(block, h: dict) -> dict:
            block = block.to(device)
            h = block.src_homogeneous({t: x.to(device) for t, x in h.items()})
            out = layer(block, h, norm=relation_norm(block))
            return {t: x.cpu() for t, x in block.dst_per_type(out).items()}  # into the layer's DistTensors
        return run

    layers = net.model.layers
    return dgl.layerwise_inference(g, [conv(layer) for layer in layers], lambda ids: net.embed(ids, {}),
                                   [layer.out_feat for layer in layers], batch_size, last_ntypes=[net.category])


def save_results(args, g, net: Net, split: dict, labels: th.Tensor, rank: int, device: th.device) -> None:
    """Full-graph inference on `device`; the accuracy of its predictions, then the files asked for."""
    category = net.category
    outputs = inference(g, net, args.eval_batch_size, device)
    logits = outputs[-1][category]
    counts = []
    for name in ("val_mask", "test_mask"):
        ids = split[name]
        counts += [int((logits[ids].argmax(1) == labels[ids]).sum()), ids.numel()]
    counts = th.tensor(counts)
    if not args.standalone:
        th.distributed.all_reduce(counts)
    val_ok, val_n, test_ok, test_n = counts.tolist()
    if rank == 0:
        print(f"full-graph inference: Val Acc {val_ok / max(val_n, 1):.4f}, Test Acc {test_ok / max(test_n, 1):.4f} "
              f"({test_ok}/{test_n} test {category} nodes)", flush=True)
    if args.save_embeddings:
        emb = outputs[-2][category] if len(outputs) > 1 else logits
        rows = dgl.save_embeddings(args.save_embeddings, g, emb, ntype=category)
        print(f"trainer {rank}: embeddings of {rows} {category} nodes -> {args.save_embeddings}", flush=True)
    if args.save_predictions:
        rows = dgl.save_predictions(args.save_predictions, g, logits, ntype=category)
        print(f"trainer {rank}: predictions of {rows} {category} nodes -> {args.save_predictions}", flush=True)
    g.barrier()  # every trainer has read the layers' tensors before they go


def main() -> None:
    args = parse_args()
    th.manual_seed(args.seed)
    th.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dgl.distributed.initialize(args.ip_config)
    device = dgl.distributed.trainer_device(args.num_gpus)
    backend = None if args.standalone else dgl.distributed.ddp_backend(device)
    if backend is not None:
        th.distributed.init_process_group(backend=backend)
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.conf_path)
    category = args.category
    dgl.distributed.require_fields(g, ["feat", "label", "train_mask", "val_mask", "test_mask"], category, __file__)
    pb = g.get_partition_book()
    split = {name: dgl.distributed.node_split(g.nodes[category].data[name], pb, ntype=category, force_even=True)
             for name in ("train_mask", "val_mask", "test_mask")}
    labels = g.nodes[category].data["label"][np.arange(g.num_nodes(category))]
    all_val = th.nonzero(g.nodes[category].data["val_mask"][np.arange(g.num_nodes(category))]).flatten()
    all_test = th.nonzero(g.nodes[category].data["test_mask"][np.arange(g.num_nodes(category))]).flatten()
    num_classes = int(labels.max()) + 1
    rank = g.rank()
    if rank == 0:
        print(f"trainer 0 trains on {device}" + (f", DDP over {backend}" if backend else ""), flush=True)
        print(f"{g} ({args.dataset or args.graph_name}): {num_classes} classes; trainer 0: "
              f"{len(split['train_mask'])} training, {len(split['val_mask'])} validation {category} nodes", flush=True)
    dgl.distributed.check_train_shares(len(split["train_mask"]), args.batch_size, f"training {category} node")

    fanouts = [int(f) for f in args.fanout.split(",")]
    if len(fanouts) != args.n_layers:
        raise SystemExit(f"--fanout gives {len(fanouts)} layers but --n-layers is {args.n_layers}")
    sampler = dgl.dataloading.MultiLayerNeighborSampler(fanouts, prefetch_node_feats=["feat"],
                                                        prefetch_labels=["label"])
    loader = dgl.dataloading.DistNodeDataLoader(g, {category: split["train_mask"]}, sampler, device,
                                                batch_size=args.batch_size, shuffle=True, drop_last=False)
    eval_sampler = dgl.dataloading.MultiLayerNeighborSampler([int(f) for f in args.validation_fanout.split(",")],
                                                             prefetch_node_feats=["feat"])
    embed = DistEmbedLayer(g, args.n_hidden, args.sparse_embedding, device)
    model = EntityClassify(args.n_hidden, num_classes, len(g.canonical_etypes), args.n_bases, args.n_layers,
                           args.dropout, args.use_self_loop, args.layer_norm)
    net = Net(embed, model, category)
    # on the device; in DDP when launched, gradients summed in rank order (a resumed run equals the uninterrupted one)
    net = net.to(device) if args.standalone else dgl.distributed.data_parallel(net, device)
    optimizer = th.optim.Adam(net.parameters(), lr=args.lr, weight_decay=args.l2norm)
    sparse = list(embed.node_embeds.values())
    emb_optimizer = dgl.distributed.optim.SparseAdam(sparse, lr=args.sparse_lr) if sparse else None
    watched = {t: (e, th.arange(min(1000, e.num_embeddings))) for t, e in embed.node_embeds.items()}
    with th.no_grad():
        before = {t: e(ids).clone() for t, (e, ids) in watched.items()}

    results = dgl.distributed.DistTensor((g.num_nodes(category),), th.long, "results", persistent=True)
    checkpoints = dgl.distributed.EpochCheckpoints(args.checkpoint_dir, net, optimizer, sparse,
                                                   args.checkpoint_interval, args.resume)
    first = checkpoints.start_epoch()
    best = tuple(checkpoints.extra.get("best", (-1.0, -1.0, -1)))
    log = dgl.metrics.MetricsLog(args.log_dir, rank) if args.log_dir else None
    for epoch in range(first, args.n_epochs):
        tic, pulled = time.time(), dgl.metrics.remote_rows()
        correct = seen = 0
        loss_sum = 0.0
        join = net.join() if not args.standalone else contextlib.nullcontext()
        with join:
            bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, leave=False, mininterval=1)
            for step, (input_nodes, seeds, blocks) in enumerate(bar):
                logits = net(input_nodes, blocks)
                batch_labels = blocks[-1].dstdata["label"][category]
                loss = F.cross_entropy(logits, batch_labels)
                optimizer.zero_grad()
                if emb_optimizer is not None:
                    emb_optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if emb_optimizer is not None:
                    emb_optimizer.step()
                correct += int((logits.argmax(1) == batch_labels).sum())
                seen += batch_labels.numel()
                loss_sum += loss.item() * batch_labels.numel()
                if step % args.log_every == 0:
                    bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        toc = time.time()
        for name in ("val_mask", "test_mask"):
            evaluate(g, net, dgl.dataloading.DistNodeDataLoader(g, {category: split[name]}, eval_sampler, device,
                                                                batch_size=args.eval_batch_size), results, category)
        g.barrier()
        val_acc = float((results[all_val] == labels[all_val]).float().mean())
        test_acc = float((results[all_test] == labels[all_test]).float().mean())
        if val_acc > best[0]:
            best = (val_acc, test_acc, epoch)
        checkpoints.extra["best"] = list(best)
        if log:
            log.log(epoch, loss=loss_sum / max(seen, 1), **{"accuracy/train": correct / max(seen, 1),
                                                             "accuracy/val": val_acc, "accuracy/test": test_acc},
                    seeds_per_s=seen / (toc - tic), remote_rows=dgl.metrics.remote_rows() - pulled,
                    epoch_seconds=toc - tic)
            log.flush()
        if rank == 0:  # the loss is trainer 0's mean over the epoch's seeds, as logged
            print(f"Epoch {epoch}: {len(loader)} steps in {toc - tic:.2f} s, loss {loss_sum / max(seen, 1):.4f}, "
                  f"Train Acc {correct / max(seen, 1):.4f}, Val Acc {val_acc:.4f}, Test Acc {test_acc:.4f}", flush=True)
        checkpoints.end_epoch(epoch, epoch == args.n_epochs - 1)
        g.barrier()
    if log:
        log.close()
    with th.no_grad():
        moved = {t: float((e(ids) - before[t]).abs().mean()) for t, (e, ids) in watched.items()}
    if rank == 0:
        print(f"best Val Acc {best[0]:.4f} at epoch {best[2]}; Test Acc {best[1]:.4f}; model digest "
              f"{dgl.distributed.model_digest(net)}", flush=True)
        if moved:
            print("embeddings moved: " + ", ".join(f"{t} {v:.4f}" for t, v in sorted(moved.items())), flush=True)
    if args.save_embeddings or args.save_predictions:
        save_results(args, g, net.module if not args.standalone else net, split, labels, rank, device)
    g.barrier()
    if not args.standalone:
        th.distributed.destroy_process_group()


if __name__ == "__main__":
    main()

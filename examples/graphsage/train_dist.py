"""Node classification with GraphSAGE on a partitioned graph (DistDGL's train_dist.py, for distgraph).

With --save_embeddings DIR / --save_predictions DIR, a layer-wise full-graph inference after
training (every trainer its share of all nodes, each layer's output in a DistTensor) writes
every node's hidden representation (the last layer's input) / predicted class and class
probabilities into DIR, one part per trainer keyed by the input's node ids
(`distgraph.load_results(DIR)` joins them); the accuracy of those predictions is printed.

Features and labels come with each mini-batch (prefetched where it is made) and the loader
moves the batch to the trainer's device (`--num_gpus`: cuda:<local rank % num_gpus>, from
pinned buffers while the next batch is sampled); the inference runs there too.

Standalone (one process, a 1-part partition):
    python train_dist.py --graph_name sbm --part_config parts1/sbm.json
On a cluster (every trainer runs this; DDP over gloo, or NCCL when every trainer has a GPU):
    distgraph launch --workspace . --num_trainers 1 --num_servers 1 --part_config parts/sbm.json \
        --ip_config ip_config.txt "python train_dist.py --graph_name sbm"
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


def evaluate(model, g, nids, sampler, batch_size: int, device: torch.device) -> tuple[int, int]:
    """(correct, total) over this trainer's share of `nids`."""
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for _, outputs, blocks in dg.DistNodeDataLoader(g, nids, sampler, device, batch_size=batch_size):
            pred = model(blocks, blocks[0].srcdata["feat"].float()).argmax(1)
            correct += int((pred == blocks[-1].dstdata["label"]).sum())
            total += outputs.numel()
    model.train()
    return correct, total


def inference(model: dg.nn.GraphSAGE, g, batch_size: int, device: torch.device) -> list:
    """Every node's output of every layer (DGL's layer-wise `SAGE.inference`, full
    neighbourhoods), each batch computed on `device`."""
    model.eval()
    last = len(model.layers) - 1

    def layer(conv, i: int):
        def run(block, h):
            h = conv(block.to(device), h.to(device))
            return (h if i == last else F.relu(h)).cpu()  # into the layer's DistTensor
        return run

    layers = [layer(conv, i) for i, conv in enumerate(model.layers)]
    widths = [conv.fc_self.out_features for conv in model.layers]
    return dg.layerwise_inference(g, layers, lambda ids: g.ndata["feat"][ids].float(), widths, batch_size)


def save_results(args: argparse.Namespace, model: dg.nn.GraphSAGE, g, nids: dict, distributed: bool,
                 rank: int, device: torch.device) -> None:
    """Full-graph inference on `device`; the accuracy of its predictions, then the files asked for."""
    outputs = inference(model, g, args.batch_size_eval, device)
    logits = outputs[-1]
    counts = []
    for split in ("val", "test"):
        pred = logits[nids[split]].argmax(1)
        counts += [int((pred == g.ndata["label"][nids[split]]).sum()), nids[split].numel()]
    val_ok, val_n, test_ok, test_n = (int(c) for c in all_sum(counts, distributed))
    if rank == 0:
        print(f"full-graph inference: val acc {val_ok / max(val_n, 1):.4f}, test acc {test_ok / max(test_n, 1):.4f} "
              f"({test_ok}/{test_n} test nodes)", flush=True)
    if args.save_embeddings:
        rows = dg.save_embeddings(args.save_embeddings, g, outputs[-2] if len(outputs) > 1 else logits)
        print(f"trainer {rank}: embeddings of {rows} nodes -> {args.save_embeddings}", flush=True)
    if args.save_predictions:
        rows = dg.save_predictions(args.save_predictions, g, logits)
        print(f"trainer {rank}: predictions of {rows} nodes -> {args.save_predictions}", flush=True)
    g.barrier()  # every trainer has read the layers' tensors before they go


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    ap.add_argument("--save_embeddings", metavar="DIR", help="write every node's embedding (the last layer's input) "
                                                             "into DIR after training, in the input's node ids")
    ap.add_argument("--save_predictions", metavar="DIR", help="write every node's predicted class and class "
                                                              "probabilities into DIR after training")
    args = parse(ap)
    g, distributed, rank, device = start(args)
    dg.distributed.require_fields(g, ["feat", "label", "train_mask", "val_mask", "test_mask"], script=__file__)
    book = g.get_partition_book()
    train_nid = dg.node_split(g.ndata["train_mask"], book, force_even=True)
    val_nid = dg.node_split(g.ndata["val_mask"], book, force_even=True)
    test_nid = dg.node_split(g.ndata["test_mask"], book, force_even=True)
    num_classes = int(g.ndata["label"][torch.arange(g.num_nodes())].max()) + 1
    in_feats = g.ndata["feat"].shape[1]
    if rank == 0:
        print(f"{g}: {in_feats} features, {num_classes} classes; trainer 0 has {train_nid.numel()} training nodes")
    dg.distributed.check_train_shares(train_nid.numel(), args.batch_size)

    data = {"prefetch_node_feats": ["feat"], "prefetch_labels": ["label"]}
    sampler = dg.MultiLayerNeighborSampler(fanouts(args.fan_out), **data)
    eval_sampler = dg.MultiLayerNeighborSampler(fanouts(args.eval_fan_out or args.fan_out), **data)
    model = wrap(dg.nn.GraphSAGE(in_feats, args.num_hidden, num_classes, args.num_layers, args.dropout), distributed,
                 device)
    opt = optimizer(model, args)
    loader = dg.DistNodeDataLoader(g, train_nid, sampler, device, batch_size=args.batch_size, shuffle=True)
    checkpoints = Checkpoints(args, model, opt)

    def accuracy(nids: torch.Tensor) -> float:
        correct, total = all_sum(list(evaluate(model, g, nids, eval_sampler, args.batch_size_eval, device)),
                                 distributed)
        return correct / max(total, 1)

    log = dg.metrics.MetricsLog(args.log_dir, rank) if args.log_dir else None
    for epoch in range(checkpoints.start_epoch(), args.num_epochs):
        begin, pulled = time.perf_counter(), dg.metrics.remote_rows()
        loss_sum = correct = seeds = 0
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, leave=False, mininterval=1)
        with joined(model, distributed):
            for _, _, blocks in bar:
                logits, labels = model(blocks, blocks[0].srcdata["feat"].float()), blocks[-1].dstdata["label"]
                loss = F.cross_entropy(logits, labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
                loss_sum += loss.item() * labels.numel()
                correct += int((logits.argmax(1) == labels).sum())
                seeds += labels.numel()
        seconds = time.perf_counter() - begin
        val = accuracy(val_nid)
        mean_loss = loss_sum / max(seeds, 1)  # this trainer's epoch mean: logged, and printed by trainer 0
        if log:
            log.log(epoch, loss=mean_loss, **{"accuracy/train": correct / max(seeds, 1),
                                              "accuracy/val": val}, seeds_per_s=seeds / seconds,
                    remote_rows=dg.metrics.remote_rows() - pulled, epoch_seconds=seconds)
            log.flush()
        best = checkpoints.extra.get("best")
        if best is None or val > best["val"]:  # the test accuracy reported is the one at the best validation epoch
            best = checkpoints.extra["best"] = {"epoch": epoch, "val": val, "test": accuracy(test_nid)}
        if rank == 0:
            print(f"epoch {epoch}: {len(loader)} steps in {seconds:.2f} s, loss {mean_loss:.3f}, "
                  f"val acc {val:.4f}", flush=True)
        checkpoints.end_epoch(epoch, epoch == args.num_epochs - 1)
    if log:
        log.close()
    best = checkpoints.extra.get("best") or {"epoch": -1, "val": 0.0, "test": accuracy(test_nid)}
    if rank == 0:
        print(f"best val acc {best['val']:.4f} at epoch {best['epoch']}; test acc {best['test']:.4f} "
              f"({test_nid.numel()} test nodes on trainer 0); model digest {digest(model)}", flush=True)
    if args.save_embeddings or args.save_predictions:
        save_results(args, model.module if distributed else model, g, {"val": val_nid, "test": test_nid},
                     distributed, rank, device)
    finish(distributed)


if __name__ == "__main__":
    main()

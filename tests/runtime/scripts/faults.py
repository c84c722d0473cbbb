"""Trainer behaviours for the fault tests: each mode connects, prints `ready`, then runs.

train    GraphSAGE-like steps forever: sampler processes, DDP, DistEmbedding pushes (chaos)
busy     compute forever without a word of output (a headless job)
work     read rows of every machine for SECONDS s without a word, then a barrier and `done`
stubborn ignore SIGTERM and sleep
shutdown rank 0 stops the servers, then touches rows of its own machine
split    node_split without torch.distributed; saves this trainer's share to OUT_DIR
ddp      init_process_group; prints where trainer 0's rendezvous store listens
"""

import os
import signal
import sys
import time

import numpy as np
import psutil
import torch
import torch.distributed as tdist

import distgraph as dg

torch.set_num_threads(1)
mode = sys.argv[1]
dg.initialize()
ctx = dg.distributed.get_context()
g = dg.DistGraph("g")
book = g.get_partition_book()


def ready() -> None:
    print(f"rank {ctx.rank} ready", flush=True)


if mode == "train":
    tdist.init_process_group("gloo")
    train = dg.node_split(g.ndata["train_mask"], book)
    model = torch.nn.parallel.DistributedDataParallel(dg.nn.GraphSAGE(16, 8, 4, 2, 0.0))
    emb = dg.DistEmbedding(g.num_nodes(), 4, "emb")
    sparse = dg.optim.SparseAdagrad([emb], lr=0.1)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = dg.DistNodeDataLoader(g, train, dg.MultiLayerNeighborSampler([5, 5]), batch_size=32, shuffle=True)
    announced = False
    while True:
        for inputs, outputs, blocks in loader:
            h = model(blocks, g.ndata["feat"][inputs])
            loss = h.pow(2).mean() + emb(outputs).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sparse.step()
            if not announced:
                ready()
                announced = True
elif mode == "busy":
    ready()
    x = torch.randn(256, 256)
    while True:
        x = torch.tanh(x @ x)
elif mode == "work":
    ready()
    feat, end = g.ndata["feat"], time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        feat[torch.randint(g.num_nodes(), (64,))]
        time.sleep(0.01)
    dg.barrier()
    print(f"rank {ctx.rank} done", flush=True)
elif mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready()
    time.sleep(300)
elif mode == "shutdown":
    feat = g.ndata["feat"]
    dg.barrier()  # every trainer is connected
    if ctx.rank == 0:
        dg.shutdown_servers()
        deadline = time.monotonic() + 60
        while ctx.client.local_store.namer.all_files() and time.monotonic() < deadline:
            time.sleep(0.1)  # the servers remove their shared memory as they exit
        try:
            feat[torch.arange(*book.node_range(0, "_N"))[:5]]
            print("read rows of a machine whose servers are gone", flush=True)
        except dg.DistGraphError as exc:
            print(f"{type(exc).__name__}: {exc}", flush=True)
    else:
        time.sleep(8)  # still running when the launcher reports the servers' exit
elif mode == "split":
    share = dg.node_split(g.ndata["train_mask"], book)
    np.save(os.path.join(sys.argv[2], f"share_{ctx.rank}.npy"), share.numpy())
    assert not tdist.is_initialized()
    dg.barrier()
elif mode == "ddp":
    tdist.init_process_group("gloo")
    if ctx.rank == 0:
        port = int(os.environ["MASTER_PORT"])
        listening = [c.laddr.ip for c in psutil.Process().net_connections("tcp")
                     if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
        print(f"rendezvous listens on {listening}", flush=True)
    t = torch.ones(1)
    tdist.all_reduce(t)
    print(f"all_reduce {int(t)}", flush=True)
    tdist.destroy_process_group()
else:
    raise SystemExit(f"unknown mode {mode}")

"""KVStore throughput: pull and push rows/s of 128-dim float32 rows, for 1k/10k/100k ids per
request, rows of this machine (shared memory) and of another machine (two machines on
loopback), beside limits measured in the same run: `torch.index_select` on an array of the
same size in one process (the issue's hardware limit, which the targets use), our
prefetching row gather in one process (`kernels.gather_rows`, a stricter bound: it beats
`index_select` here), and the loopback transport (a zmq server returning a ready buffer of
the same size: the ceiling of any pull over the wire).

Each trainer first times its first calls on fresh servers beside the calls that follow
(`first_*_ms` / `later_*_ms`, the median of 5): a server's first Adagrad and Adam pushes and
first pull through it (wire trainer), and the first read of 10k mapped rows (host trainer), so
a one-off cost (loading or compiling a kernel) shows.

The other machine's rows are measured twice, by two trainer processes of machine 0:
`remote_wire_*` with DISTGRAPH_HOST_SHM=0 (every row travels over loopback TCP, as it would
between hosts) and `remote_*` as launched (the two machines share this host, so the
trainer reads machine 1's rows in its shared memory; optimiser pushes still go to its server).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kvstore.py [--rows_per_machine 500000]

Prints `key: value` lines. Cleans up its servers and shared memory even on failure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import psutil  # noqa: E402
import torch  # noqa: E402
import zmq  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
DIM = 128
TARGETS = {"local_pull": 0.8, "remote_wire_pull": 0.4, "remote_pull": 0.4}  # of the index_select limit, 10k ids
PUSH_TARGET = 1e6  # rows/s with server-side Adagrad, at 10k ids
from common import loopback_ip_config, rate, report  # noqa: E402
from distgraph.cluster.hosts import free_port  # noqa: E402

def _echo_server(port: int, sizes: tuple[int, ...]) -> None:
    """Child process: answer each request with a ready buffer of the requested row count."""
    from distgraph.malloc import keep_freed_memory

    keep_freed_memory()  # as our servers and clients do
    torch.set_num_threads(1)
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.bind(f"tcp://127.0.0.1:{port}")
    buffers = {n: torch.randn(n, DIM) for n in sizes}
    while True:
        ident, msg = sock.recv_multipart()
        if msg == b"stop":
            break
        sock.send_multipart([ident, buffers[int(msg)].numpy()], copy=False)
    sock.close()


def transport_limit(sizes: tuple[int, ...], seconds: float) -> dict[int, float]:
    port = free_port("127.0.0.1")
    child = multiprocessing.get_context("spawn").Process(target=_echo_server, args=(port, sizes))
    child.start()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    out = {}
    try:
        for n in sizes:
            dest = torch.empty(n, DIM)

            def fetch(n=n, dest=dest):
                sock.send(str(n).encode())
                if not sock.poll(60_000):
                    raise RuntimeError("transport benchmark server did not answer")
                sock.recv_into(dest.numpy())

            out[n] = rate(fetch, n, seconds)
        sock.send(b"stop")
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
        sock.close()
    return out


def start_servers(work: Path, rows_per_machine: int, session: str) -> tuple[list[subprocess.Popen], dict[str, str]]:
    """Two machines on loopback, one server each, over a 2-part partition of `2 * rows` nodes."""
    from distgraph.data import generate_sbm
    from distgraph.partition import partition_graph

    g = generate_sbm(2 * rows_per_machine, 2 * rows_per_machine, feat_dim=1, seed=0)
    partition_graph(g, "bench", 2, work / "parts", part_method="random")
    ip = loopback_ip_config(work / "ip_config.txt", 2)
    env = {"DISTGRAPH_IP_CONFIG": str(ip), "DISTGRAPH_PART_CONFIG": str(work / "parts" / "bench.json"),
           "DISTGRAPH_SESSION": session, "DISTGRAPH_NUM_TRAINERS": "1", "DISTGRAPH_SECRET": secrets.token_hex(32)}
    procs = [subprocess.Popen([sys.executable, "-m", "distgraph.server"],
                              env={**os.environ, **env, "DISTGRAPH_ROLE": "server", "DISTGRAPH_MACHINE_ID": str(m)})
             for m in (0, 1)]
    return procs, env


def first_and_later(fn, times: int = 5) -> tuple[float, float]:
    """Milliseconds of the first call of `fn` and the median of the `times` calls after it."""
    def once() -> float:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3

    first = once()
    return first, statistics.median(once() for _ in range(times))


def first_calls(dist, client, rows: int, lo: int, hi: int, wire: bool) -> dict[str, float]:
    """First and later times (ms) of 10k-row calls on rows [lo, hi) of new `rows`-row tensors:
    through the server of those rows (`wire`: Adagrad and Adam pushes, pulls), or read from
    shared memory."""
    gen = torch.Generator().manual_seed(1)
    unique = (lo + torch.randperm(hi - lo, generator=gen)[:10_000]).sort().values
    grads = torch.randn(10_000, DIM, generator=gen) * 1e-3
    out = {}
    if wire:
        for kind, spec in (("adagrad", {"kind": "adagrad", "lr": 0.01, "eps": 1e-10}),
                           ("adam", {"kind": "adam", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8})):
            t = dist.DistTensor((rows, DIM), torch.float32, f"first_{kind}", part_policy="node~_N", persistent=True)
            out[f"push_{kind}"] = first_and_later(lambda: (t.push_rows(unique, grads, spec), client.flush()))
    t = dist.DistTensor((rows, DIM), torch.float32, "first_pull", part_policy="node~_N", persistent=True)
    out["pull" if wire else "local_pull"] = first_and_later(lambda: t[unique])
    return {f"{when}_{key}_10k_ms": v for key, pair in out.items() for when, v in zip(("first", "later"), pair)}


def kvstore_rates(rows_per_machine: int, seconds: float, wire: bool) -> dict[str, dict]:
    """Run as the trainer of machine 0 (the environment says so): first-call times (under
    "first"), then local and remote rates."""
    import distgraph.distributed as dist
    from distgraph.optim.sparse import coalesce

    dist.initialize()
    ctx = dist.get_context()
    client = ctx.client
    n = 2 * rows_per_machine
    first = first_calls(dist, client, n, *ctx.book.node_range(1 if wire else 0, "_N"), wire)
    t = dist.DistTensor((n, DIM), torch.float32, "bench", init_func=dist.Uniform(-1, 1), part_policy="node~_N",
                        persistent=True)
    remote = "remote_wire" if wire else "remote"
    ranges = {remote: ctx.book.node_range(1, "_N")} if wire else {
        "local": ctx.book.node_range(0, "_N"), remote: ctx.book.node_range(1, "_N")}
    gen = torch.Generator().manual_seed(0)
    adagrad = {"kind": "adagrad", "lr": 0.01, "eps": 1e-10}
    out: dict[str, dict[int, float]] = {}
    for where, (lo, hi) in ranges.items():
        for size in SIZES:
            ids = torch.randint(lo, hi, (size,), generator=gen)
            unique = (lo + torch.randperm(hi - lo, generator=gen)[:size]).sort().values
            grads = torch.randn(size, DIM, generator=gen) * 1e-3
            out.setdefault(f"{where}_pull", {})[size] = rate(lambda: t[ids], size, seconds)
            out.setdefault(f"{where}_push_assign", {})[size] = rate(lambda: t.push_rows(unique, grads), size, seconds)
            # gradient pushes to rows read through a server are not awaited: time them applied
            out.setdefault(f"{where}_push_adagrad", {})[size] = rate(
                lambda: (t.push_rows(unique, grads, adagrad), client.flush()), size, seconds)
            out.setdefault(f"{where}_sparse_adagrad_step", {})[size] = rate(
                lambda: (t.push_rows(*coalesce(ids, grads), adagrad), client.flush()), size, seconds)
    if not wire:
        dist.shutdown_servers()  # the last trainer
    dist.exit_client()
    return {**out, "first": first}


def run_trainer(env: dict[str, str], args: argparse.Namespace, wire: bool) -> dict[str, dict[int, float]]:
    """`kvstore_rates` in a fresh trainer process of machine 0."""
    env = {**os.environ, **env, "DISTGRAPH_ROLE": "trainer", "DISTGRAPH_MACHINE_ID": "0", "RANK": "0",
           "DISTGRAPH_HOST_SHM": "0" if wire else "1"}
    cmd = [sys.executable, __file__, "--trainer", "wire" if wire else "host", "--rows_per_machine",
           str(args.rows_per_machine), "--seconds", str(args.seconds)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"trainer ({'wire' if wire else 'host'}) failed:\n{proc.stderr}")
    results = json.loads(proc.stdout.splitlines()[-1])
    for key, ms in results.pop("first").items():
        report(key, ms)
    return {k: {int(n): v for n, v in by.items()} for k, by in results.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows_per_machine", type=int, default=500_000)
    parser.add_argument("--seconds", type=float, default=1.5, help="measuring time per figure")
    parser.add_argument("--trainer", choices=("wire", "host"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.trainer:
        print(json.dumps(kvstore_rates(args.rows_per_machine, args.seconds, args.trainer == "wire")))
        return 0
    from distgraph.malloc import keep_freed_memory

    keep_freed_memory()  # the limit and the transport get what our own processes get
    report("date", datetime.date.today().isoformat())
    report("machine", f"{platform.machine()} {psutil.cpu_count()} cores "
                      f"{psutil.virtual_memory().total / 2**30:.0f} GiB, torch {torch.__version__}")
    report("rows_per_machine", args.rows_per_machine)
    report("dim", DIM)

    # The limit: the same gather on a local array, returning a new tensor as `t[ids]` does,
    # and into a reused buffer (no page faults); ratios use the faster of the two.
    from distgraph.kvstore.kernels import gather_rows

    array = torch.randn(args.rows_per_machine, DIM)
    limit, prefetching = {}, {}
    for size in SIZES:
        ids = torch.randint(0, args.rows_per_machine, (size,))
        dest = torch.empty(size, DIM)
        fresh = rate(lambda: torch.index_select(array, 0, ids), size, args.seconds)
        reused = rate(lambda: torch.index_select(array, 0, ids, out=dest), size, args.seconds)
        limit[size] = max(fresh, reused)
        prefetching[size] = rate(lambda: gather_rows(array, ids, dest), size, args.seconds)
        report(f"limit_index_select_{size // 1000}k_rows_per_s", fresh)
        report(f"limit_index_select_into_buffer_{size // 1000}k_rows_per_s", reused)
        report(f"limit_prefetch_gather_{size // 1000}k_rows_per_s", prefetching[size])
    del array
    transport = transport_limit(SIZES, args.seconds)
    for size in SIZES:
        report(f"limit_loopback_transport_{size // 1000}k_rows_per_s", transport[size])

    from distgraph.cluster.shm_files import PREFIX, SHM_DIR

    session = f"bench{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        procs, env = start_servers(Path(tmp), args.rows_per_machine, session)
        try:
            results = {**run_trainer(env, args, wire=True), **run_trainer(env, args, wire=False)}
        finally:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
                p.wait(30)
            for f in SHM_DIR.glob(f"{PREFIX}.{session}.*"):
                f.unlink()
    for key, by_size in results.items():
        for size, value in by_size.items():
            report(f"{key}_{size // 1000}k_rows_per_s", value)
    ten = 10_000
    for key, target in TARGETS.items():
        ratio = results[key][ten] / limit[ten]
        report(f"{key}_10k_ratio_to_limit", ratio)
        report(f"{key}_10k_ratio_to_prefetch_gather", results[key][ten] / prefetching[ten])
        report(f"target_{key}_10k_ge_{target}x", "met" if ratio >= target else "missed")
    report("remote_wire_pull_10k_ratio_to_transport", results["remote_wire_pull"][ten] / transport[ten])
    for where in ("local", "remote_wire", "remote"):
        value = results[f"{where}_push_adagrad"][ten]
        report(f"target_{where}_push_adagrad_10k_ge_1M_rows_per_s", "met" if value >= PUSH_TARGET else "missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

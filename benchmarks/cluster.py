"""Across hosts: every figure between the test bed's hosts (network namespaces joined by a
bridge, `tests/cluster/testbed.py`: traffic crosses veth pairs and the bridge, not loopback,
though all hosts share this machine's cores), each against its limit in the same run. Needs root.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/cluster.py [--measure pull sampling train security]

- `pull`: a `DistTensor` pull of 10,000 random rows (128 float32) owned by machine 1 (host 1)
  by the trainer of machine 0 (host 0), a push (assignment) of 10,000 distinct rows, and the
  same push with server-side Adagrad (awaited), each against its limit: a bare ZeroMQ client
  on host 0 moving the same bytes to and from a bare server on host 1 with the job's
  authentication (the ids out and a ready 5 MB buffer back; the ids and rows out, stored by
  an index_copy_ or stepped by the same Adagrad row kernel, and an acknowledgement back).
  The pull is also measured against the bare server gathering those rows of a table of the
  same size with our row kernel before sending them (`pull_gathered`): the essential work of
  a pull, as the push limits store or step their rows.
  The trainer alternates limit and ours, `--rounds` times; medians.
- `sampling`: 2 machines on 2 hosts, each trainer's [10, 25] loader (sampling only), against
  the same seed batches sampled in one process on the same partition (the limit,
  `train_graphsage.sampling_limit`), alternating.
- `train`: GraphSAGE ([10, 25], batch 1000, 64 hidden) on 2 hosts: the step against its
  slowest stage measured alone on the same batches (`train_graphsage.py --stages`); and the
  warm epoch of examples/graphsage on 3 hosts against 3 machines on loopback (the limit:
  there, the other machines' rows are read in shared memory).
- `security`: the bare transport with no security, with our authentication (PLAIN + ZAP)
  and with CURVE (`--encrypt`).
Beside every figure, the machine's busy cores over the same stretch (/proc/stat: every process
and the kernel), as core-seconds per row, seed or epoch of ours against the limit: where every
core is busy, the rate ratio cannot pass the inverse of that one.
Prints `key: value` lines and the load average before and after each part; the test bed is
removed at the end even on failure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

DIM, IDS = 128, 10_000
PY = sys.executable
SECRET = b"0" * 64  # the bare transport's; the jobs make their own
from common import cores_busy, loopback_ip_config, machine_cpu, rate, report, report_load, report_ratio  # noqa: E402


def _credentials(mechanism: str):
    from distgraph.rpc.auth import Credentials

    return None if mechanism == "null" else Credentials(SECRET, mechanism == "curve")


def echo(port: int, mechanism: str, host: str, table_rows: int) -> None:
    """On host 1: a bare server. `pull` gets a ready 10k-row buffer back, `pull_gathered` the
    rows `ids` of a table gathered by our row kernel; `push` stores the rows (an index_copy_)
    and `push_adagrad` applies the Adagrad row kernel our servers use, each answered with an
    acknowledgement."""
    import torch
    import zmq

    from distgraph.kvstore import kernels
    from distgraph.malloc import keep_freed_memory
    from distgraph.rpc.auth import Authenticator
    from distgraph.rpc.transport import buffers

    keep_freed_memory()  # as our servers and clients do
    ctx = zmq.Context.instance()
    creds = _credentials(mechanism)
    auth = Authenticator(ctx, creds, "echo") if creds else None
    sock = ctx.socket(zmq.ROUTER)
    buffers(sock)  # the transport's socket options: the limit differs from ours only in the work
    if creds:
        creds.server(sock, "echo")
    sock.bind(f"tcp://{host}:{port}")
    rows = torch.randn(IDS, DIM).numpy()
    # where pushed rows land and gathered ones come from (written: untouched pages would all read one zero page)
    table, state = torch.randn(table_rows, DIM), torch.zeros(table_rows, DIM)
    while True:
        ident, op, *arrays = sock.recv_multipart(copy=False)
        if op.bytes == b"stop":
            break
        if op.bytes == b"pull_gathered":
            ids = torch.frombuffer(arrays[0].buffer, dtype=torch.int64)
            sock.send_multipart([ident, kernels.gather_rows(table, ids).numpy()], copy=False)
            continue
        if op.bytes != b"pull":  # the rows arrive where they belong: stored, or one Adagrad step
            ids = torch.frombuffer(arrays[0].buffer, dtype=torch.int64)
            grads = torch.frombuffer(arrays[1].buffer, dtype=torch.float32).view(-1, DIM)
            if op.bytes == b"push":
                table.index_copy_(0, ids, grads)
            else:
                kernels.adagrad(table, state, ids, ids, grads, 0.01, 1e-10)
        sock.send_multipart([ident, rows if op.bytes == b"pull" else b"ok"], copy=False)
    sock.close()
    if auth:
        auth.close()


class BareClient:
    """A bare ZeroMQ client of `echo` (the limit of a pull or a push of the same bytes)."""

    def __init__(self, endpoint: str, mechanism: str):
        import torch
        import zmq

        from distgraph.rpc.transport import buffers

        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        buffers(self.sock)
        creds = _credentials(mechanism)
        if creds:
            creds.client(self.sock, "echo")
        self.sock.linger = 0
        self.sock.connect(endpoint)
        self.dest = torch.empty(IDS, DIM)

    def _wait(self) -> None:
        if not self.sock.poll(60_000):
            raise RuntimeError("the bare server did not answer")

    def pull(self, ids, op: bytes = b"pull") -> None:
        """The ids out, 10k rows back into a buffer (`pull_gathered`: rows `ids` of the server's table)."""
        self.sock.send_multipart([op, ids.numpy()], copy=False)
        self._wait()
        self.sock.recv_into(self.dest.numpy())

    def push(self, ids, rows, op: bytes = b"push") -> None:
        """The ids and rows out (stored, or `push_adagrad`: their Adagrad step), an acknowledgement back."""
        self.sock.send_multipart([op, ids.numpy(), rows.numpy()], copy=False)
        self._wait()
        self.sock.recv()

    def close(self) -> None:
        self.sock.send(b"stop")
        self.sock.close()


def fetch(port: int, mechanism: str, host: str, seconds: float) -> None:
    """On host 0: rows/s pulled from the bare server of host 1."""
    import torch

    client = BareClient(f"tcp://{host}:{port}", mechanism)
    ids = torch.randint(0, 1 << 20, (IDS,))
    print(json.dumps({"rate": rate(lambda: client.pull(ids), IDS, seconds)}))
    client.close()


def pull_trainer(args: argparse.Namespace) -> None:
    """The launched trainer of machine 0: pulls and pushes of machine 1's rows, alternating
    with the bare transport of the same bytes (`--echo` names its server)."""
    import torch

    import distgraph.distributed as dist

    torch.set_num_threads(1)
    dist.initialize()
    ctx = dist.get_context()
    if ctx.rank == 0:
        t = dist.DistTensor((ctx.book.num_nodes(), DIM), torch.float32, "bench", init_func=dist.Uniform(-1, 1),
                            part_policy="node~_N", persistent=True)
        lo, hi = ctx.book.node_range(1, "_N")
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(lo, hi, (IDS,), generator=gen)
        unique = (lo + torch.randperm(hi - lo, generator=gen)[:IDS]).sort().values
        grads = torch.randn(IDS, DIM, generator=gen) * 1e-3
        adagrad = {"kind": "adagrad", "lr": 0.01, "eps": 1e-10}
        bare = BareClient(args.echo, "plain")
        figures = {
            "pull": (lambda: t[ids], lambda: bare.pull(ids)),
            "pull_gathered": (lambda: t[ids], lambda: bare.pull(ids - lo, b"pull_gathered")),
            "push": (lambda: t.push_rows(unique, grads), lambda: bare.push(unique - lo, grads)),
            "push_adagrad": (lambda: (t.push_rows(unique, grads, adagrad), ctx.client.flush()),
                             lambda: bare.push(unique - lo, grads, b"push_adagrad")),
        }
        out = {k: {"ours": [], "limit": [], "ours_cores": [], "limit_cores": []} for k in figures}
        for r in range(args.rounds):
            for key, (ours, limit) in figures.items():
                pair = [("ours", ours), ("limit", limit)]
                for side, fn in pair[r % 2:] + pair[:r % 2]:  # which goes first alternates
                    meter = machine_cpu()
                    out[key][side].append(rate(fn, IDS, args.seconds))
                    out[key][f"{side}_cores"].append(cores_busy(meter, machine_cpu()).cores)
        bare.close()
        print(json.dumps(out), flush=True)
    dist.barrier()


def _json_line(output: str) -> dict:
    return json.loads(next(line.split("] ", 1)[-1] for line in reversed(output.splitlines())
                           if line.split("] ", 1)[-1].startswith("{")))


class Bench:
    """The test bed with the benchmark's graph partitioned into 2 and 3 parts, copied to the hosts."""

    def __init__(self, bed, tmp: Path, rows: int):
        from testbed import WORKSPACE

        from distgraph.data import generate_sbm
        from distgraph.partition import partition_graph

        self.bed, self.tmp, self.workspace, self.rows = bed, tmp, WORKSPACE, rows
        self.src = tmp / "src"
        g = generate_sbm(rows, 10 * rows, num_classes=8, feat_dim=DIM, seed=0)
        for parts in (2, 3):
            partition_graph(g, "g", parts, self.src / f"parts{parts}", part_method="metis", balance_ntypes=None)
            hosts = bed.hosts[:parts]
            (self.src / f"ip_config{parts}.txt").write_text("".join(f"{h.ip} 30050\n" for h in hosts))
            for folder in (HERE, ROOT / "examples" / "graphsage"):
                self.cli("copy", "--ip_config", f"ip_config{parts}.txt", "--workspace", WORKSPACE, "--rel_data_path",
                         f"data{parts}", "--part_config", f"parts{parts}/g.json", "--script_folder", str(folder),
                         "--ssh_config", str(bed.ssh_config))

    def cli(self, *args: str) -> None:
        subprocess.run([PY, "-m", "distgraph.cli.main", *args], cwd=self.src, check=True, stdout=subprocess.DEVNULL)

    def launch(self, command: str, parts: int, encrypt: bool = False, env: str = "") -> str:
        """Run `command` as the trainers of a job on `parts` hosts, launched from host 0."""
        ws = self.workspace
        line = (f"cd {ws} && {env} OMP_NUM_THREADS=1 {PY} -m distgraph.cli.main launch --workspace {ws} "
                f"--num_trainers 1 --num_samplers 0 --num_omp_threads 1 --part_config data{parts}/g.json "
                f"--ip_config ip_config{parts}.txt --ssh_config {self.bed.ssh_config} "
                f"{'--encrypt ' if encrypt else ''}\"{command}\"")
        return run_launch(self.bed.ssh_argv(self.bed.hosts[0], line))

    def serve_echo(self, port: int, mechanism: str):
        h1 = self.bed.hosts[1]
        me = f"{PY} {self.workspace}/benchmarks/cluster.py"
        server = subprocess.Popen(self.bed.ssh_argv(h1, f"{me} --role echo --port {port} --mechanism {mechanism} "
                                                        f"--host {h1.ip} --rows {self.rows}"), stdin=subprocess.DEVNULL)
        time.sleep(1.0)
        return server


def run_launch(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    if done.returncode:
        raise SystemExit(f"launch failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def measure_pull(bench: Bench, args: argparse.Namespace) -> None:
    """#1: pull and push between hosts against the bare transport of the same bytes."""
    port = 31100
    server = bench.serve_echo(port, "plain")
    me = f"{PY} {bench.workspace}/benchmarks/cluster.py"
    out = _json_line(bench.launch(f"{me} --role pull_trainer --echo tcp://{bench.bed.hosts[1].ip}:{port} "
                                  f"--rounds {args.rounds} --seconds {args.seconds}", 2))
    server.wait(60)
    for key, got in out.items():
        report_ratio(f"hosts_{key}_10k_rows_per_s", got["ours"], got["limit"], 0.8)
        # the cores both ends (and the kernel between them) kept busy, per row moved: with every
        # core busy, the rate ratio cannot pass the inverse of this one
        report(f"hosts_{key}_cores_busy", f"ours {' '.join(f'{c:.2f}' for c in got['ours_cores'])}, limit "
                                          f"{' '.join(f'{c:.2f}' for c in got['limit_cores'])} of {os.cpu_count()}")
        per_row = {side: [c / r for c, r in zip(got[f"{side}_cores"], got[side])] for side in ("ours", "limit")}
        report_ratio(f"hosts_{key}_machine_core_seconds_per_row", per_row["ours"], per_row["limit"])


def measure_security(bench: Bench, args: argparse.Namespace) -> None:
    """The bare transport with no security, our authentication, and CURVE, in turn."""
    h0, h1 = bench.bed.hosts[0], bench.bed.hosts[1]
    me = f"{PY} {bench.workspace}/benchmarks/cluster.py"
    mechanisms = ["null", "plain", "curve"]
    rates: dict[str, list[float]] = {m: [] for m in mechanisms}
    port = 31000
    for r in range(args.rounds):  # the order rotates every round
        for mechanism in mechanisms[r % 3:] + mechanisms[:r % 3]:
            port += 1
            server = bench.serve_echo(port, mechanism)
            out = bench.bed.ssh(h0, f"{me} --role fetch --port {port} --mechanism {mechanism} --host {h1.ip} "
                                    f"--seconds {args.seconds}", timeout=300).stdout
            server.wait(60)
            rates[mechanism].append(_json_line(out)["rate"])
    for mechanism, got in rates.items():
        report(f"transport_{mechanism}_rows_per_s", statistics.median(got))
    ratios = [p / n for p, n in zip(rates["plain"], rates["null"])]
    report("authenticated_over_bare_transport", statistics.median(ratios))
    report("authenticated_over_bare_transport_rounds", " ".join(f"{x:.3f}" for x in ratios))
    report("curve_over_bare_transport", statistics.median(c / n for c, n in zip(rates["curve"], rates["null"])))


def measure_sampling(bench: Bench, args: argparse.Namespace) -> None:
    """#2: each trainer's loader on 2 hosts against the same batches sampled in one process on the
    same partition, one such process per trainer at once (`train_graphsage.sampling_limits`)."""
    from train_graphsage import SamplingRounds, results, sampling_limits

    ws = bench.workspace
    rounds_of = SamplingRounds("hosts_sampling")
    for r in range(args.rounds):
        rows = results(bench.launch(f"{PY} {ws}/benchmarks/train_graphsage.py --worker --graph_name g --sample_only "
                                    f"--steps {args.steps} --save_seeds seeds.npz", 2))
        ranks = sorted(int(x["rank"]) for x in rows)
        files = [bench.bed.hosts[k].workspace / f"rank{k}_seeds.npz" for k in ranks]
        rounds_of.add(f"hosts_sampling_round{r}", rows, dict(zip(ranks, sampling_limits(bench.src / "parts2" / "g.json",
                                                                                        files))))
    rounds_of.finish()


def measure_train(bench: Bench, args: argparse.Namespace) -> None:
    """#3: the GraphSAGE step on 2 hosts against its slowest stage; 3-host epoch against loopback."""
    from train_graphsage import report_stages, results

    out = bench.launch(f"{PY} {bench.workspace}/benchmarks/train_graphsage.py --worker --graph_name g --stages "
                       f"--steps {args.steps} --stage_rounds {args.rounds}", 2)
    report_ratio("hosts_2_step_seconds_over_slowest_stage", *report_stages(out, "hosts_2"), 1.25, at_most=True)

    train = (f"{PY} graphsage/train_dist.py --graph_name g --num_epochs {args.epochs} --batch_size 1000 "
             f"--fan_out 10,25 --num_hidden 64 --lr 0.01")
    # the same model and loader, timing its last epoch with the machine's core-seconds meanwhile
    bare = "--worker --graph_name g --epochs 2"

    def epoch_time(output: str) -> float:
        times = [float(t) for t in re.findall(r"epoch \d+: \d+ steps in ([\d.]+) s", output)]
        return statistics.median(times[1:])

    def epoch_cpu(output: str) -> float:
        return max(r["busy"] for r in results(output))

    loop = bench.tmp / "loopback"  # the same job, 3 machines on this machine's loopback
    loop.mkdir(exist_ok=True)
    for name, target in (("data3", bench.src / "parts3"), ("graphsage", ROOT / "examples" / "graphsage")):
        if not (loop / name).exists():
            (loop / name).symlink_to(target)
    loopback_ip_config(loop / "ip_config3.txt", 3)

    def on_loopback(command: str) -> str:
        return run_launch(["sh", "-c", (
            f"cd {loop} && OMP_NUM_THREADS=1 {PY} -m distgraph.cli.main launch --workspace {loop} "
            f"--num_trainers 1 --num_samplers 0 --num_omp_threads 1 --part_config data3/g.json "
            f"--ip_config ip_config3.txt \"{command}\"")])

    got = {k: [] for k in ("hosts", "loopback", "hosts_cpu", "loopback_cpu")}
    for r in range(args.rounds):
        runs = [("hosts", lambda: epoch_time(bench.launch(train, 3))),
                ("loopback", lambda: epoch_time(on_loopback(train))),
                ("hosts_cpu", lambda: epoch_cpu(bench.launch(f"{PY} {bench.workspace}/benchmarks/train_graphsage.py "
                                                             f"{bare}", 3))),
                ("loopback_cpu", lambda: epoch_cpu(on_loopback(f"{PY} {HERE}/train_graphsage.py {bare}")))]
        for kind, run in runs[r % 2:] + runs[:r % 2]:
            got[kind].append(run())
    report_ratio("graphsage_3_machines_epoch_seconds_hosts_over_loopback", got["hosts"], got["loopback"], 1.1,
                 at_most=True)
    # with every core shared by the three hosts, the epoch cannot come closer to loopback than its CPU work does
    report_ratio("graphsage_3_machines_epoch_machine_core_seconds_hosts_over_loopback", got["hosts_cpu"],
                 got["loopback_cpu"])


MEASURES = {"pull": measure_pull, "sampling": measure_sampling, "train": measure_train, "security": measure_security}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", nargs="+", default=list(MEASURES), choices=list(MEASURES))
    ap.add_argument("--rows", type=int, default=400_000, help="nodes of the graph (rows of its 128-dim features)")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring time per figure")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=40, help="batches per trainer for the sampling and step figures")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and the limit")
    for hidden in ("--role", "--port", "--mechanism", "--host", "--echo"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "echo":
        echo(int(args.port), args.mechanism, args.host, args.rows)
        return 0
    if args.role == "fetch":
        fetch(int(args.port), args.mechanism, args.host, args.seconds)
        return 0
    if args.role == "pull_trainer":
        pull_trainer(args)
        return 0

    from testbed import TestBed, available

    why = available()
    if why is not None:
        raise SystemExit(why)
    report("date", datetime.datetime.now().isoformat(timespec="seconds"))
    report("machine", f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    report("command", " ".join(sys.argv))
    with tempfile.TemporaryDirectory() as tmp, TestBed(3, Path(tmp) / "bed") as bed:
        bench = Bench(bed, Path(tmp), args.rows)
        for name in args.measure:
            report_load(f"before_{name}")
            MEASURES[name](bench, args)
            report_load(f"after_{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

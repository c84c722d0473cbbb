"""Across hosts: remote pull between two test hosts (network namespaces joined by a bridge,
`tests/cluster/testbed.py`), with the job's authentication and with encryption, against the
local gather limit and the bare transport; and GraphSAGE epoch time on 3 hosts against 3
machines on loopback, on the same partition, in the same run. Needs root.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/cluster.py [--rows 400000] [--seconds 2]

- `transport_{null,plain,curve}_rows_per_s`: a bare ZeroMQ client on host 0 fetching
  10,000 x 128 float32 rows (5 MB) per request from an echo server on host 1, with no
  security, with our authentication (PLAIN handshake + ZAP, as every job), and with CURVE.
  The ratio plain / null is the cost of authentication on the wire.
- `kvstore_remote_pull_rows_per_s` (authenticated) and `..._encrypted`: `DistTensor` pulls of
  10,000 random rows owned by machine 1 (host 1), by the trainer of machine 0 (host 0).
- `local_gather_limit_rows_per_s`: `index_select` of the same rows in one process.
- `graphsage_epoch_s_{hosts,loopback}`: median warm-epoch time of examples/graphsage on 3
  machines, on 3 test hosts and on loopback.
Prints `key: value` lines; the test bed is removed at the end even on failure.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

DIM, IDS = 128, 10_000
PY = sys.executable
from common import rate, report  # noqa: E402

def _credentials(mechanism: str):
    from distgraph.rpc.auth import Credentials

    return None if mechanism == "null" else Credentials(b"0" * 64, mechanism == "curve")


def echo(port: int, mechanism: str, host: str) -> None:
    """On host 1: answer every request with a ready 10k-row buffer."""
    import torch
    import zmq

    from distgraph.rpc.auth import Authenticator

    ctx = zmq.Context.instance()
    creds = _credentials(mechanism)
    auth = Authenticator(ctx, creds, "echo") if creds else None
    sock = ctx.socket(zmq.ROUTER)
    if creds:
        creds.server(sock)
    sock.bind(f"tcp://{host}:{port}")
    rows = torch.randn(IDS, DIM).numpy()
    while True:
        ident, msg = sock.recv_multipart()
        if msg == b"stop":
            break
        sock.send_multipart([ident, rows], copy=False)
    sock.close()
    if auth:
        auth.close()


def fetch(port: int, mechanism: str, host: str, seconds: float) -> None:
    """On host 0: rows/s fetched from the echo server of host 1."""
    import torch
    import zmq

    sock = zmq.Context.instance().socket(zmq.DEALER)
    creds = _credentials(mechanism)
    if creds:
        creds.client(sock)
    sock.linger = 0
    sock.connect(f"tcp://{host}:{port}")
    dest = torch.empty(IDS, DIM)

    def once():
        sock.send(b"go")
        if not sock.poll(60_000):
            raise RuntimeError("the echo server did not answer")
        sock.recv_into(dest.numpy())

    print(json.dumps({"rate": rate(once, IDS, seconds)}))
    sock.send(b"stop")
    sock.close()


def trainer(seconds: float) -> None:
    """The launched trainer of machine 0: pulls of rows of machine 1, and the local gather limit."""
    import torch

    import distgraph.distributed as dist

    torch.set_num_threads(1)
    dist.initialize()
    ctx = dist.get_context()
    if ctx.rank == 0:
        feat = dist.DistTensor((ctx.book.num_nodes(), DIM), torch.float32, "node~_N~feat")
        lo, hi = ctx.book.node_range(1, "_N")
        ids = torch.randint(lo, hi, (IDS,), generator=torch.Generator().manual_seed(0))
        local = torch.randn(hi - lo, DIM)
        print(json.dumps({"remote": rate(lambda: feat[ids], IDS, seconds),
                          "limit": rate(lambda: local.index_select(0, ids - lo), IDS, seconds)}), flush=True)
    dist.barrier()


def _json_line(output: str) -> dict:
    return json.loads(next(line.split("] ", 1)[-1] for line in reversed(output.splitlines())
                           if line.split("] ", 1)[-1].startswith("{")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=400_000, help="nodes of the graph (rows of its 128-dim features)")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring time per figure")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the three transports, in turn")
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--mechanism", help=argparse.SUPPRESS)
    ap.add_argument("--host", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "echo":
        echo(args.port, args.mechanism, args.host)
        return 0
    if args.role == "fetch":
        fetch(args.port, args.mechanism, args.host, args.seconds)
        return 0
    if args.role == "trainer":
        trainer(args.seconds)
        return 0

    from testbed import WORKSPACE, TestBed, available

    from distgraph.data import generate_sbm
    from distgraph.partition import partition_graph

    why = available()
    if why is not None:
        raise SystemExit(why)
    report("date", datetime.datetime.now().isoformat(timespec="seconds"))
    report("machine", f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    report("command", " ".join(sys.argv))
    with tempfile.TemporaryDirectory() as tmp, TestBed(3, Path(tmp) / "bed") as bed:
        src = Path(tmp) / "src"
        g = generate_sbm(args.rows, 10 * args.rows, num_classes=8, feat_dim=DIM, seed=0)
        partition_graph(g, "g", 3, src / "parts", part_method="metis", balance_ntypes=None)
        (src / "ip_config.txt").write_text("".join(f"{h.ip} 30050\n" for h in bed.hosts))
        subprocess.run([PY, "-m", "distgraph.cli.main", "copy", "--ip_config", "ip_config.txt", "--workspace",
                        WORKSPACE, "--rel_data_path", "data", "--part_config", "parts/g.json", "--script_folder",
                        str(ROOT / "benchmarks"), "--ssh_config", str(bed.ssh_config)], cwd=src, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([PY, "-m", "distgraph.cli.main", "copy", "--ip_config", "ip_config.txt", "--workspace",
                        WORKSPACE, "--rel_data_path", "data", "--part_config", "parts/g.json", "--script_folder",
                        str(ROOT / "examples" / "graphsage"), "--ssh_config", str(bed.ssh_config)], cwd=src,
                       check=True, stdout=subprocess.DEVNULL)
        h0, h1 = bed.hosts[0], bed.hosts[1]
        me = f"{PY} {WORKSPACE}/benchmarks/cluster.py"
        mechanisms = ["null", "plain", "curve"]
        rates: dict[str, list[float]] = {m: [] for m in mechanisms}
        port = 31000
        for r in range(args.rounds):  # the order rotates every round
            for mechanism in mechanisms[r % 3:] + mechanisms[:r % 3]:
                port += 1
                server = subprocess.Popen(bed.ssh_argv(h1, f"{me} --role echo --port {port} --mechanism {mechanism} "
                                                           f"--host {h1.ip}"), stdin=subprocess.DEVNULL)
                time.sleep(1.0)
                out = bed.ssh(h0, f"{me} --role fetch --port {port} --mechanism {mechanism} --host {h1.ip} "
                                  f"--seconds {args.seconds}", timeout=300).stdout
                server.wait(60)
                rates[mechanism].append(_json_line(out)["rate"])
        for mechanism, got in rates.items():
            report(f"transport_{mechanism}_rows_per_s", statistics.median(got))
        ratios = [p / n for p, n in zip(rates["plain"], rates["null"])]
        report("authenticated_over_bare_transport", statistics.median(ratios))
        report("authenticated_over_bare_transport_rounds", " ".join(f"{x:.3f}" for x in ratios))
        report("curve_over_bare_transport", statistics.median(c / n for c, n in zip(rates["curve"], rates["null"])))

        def launch(command: str, encrypt: bool = False, where=h0, workspace=WORKSPACE, ip="ip_config.txt") -> str:
            line = (f"cd {workspace} && OMP_NUM_THREADS=1 {PY} -m distgraph.cli.main launch --workspace {workspace} "
                    f"--num_trainers 1 --part_config data/g.json --ip_config {ip} --ssh_config {bed.ssh_config} "
                    f"{'--encrypt ' if encrypt else ''}\"{command}\"")
            argv = bed.ssh_argv(where, line) if where is not None else ["sh", "-c", line]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
            if done.returncode:
                raise SystemExit(f"launch failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            return done.stdout

        for encrypt in (False, True):
            got = _json_line(launch(f"{me} --role trainer --seconds {args.seconds}", encrypt))
            kind = "_encrypted" if encrypt else ""
            report(f"kvstore_remote_pull{kind}_rows_per_s", got["remote"])
            report(f"local_gather_limit{kind}_run_rows_per_s", got["limit"])
            report(f"kvstore_remote_pull{kind}_over_local_gather_limit", got["remote"] / got["limit"])

        train = (f"{PY} graphsage/train_dist.py --graph_name g --num_epochs {args.epochs} --batch_size 1000 "
                 f"--fan_out 10,25 --num_hidden 64 --lr 0.01")

        def epoch_time(output: str) -> float:
            times = [float(t) for t in re.findall(r"epoch \d+: \d+ steps in ([\d.]+) s", output)]
            return statistics.median(times[1:])

        loop = Path(tmp) / "loopback"  # the same job, 3 machines on this machine's loopback
        loop.mkdir()
        (loop / "data").symlink_to(src / "parts")
        (loop / "graphsage").symlink_to(ROOT / "examples" / "graphsage")
        (loop / "ip_config.txt").write_text("127.0.0.1 30150\n127.0.0.1 30160\n127.0.0.1 30170\n")
        hosts_s = epoch_time(launch(train))
        loopback_s = epoch_time(launch(train, where=None, workspace=str(loop)))
        report("graphsage_epoch_s_hosts", hosts_s)
        report("graphsage_epoch_s_loopback", loopback_s)
        report("graphsage_hosts_over_loopback", hosts_s / loopback_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A server's memory under pulls: its private (anonymous) memory grows by the replies it has
in flight, which its heap keeps for reuse (`malloc.keep_freed_memory`), and no further however
many pulls follow; the table's rows are shared memory, counted once for the host."""

import subprocess
import sys

import pytest

from .conftest import SCRIPTS, Cluster, child_env

CLIENTS, ROWS, PULLS = 2, 20000, 150
REPLY_BYTES = ROWS * 64 * 4  # 5 MB of float32 rows per reply


def _anon_mb(pid: int) -> float:
    """Private resident memory of `pid` (RssAnon), in MB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon line")


def _wait_for(procs, text: str) -> None:
    for p in procs:
        line = p.stdout.readline()
        assert text in line, f"a puller said {line!r} (exit code {p.poll()})"


def test_private_memory_is_bounded_by_the_replies_in_flight(parts, tmp_path):
    cluster = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1], num_trainers=CLIENTS, timeout=60.0)
    procs = []
    try:
        server = cluster.procs[(1, 0)].pid
        for rank in range(CLIENTS):
            env = child_env(**cluster.env("trainer", 0), RANK=str(rank), DISTGRAPH_HOST_SHM="0")
            procs.append(subprocess.Popen([sys.executable, str(SCRIPTS / "puller.py"), str(ROWS), str(PULLS)],
                                          env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        anon = []
        for _ in range(3):  # after the table is made and pulled from once, after PULLS more, after PULLS more
            _wait_for(procs, "pulled")
            anon.append(_anon_mb(server))
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
        for p in procs:
            assert p.wait(120) == 0
        print("server RssAnon MB:", anon)
        warm, after_first, after_second = anon
        in_flight = CLIENTS * REPLY_BYTES / 2**20
        # the first pulls grow the heap by what is in flight at once (a gathered reply per client,
        # received requests, ZeroMQ's buffers): bounded by a few replies per client, not by the pulls
        assert after_first - warm <= 16 + 4 * in_flight, anon
        # as many pulls again add nothing per pull or per connection: at most a new high-water
        # mark of replies in flight at once (under load a client can have two; a per-pull leak of
        # even a tenth of a reply would add 146 MB here)
        assert after_second - after_first <= 2 * in_flight, anon
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        cluster.stop()

"""A knowledge graph whose entity table is larger than any one host's memory trains across 3
test hosts (`kge dist-train` over ssh, each host in a memory cgroup smaller than the whole
table: each machine's servers hold only their partition's rows), and ranks as one host
training the same graph with 3 processes does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from leaks import new_session
from memcap import MemoryCap, why_not

from testbed import WORKSPACE, partition_and_copy_kg

pytestmark = [pytest.mark.multiprocess, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]

PY = sys.executable
PAIRS = 1000  # planted pairs: 2 x PAIRS entities that the triples name
ENTITIES = 300_000  # entities.dict: the rest are in the table and the candidates, in no triple
DIM = 1000
TABLE = ENTITIES * DIM * 4  # 1.2 GB of float32 rows
CAP = 1 << 30  # each host's memory: smaller than the table, larger than its third plus its processes
TRAIN = ("--model_name TransE_l2 --hidden_dim 1000 --gamma 4 --lr 0.3 --batch_size 256 --neg_sample_size 32 -adv "
         "--max_step 200 --log_interval 100 --batch_size_eval 100 --test --neg_sample_size_eval 2000 --num_thread 1")
FILES = ["entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"]


def planted_with_room(root: Path, entities: int = ENTITIES) -> list[str]:
    """udd_hrt files: PAIRS pairs among the first 2 x PAIRS of `entities` entities, (h, 0, t) for
    each and its inverse (t, 1, h); the held-out triples are inverses whose forward one trains."""
    g = np.random.default_rng(0)
    perm = g.permutation(2 * PAIRS)
    heads, tails = perm[:PAIRS], perm[PAIRS:]
    fwd = np.stack([heads, np.zeros(PAIRS, np.int64), tails], 1)
    inv = np.stack([tails, np.ones(PAIRS, np.int64), heads], 1)
    split = {"test.txt": inv[:100], "valid.txt": inv[100:200], "train.txt": np.concatenate([fwd, inv[200:]])}
    (root / "entities.dict").write_text("".join(f"{i}\te{i}\n" for i in range(entities)))
    (root / "relations.dict").write_text("0\tto\n1\tback\n")
    for name, rows in split.items():
        np.savetxt(root / name, rows, fmt="%d", delimiter="\t")
    return FILES


def _cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "distgraph.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def _mrr(out: str) -> float:
    found = re.search(r"Test average MRR : ([\d.]+)", out)
    assert found, out[-3000:]
    return float(found.group(1))


def _capped_dist_train(bed, data: list[str], flags: str) -> tuple[subprocess.CompletedProcess, list[int]]:
    """`kge dist-train` of `data` started on the first host, every host in a CAP memory cgroup
    (what ssh starts there is in it); the run and each host's peak memory."""
    line = (f"cd {WORKSPACE} && DISTGRAPH_SESSION={new_session()} OMP_NUM_THREADS=1 {PY} -m distgraph.cli.main kge "
            f"dist-train {' '.join(data)} --data_path {WORKSPACE} --path {WORKSPACE} --ip_config ip_config.txt "
            f"--num_client_proc 1 --ssh_config {bed.ssh_config} {flags} --no_save_emb")
    caps = [MemoryCap(CAP) for _ in bed.hosts]
    try:
        for cap, host in zip(caps, bed.hosts):
            cap.add(host.sshd.pid)
        done = subprocess.run(bed.ssh_argv(bed.hosts[0], line), capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
        return done, [cap.peak() for cap in caps]
    finally:
        for cap in caps:
            cap.__exit__()


def test_a_table_larger_than_each_host_trains_on_three_hosts_as_on_one(bed, tmp_path):
    assert TABLE > CAP
    data = ["--dataset", "planted", "--format", "udd_hrt", "--data_files", *planted_with_room(tmp_path)]
    partition_and_copy_kg(bed, tmp_path, data)
    dist, peaks = _capped_dist_train(bed, data, TRAIN)
    print(f"table {TABLE / 2**20:.0f} MiB; each host's peak (MiB):", [p >> 20 for p in peaks])
    assert dist.returncode == 0, dist.stdout[-3000:] + dist.stderr[-3000:]
    assert "[2][Train](200/200)" in dist.stdout, dist.stdout[-3000:]
    assert all(TABLE // 3 < p <= CAP for p in peaks), peaks  # each held its third of the rows, within its cap

    one = _cli("kge", "train", *data, "--data_path", str(tmp_path), *TRAIN.split(), "--num_proc", "3",
               "--no_save_emb", cwd=tmp_path)
    assert one.returncode == 0, one.stderr[-3000:]
    three, single = _mrr(dist.stdout), _mrr(one.stdout)
    print(f"MRR: 3 hosts {three:.4f}, one host {single:.4f}")
    assert single > 0.5 and abs(three - single) <= 0.01


DISK_ENTITIES = 900_000  # 3.6 GB of rows: each host's third is larger than its CAP


def test_a_share_larger_than_each_host_trains_from_the_hosts_disks(bed, tmp_path):
    """Each host's third of the entity table does not fit its memory cap: with
    --num_entity_partitions 8, each host keeps its entities in 8 partitions on its disk, at
    most 3 in memory, and the job trains in stages of buckets. It ranks the held-out triples
    as the jobs of the first test do with the table in memory (MRR 1.0 there, on one host and
    on three, for the same planted structure)."""
    share = DISK_ENTITIES * DIM * 4 // 3
    assert share > CAP
    data = ["--dataset", "planted", "--format", "udd_hrt", "--data_files",
            *planted_with_room(tmp_path, DISK_ENTITIES)]
    partition_and_copy_kg(bed, tmp_path, data)
    dist, peaks = _capped_dist_train(bed, data, TRAIN.replace("--max_step 200", "--max_step 300") +
                                     " --num_entity_partitions 8")
    print(f"each host's share {share / 2**20:.0f} MiB; its peak (MiB):", [p >> 20 for p in peaks])
    assert dist.returncode == 0, dist.stdout[-3000:] + dist.stderr[-3000:]
    assert "on disk in 8 partitions" in dist.stdout and "[2][Train](300/300)" in dist.stdout, dist.stdout[-3000:]
    assert all(p <= CAP for p in peaks), peaks
    print(f"MRR on the hosts' disks: {_mrr(dist.stdout):.4f}")
    assert _mrr(dist.stdout) >= 0.99, dist.stdout[-3000:]

"""`distgraph partition --ip_config` on the 3 test hosts, run from this machine (the
coordinating host, outside the test bed): each host holds the metadata and only the chunk files
of its share (edges, node data, edge data) and runs under a memory cap (a cgroup holding its
sshd, so its agent and partitioning process) that the single-host streaming path exceeds for
the same graph; the hosts' partitions, the id maps and the config (on every host, as
`distgraph launch` needs) are the single-host path's, byte for byte."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from memcap import MemoryCap, run_capped, why_not
from partition_files import same_partitions, share_files

from testbed import WORKSPACE

from distgraph.data.sbm_chunked import generate_sbm_chunked
from distgraph.partition import load_partition
from distgraph.partition.layout import PartitionConfig

pytestmark = [pytest.mark.multiprocess, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]
CAP = 110 << 20  # per host: the single-host streaming path needs 130-150 MB on this graph, a host under 100


def _partition(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "distgraph.cli.main", "partition", "--graph_name", "g", "--num_parts", "3",
            "--part_method", "random", "--seed", "7", *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def job(bed):
    """A chunked graph (6 edge chunks, 3 chunks of each node data array, an edge weight in 4
    chunks) here, in a folder of its own under the workspace path, and on each host the metadata
    and the chunk files of its share only."""
    name = f"dist-{uuid.uuid4().hex[:8]}"
    here = Path(WORKSPACE) / name  # this host's folder at the hosts' workspace path
    meta = generate_sbm_chunked(here / "g", 300_000, 3_000_000, num_classes=16, feat_dim=4, feat_dtype="float32",
                                chunk_edges=500_000, progress=False)
    spec = json.loads(meta.read_text())
    weight = np.random.default_rng(0).random((3_000_000, 2), dtype=np.float32)
    for i, rows in enumerate(np.array_split(weight, 4)):  # (chunks of other sizes than the edges')
        np.save(here / "g" / f"w{i}.npy", rows)
    spec["edge_data"] = {"_N:_E:_N": {"w": {"format": {"name": "numpy"}, "data": [f"w{i}.npy" for i in range(4)]}}}
    meta.write_text(json.dumps(spec))
    for h, host in enumerate(bed.hosts):
        root = host.workspace / name / "g"
        for rel in ["metadata.json", *share_files(here / "g", h, len(bed.hosts))]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(here / "g" / rel, root / rel)
    yield name
    shutil.rmtree(here, ignore_errors=True)
    for host in bed.hosts:
        shutil.rmtree(host.workspace / name, ignore_errors=True)


def test_capped_hosts_partition_what_one_host_cannot_under_the_cap(bed, job, tmp_path):
    here = Path(WORKSPACE) / job
    (tmp_path / "ip_config.txt").write_text("".join(f"{host.ip} {bed.port}\n" for host in bed.hosts))
    single, _ = run_capped([sys.executable, "-m", "distgraph.cli.main", "partition", "--input", "g",
                                      "--graph_name", "g", "--num_parts", "3", "--part_method", "random", "--seed",
                                      "7", "--out", str(tmp_path / "capped"), "--memory_budget", "0.001"], CAP,
                                     cwd=here, capture_output=True, text=True, timeout=300)
    assert "random as asked, streaming" in single.stdout
    assert single.returncode == -9, (single.returncode, single.stderr[-2000:])  # killed at the cap
    assert not (tmp_path / "capped" / "g.json").exists()

    caps = [MemoryCap(CAP) for _ in bed.hosts]
    try:
        for cap, host in zip(caps, bed.hosts):
            cap.add(host.sshd.pid)  # its sessions, the agent and the partitioning process start inside
        done = _partition("--input", "g", "--out", "out", "--ip_config", str(tmp_path / "ip_config.txt"),
                          "--workspace", str(here), "--ssh_config", str(bed.ssh_config), cwd=here)
        peaks = [cap.peak() for cap in caps]
    finally:
        for cap in caps:
            cap.__exit__()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "on 3 hosts" in done.stdout and "peak memory per host: machine 0" in done.stdout
    assert all(p <= CAP for p in peaks), peaks
    rss = next(line for line in done.stdout.splitlines() if line.startswith("peak memory per host"))
    print(f"single host: killed at {CAP >> 20} MB; hosts' groups peaked at {[p >> 20 for p in peaks]} MB; {rss}")

    # the same partitioning on one host, uncapped; the hosts' parts with this host's id maps are it
    reference = _partition("--input", "g", "--out", str(tmp_path / "single"), "--memory_budget", "0.001", cwd=here)
    assert reference.returncode == 0, reference.stderr[-2000:]
    merged = tmp_path / "merged"
    shutil.copytree(here / "out", merged)
    for h, host in enumerate(bed.hosts):
        out = host.workspace / job / "out"
        assert sorted(p.name for p in out.iterdir()) == ["g.json", "mapping", f"part{h}"]  # its own part, no scratch
        assert (out / "g.json").read_text() == (here / "out" / "g.json").read_text()
        for f in (here / "out" / "mapping").iterdir():
            assert (out / "mapping" / f.name).read_bytes() == f.read_bytes()
        PartitionConfig.load(out / "g.json").check_files(h)  # what `distgraph launch` checks on each host
        shutil.copytree(out / f"part{h}", merged / f"part{h}")
    same_partitions(tmp_path / "single", merged)
    assert load_partition(merged / "g.json", 1).num_inner_nodes == 100_000


def test_an_unreachable_host_stops_the_command_with_one_line(bed, job, tmp_path):
    here = Path(WORKSPACE) / job
    lines = [f"{host.ip} {bed.port}" for host in bed.hosts[:2]] + [f"10.213.{bed.net}.99 {bed.port}"]  # no such host
    (tmp_path / "ip_config.txt").write_text("\n".join(lines) + "\n")
    done = _partition("--input", "g", "--out", "out2", "--ip_config", str(tmp_path / "ip_config.txt"),
                      "--workspace", str(here), "--ssh_config", str(bed.ssh_config), cwd=here)
    assert done.returncode == 2, done.stderr
    print(done.stderr.strip())
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and f"10.213.{bed.net}.99" in errors[0] and "nothing was partitioned" in errors[0], \
        done.stderr
    assert not (here / "out2" / "g.json").exists()
    assert not any((host.workspace / job / "out2").exists() for host in bed.hosts[:2])

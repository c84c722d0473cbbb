"""`distgraph partition --ip_config` on the 3 test hosts, run from this machine (the
coordinating host, outside the test bed): each host holds the metadata and only the chunk files
of its share (edges, node data, edge data) and runs under a memory cap (a cgroup holding its
sshd, so its agent and partitioning process) that the single-host streaming path exceeds for
the same graph; the hosts' partitions, the id maps and the config (on every host, as
`distgraph launch` needs) are the single-host path's, byte for byte. Faults mid-run (a host's
disk full, its process killed -9, its link down) end the command with one line naming the host,
and nothing of the run stays on any host, or past the next run into the same folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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


def _argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "distgraph.cli.main", "partition", "--graph_name", "g", "--num_parts", "3",
            "--part_method", "random", "--seed", "7", *args]


def _partition(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(_argv(*args), cwd=cwd, capture_output=True, text=True, timeout=300, **kwargs)


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


def _inside(host, rel: str) -> Path:
    """`rel` under the workspace as host `host` sees it (through its mount namespace: a tmpfs
    mounted there shows only here)."""
    return Path(f"/proc/{host.sshd.pid}/root{WORKSPACE}") / rel


def _left(folder: Path) -> list[str]:
    """Everything under `folder` (dot files too), or nothing when it is gone."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _in_namespace(host, *argv: str) -> None:
    """Run `argv` in host `host`'s mount namespace (a mount there is its own)."""
    subprocess.run(["nsenter", "-t", str(host.sshd.pid), "-m", *argv], check=True)


class _Command:
    """A partitioning of the job's graph on the test hosts into `out`, started in the
    background (its output in files) so that a fault can strike while it runs."""

    def __init__(self, bed, here: Path, ip_config: Path, out: str, *more: str):
        argv = _argv("--input", "g", "--out", out, "--ip_config", str(ip_config), "--workspace", str(here),
                     "--ssh_config", str(bed.ssh_config), *more)
        self.logs = [tempfile.TemporaryFile("w+") for _ in range(2)]
        self.proc = subprocess.Popen(argv, cwd=here, stdout=self.logs[0], stderr=self.logs[1], text=True)

    def wait(self, timeout: float) -> tuple[int, str, str]:
        """Its exit code, standard output and error."""
        code = self.proc.wait(timeout)
        texts = []
        for f in self.logs:
            f.seek(0)
            texts.append(f.read())
            f.close()
        return code, *texts

    def shuffling(self, folder: Path, timeout: float = 120) -> None:
        """Wait until edges arrive in the buckets under a host's folder `folder`: mid-shuffle."""
        deadline = time.monotonic() + timeout
        while not any(".edges-" in str(p) and p.is_file() and p.stat().st_size for p in folder.rglob("*")):
            assert self.proc.poll() is None and time.monotonic() < deadline, self.wait(10)
            time.sleep(0.02)


@pytest.fixture
def start(bed, job, tmp_path):
    """`start(out, *more)`: a `_Command` into `out` (a folder in the job's), with options `more`
    (one a failed test left running is killed at its end)."""
    ip_config = tmp_path / "ip_config.txt"
    ip_config.write_text("".join(f"{host.ip} {bed.port}\n" for host in bed.hosts))
    started: list[_Command] = []

    def command(out: str, *more: str) -> _Command:
        started.append(_Command(bed, Path(WORKSPACE) / job, ip_config, out, *more))
        return started[-1]

    yield command
    for c in started:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()


def _processes(host, port: int) -> list[int]:
    """The pids of the partitioning processes of `host`: its guard, then the worker it forked."""
    found = {}
    for entry in os.scandir("/proc"):
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{entry.name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if f"DISTGRAPH_LISTEN={host.ip} {port}".encode() in env:
            found[int(entry.name)] = ppid
    return sorted(found, key=lambda pid: found[pid] in found)  # (the guard's parent is the agent)


def _one_error_line(stderr: str, *parts: str) -> None:
    """The command said one error line (and no traceback anywhere), holding each of `parts`."""
    errors = [line for line in stderr.splitlines() if "error" in line.lower()]
    assert "Traceback" not in stderr and len(errors) == 1, stderr[-4000:]
    assert all(p in errors[0] for p in parts), errors[0]
    print(errors[0])


def _nothing_left(bed, job: str, out: str) -> None:
    """Nothing of a failed run into `out` anywhere: on the coordinating host, on every host."""
    for folder in [Path(WORKSPACE) / job / out] + [_inside(host, f"{job}/{out}") for host in bed.hosts]:
        assert _left(folder) == [], (folder, _left(folder))


def _partitioned(bed, job: str, out: str, command: _Command) -> None:
    """`command` succeeded: each host holds the config, the id maps and its own part (no scratch)."""
    code, stdout, stderr = command.wait(300)
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    for h, host in enumerate(bed.hosts):
        assert sorted(p.name for p in _inside(host, f"{job}/{out}").iterdir()) == ["g.json", "mapping", f"part{h}"]


@pytest.mark.parametrize("where, size, fix", [
    ("out", "1m", "free disk space there"),  # full while node data rows arrive
    ("scratch", "4m", "free disk space there or point --scratch_dir at a disk with room"),  # in the edge buckets
])
def test_a_full_disk_on_a_host_ends_with_one_line_and_leaves_it_empty(where, size, fix, bed, job, start):
    """A small tmpfs over a host's output folder or its --scratch_dir: one line naming the
    machine and the fix, and that disk empty again; made larger, a run into the same folders succeeds."""
    full, out = bed.hosts[2], f"full-{where}"
    disk = f"{job}/{out if where == 'out' else 'scratch'}"
    more = () if where == "out" else ("--scratch_dir", "scratch")
    (full.workspace / disk).mkdir()
    _in_namespace(full, "mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", f"{WORKSPACE}/{disk}")
    try:
        code, stdout, stderr = start(out, *more).wait(300)
        assert code == 2, stdout[-3000:] + stderr[-3000:]
        _one_error_line(stderr, "machine 2", full.ip, "No space left on device", fix)
        usage = os.statvfs(_inside(full, disk))
        assert usage.f_bfree == usage.f_blocks, "the disk was left full"
        _nothing_left(bed, job, out)
        assert _left(_inside(full, disk)) == []
        _in_namespace(full, "mount", "-o", "remount,size=256m", f"{WORKSPACE}/{disk}")
        _partitioned(bed, job, out, start(out, *more))
        if where == "scratch":
            assert _left(_inside(full, disk)) == []
    finally:
        _in_namespace(full, "umount", f"{WORKSPACE}/{disk}")


@pytest.mark.parametrize("victims", ["worker", "guard and worker"])
def test_a_host_process_killed_mid_shuffle_ends_with_one_line(victims, bed, job, start):
    """kill -9 of machine 1's worker (its guard removes what it wrote) or of both its processes
    (then nothing there can): one line naming it within seconds; a later run into the same
    folder removes what is left before it starts, and succeeds."""
    victim, out = bed.hosts[1], f"killed-{victims.replace(' ', '-')}"
    command = start(out)
    command.shuffling(_inside(victim, f"{job}/{out}"))
    pids = _processes(victim, bed.port)
    assert len(pids) == 2, pids
    pids = pids if victims != "worker" else pids[1:]
    for sig in (signal.SIGSTOP, signal.SIGKILL):  # (stopped first: killed together, neither cleans up after the other)
        for pid in pids:
            os.kill(pid, sig)
    killed = time.monotonic()
    code, stdout, stderr = command.wait(120)
    took = time.monotonic() - killed
    print(f"ended {took:.1f} s after the kill")
    assert code == 2 and took < 10, (took, stdout[-3000:] + stderr[-3000:])
    _one_error_line(stderr, "machine 1", victim.ip, "was killed by SIGKILL", "run the command again")
    if victims == "worker":
        _nothing_left(bed, job, out)
    else:
        assert any(".distgraph-scratch-" in p for p in _left(_inside(victim, f"{job}/{out}")))
    _partitioned(bed, job, out, start(out))


def test_a_host_whose_link_goes_down_mid_shuffle_is_named_within_30_s(bed, job, start):
    """Its link down: "lost the connection to host H" within 30 s with launch's exit code for
    it (255); the other hosts remove what they wrote at once, the lost one when it notices the
    silence (its agent stops its process); with the link back, a run into the same folder succeeds."""
    lost = bed.hosts[2]
    command = start("cut")
    command.shuffling(_inside(lost, f"{job}/cut"))
    subprocess.run(["ip", "link", "set", bed.veth(lost), "down"], check=True)
    try:
        cut = time.monotonic()
        code, stdout, stderr = command.wait(120)
        took = time.monotonic() - cut
        print(f"ended {took:.1f} s after the link went down")
        assert code == 255 and took < 30, (took, stdout[-3000:] + stderr[-3000:])
        _one_error_line(stderr, f"lost the connection to host {lost.ip}", "run the command again")
        deadline = time.monotonic() + 30
        while _left(_inside(lost, f"{job}/cut")) and time.monotonic() < deadline:
            time.sleep(0.2)
        _nothing_left(bed, job, "cut")
    finally:
        subprocess.run(["ip", "link", "set", bed.veth(lost), "up"], check=True)
    _partitioned(bed, job, "cut", start("cut"))

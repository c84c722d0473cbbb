"""Faults end a job cleanly: a dead sampler, a process that ignores SIGTERM, a stopped
process, a killed launcher, servers that exit mid-job. Each ends within a bounded time with
a message naming the process, leaving no process and no shared-memory file behind."""

import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import numpy as np
import pytest
import torch

from distgraph.cluster.lifeline import SILENCE_SECONDS

from .conftest import SCRIPTS, child_env, job_pids, launch_argv, write_ip_config

FAULTS = f"{sys.executable} {SCRIPTS / 'faults.py'}"


def _role_pids(job, role: str) -> list[int]:
    """Python processes of the job with DISTGRAPH_ROLE=role (not the shells running them)."""
    found = []
    for pid in job_pids(job.session):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f, open(f"/proc/{pid}/comm") as c:
                if f"DISTGRAPH_ROLE={role}".encode() in f.read().split(b"\0") and c.read().startswith("python"):
                    found.append(pid)
        except OSError:
            continue
    return found


def _nothing_left(job) -> None:
    pids, files = job.left_behind()
    assert not pids and not files, (pids, files, job.output[-3000:])


def test_a_killed_sampler_process_ends_the_job_naming_it(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} train", num_samplers=1)
    job.wait_for("ready", count=2)
    victim = _role_pids(job, "sampler")[0]
    subprocess.run(["kill", "-9", str(victim)], check=True)
    code = job.wait(60)
    assert code == 1, job.output[-3000:]
    assert f"(pid {victim}) died with exit code -9" in job.output
    assert re.search(r"\[launch\] \d/trainer/\d exited with code 1; stopping the job", job.output)
    _nothing_left(job)


def test_a_process_that_ignores_sigterm_is_killed(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} stubborn")
    job.wait_for("ready", count=2)
    job.proc.send_signal(signal.SIGINT)
    assert job.wait(60) == 130, job.output[-3000:]
    assert re.search(r"\[launch\] \d/trainer/\d still running 5 s after SIGTERM; killing it", job.output)
    _nothing_left(job)


def test_a_stopped_server_stops_the_job(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} busy")
    job.wait_for("ready", count=2)
    victim = _role_pids(job, "server")[0]
    subprocess.run(["kill", "-STOP", str(victim)], check=True)
    assert job.wait(60) == 1, job.output[-3000:]
    assert re.search(rf"\[launch\] \d/server/0 \(pid {victim}\) has been stopped \(SIGSTOP\)", job.output)
    _nothing_left(job)


@contextmanager
def _cpu_load(processes: int = 4):
    """Busy processes competing for the CPUs while the enclosed code runs."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for p in busy:
            p.kill()
            p.wait()


def test_every_process_ends_soon_after_its_launcher_is_killed(parts, tmp_path, launches):
    # the trainers compute without printing: nothing writes to the dead launcher's pipes
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} busy", num_samplers=0)
    job.wait_for("ready", count=2)
    assert len(_role_pids(job, "server")) == 2 and len(_role_pids(job, "trainer")) == 2
    with _cpu_load():
        job.proc.kill()
        job.proc.wait()
        _nothing_left(job)  # within 30 s; each noticed at once (its lifeline closed) and removed its shared memory


def test_a_stopped_launcher_on_a_loaded_machine_keeps_its_job(parts, tmp_path, launches):
    """A launcher that is slow or stopped is not a dead one: its processes end with the end of
    their lifelines, never for a silence (a heartbeat a starved launcher was late to write
    once ended a healthy job after 15 s)."""
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} work 30")
    job.wait_for("ready", count=2)
    with _cpu_load():
        job.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(SILENCE_SECONDS + 5)  # past the silence after which a heartbeat rule would end it
            assert len(_role_pids(job, "server")) == 2 and len(_role_pids(job, "trainer")) == 2
        finally:
            job.proc.send_signal(signal.SIGCONT)
    assert job.wait(120) == 0, job.output[-3000:]
    assert sum(f"rank {r} done" in job.output for r in (0, 1)) == 2 and "is gone" not in job.output
    _nothing_left(job)


def test_servers_that_exit_mid_job_are_reported_and_named_by_trainers(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} shutdown", DISTGRAPH_TIMEOUT="5")
    assert job.wait(120) == 0, job.output[-3000:]
    # servers leaving cleanly is no fault to the launcher; the trainer that still needed them says so
    assert "[launch]" not in job.output, job.output[-3000:]
    assert "PeerError: the servers of machine 0 have exited" in job.output
    assert "re-created" not in job.output
    _nothing_left(job)


def test_node_split_without_torch_distributed_gives_disjoint_shares(parts, tmp_path, launches, graph):
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} split {tmp_path}", num_trainers=2)
    assert job.wait(120) == 0, job.output[-3000:]
    shares = [torch.from_numpy(np.load(tmp_path / f"share_{r}.npy")) for r in range(4)]
    everything = torch.cat(shares)
    orig = torch.from_numpy(np.load(parts[2].parent / "mapping" / "node._N.npy"))
    expected = torch.nonzero(graph.ndata["train_mask"][orig]).flatten()
    assert all(s.numel() > 0 for s in shares)
    assert torch.equal(everything.sort().values, expected)  # disjoint, and together every training node


def test_rendezvous_listens_on_the_trainers_address_only(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{FAULTS} ddp")
    assert job.wait(120) == 0, job.output[-3000:]
    assert "[0/trainer/0] rendezvous listens on ['127.0.0.1']" in job.output
    assert "[1/trainer/1] all_reduce 2" in job.output


def _launch_error(tmp_path, part_config, machines=2):
    ip_config = write_ip_config(tmp_path / "ip_config.txt", [1] * machines)
    return subprocess.run(launch_argv(tmp_path, part_config, ip_config, "python3 -c pass"), env=child_env(),
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def part_copy(parts, tmp_path):
    """A copy of the 2-part partition that a test may damage."""
    import shutil

    shutil.copytree(parts[2].parent, tmp_path / "copy")
    return tmp_path / "copy" / parts[2].name


def test_missing_partition_file_is_reported_before_any_process_starts(tmp_path, part_copy):
    (part_copy.parent / "part1" / "indptr.npy").unlink()
    run = _launch_error(tmp_path, part_copy)
    assert run.returncode == 2
    assert run.stderr.startswith("distgraph launch: error: partition file ")
    assert "part1/indptr.npy is missing" in run.stderr and "[0/server" not in run.stdout + run.stderr


def test_truncated_partition_file_is_reported_before_any_process_starts(tmp_path, part_copy):
    victim = part_copy.parent / "part0" / "node._N.feat.npy"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    run = _launch_error(tmp_path, part_copy)
    assert run.returncode == 2
    assert "node._N.feat.npy is unreadable or truncated" in run.stderr and "[0/server" not in run.stderr


def test_commands_check_their_inputs_before_importing_torch(tmp_path, part_copy):
    bad, good = tmp_path / "ip.txt", tmp_path / "good.txt"
    bad.write_text("10.0.0.1 port\n")
    good.write_text("127.0.0.1 5000\n127.0.0.1 5010\n")
    (part_copy.parent / "part1" / "indptr.npy").unlink()
    calls = "".join(f"assert main(['launch', '--workspace', '.', '--num_trainers', '1', '--part_config', '{p}', "
                    f"'--ip_config', '{ip}', 'python3 t.py']) == 2\n"
                    for p, ip in ((part_copy, bad), (tmp_path / "missing.json", good), (part_copy, good)))
    script = ("import sys\nfrom distgraph.cli.main import main\n"
              "for argv in (['--help'], ['launch', '--help'], ['kge', 'train', '--help']):\n"
              "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
              + calls + "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=child_env(), timeout=60)
    assert run.returncode == 0, run.stderr
    assert "ip.txt, line 1: PORT must be an integer" in run.stderr
    assert "missing.json does not exist" in run.stderr and "part1/indptr.npy is missing" in run.stderr

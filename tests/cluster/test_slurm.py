"""Slurm and torchrun on the 3 test hosts: `sbatch` of a script whose `distgraph launch` finds
its machines in the allocation and starts the other nodes' agents with `srun` (GraphSAGE
trains, each node saves its share of the predictions); a killed `srun` task ends the job
naming its node, with nothing left on any host; and the torchrun recipe: `distgraph serve` and
`torchrun` on every host, trainers that `initialize` against those servers."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from leaks import new_session

import distgraph as dg
from distgraph.cluster.slurm import job_port
from distgraph.data import generate_sbm
from slurm import Slurm, available
from test_hosts import _cli, copied  # noqa: F401 (the module's fixture: the job on every host)
from testbed import WORKSPACE

PY = sys.executable
TRAIN = f"{PY} graphsage/train_dist.py --graph_name g --batch_size 100 --fan_out 5,5 --num_hidden 32 --lr 0.03"
PRINTED = re.compile(r"full-graph inference: .*\((\d+)/(\d+) test")


@pytest.fixture(scope="module")
def slurm(bed, copied, tmp_path_factory):  # noqa: F811
    why = available()
    if why is not None:
        pytest.skip(why)
    with Slurm(bed, tmp_path_factory.mktemp("slurm")) as s:
        yield s


def _job_processes(marker: str) -> list[tuple[int, dict]]:
    """(pid, environment) of every process on any host whose environment holds `marker`."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in env.values() and state != b"Z":
            found.append((int(entry.name), {k.decode(): v.decode(errors="replace") for k, v in env.items()}))
    return found


def _nothing_left(bed, session: str, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p, _ in _job_processes(session)]
        files = [f for h in bed.hosts for f in h.shm.glob(f"distgraph.{session}.*")]
        if not pids and not files:
            return
        assert time.monotonic() < deadline, f"left behind: processes {pids}, files {files}"
        time.sleep(0.2)


def _batch(session: str, command: str) -> str:
    """A batch script that launches `command` on the allocation's nodes (no --ip_config: the
    launcher takes the nodes from SLURM_JOB_NODELIST and reaches the others through srun)."""
    return (f"#!/bin/sh\ncd {WORKSPACE}\nexport DISTGRAPH_SESSION={session}\n"
            f"exec {PY} -m distgraph.cli.main launch --workspace {WORKSPACE} --num_trainers 1 --num_servers 1 "
            f"--part_config data/g.json \"{command}\"\n")


def test_sbatch_trains_graphsage_on_three_nodes(bed, slurm, tmp_path):
    session = new_session()
    log = tmp_path / "job.out"
    job = slurm.sbatch(_batch(session, f"{TRAIN} --num_epochs 6 --save_predictions pred"), "-N3", f"--output={log}")
    state = slurm.wait(job, 400)
    out = log.read_text()
    assert state == "COMPLETED", out[-4000:] + slurm.logs()
    accuracy = re.search(r"\[0/trainer/0\] best val acc [\d.]+ at epoch \d+; test acc ([\d.]+)", out)
    assert accuracy and float(accuracy.group(1)) > 0.5, out[-3000:]
    port = job_port(str(job))  # the job's first server port
    for i, h in enumerate(bed.hosts):  # node i = machine i: its server at its address, its ip_config written
        assert f"[{i}/server/0] distgraph server 0 of machine {i} at {h.ip}:{port}: serving" in out, out[-3000:]
        assert (h.workspace / f"ip_config.slurm-{job}.txt").read_text().splitlines()[i] == f"{h.ip} {port} 1"
        assert [f.name for f in (h.workspace / "pred").glob("*.json")] == [f"part-{i:05d}.json"]
    gathered = tmp_path / "pred"  # each node wrote its share on its own disk: the parts brought together
    gathered.mkdir()
    for h in bed.hosts:
        for f in (h.workspace / "pred").iterdir():
            shutil.copy(f, gathered / f.name)
    table = dg.load_results(gathered)
    assert table.column("node_id").to_pylist() == list(range(6000))
    g = generate_sbm(6000, 60000, num_classes=4, feat_dim=16, seed=3)  # the source fixture's graph
    mask = g.ndata["test_mask"].numpy()
    pred = table.column("pred").to_numpy()
    saved = (int((pred[mask] == g.ndata["label"].numpy()[mask]).sum()), int(mask.sum()))
    assert [saved] == [tuple(map(int, m)) for m in PRINTED.findall(out)], out[-2000:]
    _nothing_left(bed, session)


def test_a_killed_task_ends_the_job_naming_its_node(bed, slurm, tmp_path):
    session = new_session()
    log = tmp_path / "job.out"
    job = slurm.sbatch(_batch(session, f"{TRAIN} --num_epochs 1000"), "-N3", f"--output={log}")
    deadline = time.monotonic() + 300
    while "epoch 0:" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline and slurm.state(job) in ("PENDING", "RUNNING", "CONFIGURING"), \
            (log.read_text() if log.exists() else "") + slurm.logs()
        time.sleep(0.2)
    agents = [p for p, env in _job_processes(session)
              if env.get("SLURMD_NODENAME") == "n2" and env.get("SLURM_STEP_ID") not in (None, "batch")
              and "distgraph.launch.agent" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
    assert len(agents) == 1, agents
    os.kill(agents[0], signal.SIGKILL)  # the srun task on node n2
    assert slurm.wait(job, 120) == "FAILED"
    out = log.read_text()
    lost = bed.hosts[2].ip
    assert re.search(rf"\[launch\] lost the connection to host {re.escape(lost)} \(srun exited with code \d+: "
                     r".*\); stopping the job", out), out[-3000:]
    _nothing_left(bed, session)


@contextmanager
def _torchrun_job(bed, marker: str, secret: str, epochs: int) -> Iterator[tuple[list, list[list[str]]]]:
    """The recipe of docs/launch.md on every host: `distgraph serve` for its machine and
    `torchrun --node_rank <machine>`, the secret on standard input (never a command line);
    (each host's ssh process, its output lines as they come), killed on the way out if running."""
    with socket.socket() as s:
        s.bind(("", 0))
        master_port = s.getsockname()[1]
    jobs = []
    for i, h in enumerate(bed.hosts):
        line = (f"cd {WORKSPACE} && read -r DISTGRAPH_SECRET && export DISTGRAPH_SECRET DG_TEST_MARK={marker} "
                f"OMP_NUM_THREADS=1 && "
                f"{{ {PY} -m distgraph.cli.main serve --ip_config ip_config.txt --part_config data/g.json "
                f"--machine_id {i} --num_trainers 1 & }} && "
                f"DISTGRAPH_ROLE=trainer {PY} -m torch.distributed.run --nnodes 3 --node_rank {i} --nproc_per_node 1 "
                f"--master_addr {bed.hosts[0].ip} --master_port {master_port} {TRAIN.split(' ', 1)[1]} "
                f"--num_epochs {epochs} --ip_config ip_config.txt --part_config data/g.json && wait")
        proc = subprocess.Popen(bed.ssh_argv(h, line), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        proc.stdin.write(secret + "\n")
        proc.stdin.close()
        jobs.append(proc)
    pieces: list[list[str]] = [[] for _ in jobs]
    readers = [threading.Thread(target=lambda p=p, out=out: out.extend(p.stdout), daemon=True)
               for p, out in zip(jobs, pieces)]
    for t in readers:
        t.start()
    try:
        yield jobs, pieces
    finally:
        for p in jobs:
            if p.poll() is None:
                p.kill()
        for t in readers:
            t.join(10)


def test_torchrun_trainers_initialize_against_distgraph_serve(bed, copied, tmp_path):  # noqa: F811
    """The torchrun recipe trains to the end on 3 hosts; every server leaves after the goodbyes."""
    marker, secret = new_session(), secrets.token_hex(32)
    with _torchrun_job(bed, marker, secret, 3) as (jobs, pieces):
        codes = [proc.wait(timeout=300) for proc in jobs]
    outputs = ["".join(p) for p in pieces]
    assert codes == [0, 0, 0], "\n".join(o[-2000:] for o in outputs)
    assert re.search(r"best val acc [\d.]+ at epoch \d+; test acc ([\d.]+)", outputs[0]), outputs[0][-3000:]
    for i, (h, out) in enumerate(zip(bed.hosts, outputs)):
        assert f"[{i}/server/0] distgraph server 0 of machine {i} at {h.ip}:{bed.port}: serving" in out, out[-2000:]
        assert "stopping" not in out, out[-2000:]  # every server left after the trainers' goodbyes
    assert secret not in "".join(outputs)
    deadline = time.monotonic() + 30
    while _job_processes(marker):
        assert time.monotonic() < deadline, _job_processes(marker)
        time.sleep(0.2)


def test_a_torchrun_job_that_loses_a_machine_leaves_nothing_on_the_others(bed, copied, tmp_path):  # noqa: F811
    """Everything of machine 2 (its serve, server, torchrun and trainer) killed mid-training: the
    other machines' servers end within 30 s, naming why, and nothing of the job is left anywhere."""
    marker, secret = new_session(), secrets.token_hex(32)
    with _torchrun_job(bed, marker, secret, 1000) as (jobs, pieces):
        deadline = time.monotonic() + 300
        while "epoch 0:" not in "".join(pieces[0]):
            assert time.monotonic() < deadline and jobs[0].poll() is None, "".join(pieces[0])[-3000:]
            time.sleep(0.2)
        lost = bed.hosts[2].ip
        for pid, env in _job_processes(marker):
            if env.get("SSH_CONNECTION", "").split()[2:3] == [lost]:
                os.kill(pid, signal.SIGKILL)
        began = time.monotonic()
        for proc in jobs[:2]:
            proc.wait(timeout=120)
        took = time.monotonic() - began
    outputs = ["".join(p) for p in pieces]
    assert took < 90, (took, outputs[0][-2000:])  # the servers see the lost connections: no timeout to wait out
    for out in outputs[:2]:
        assert "a trainer's connection ended without its goodbye" in out, out[-3000:]
    deadline = time.monotonic() + 90  # (the servers, started in the background, end after their sessions)
    mine = f"distgraph.{marker}.*"  # this job's files (an earlier test's are that test's to check)
    while _job_processes(marker) or any(any(h.shm.glob(mine)) for h in bed.hosts[:2]):
        assert time.monotonic() < deadline, (_job_processes(marker), [list(h.shm.glob(mine)) for h in bed.hosts[:2]])
        time.sleep(0.2)
    print(f"machines 0 and 1 ended {took:.1f} s after machine 2 was killed; their processes and shared "
          f"memory were gone {time.monotonic() - began:.1f} s after")

"""Chaos: a training job (2 machines, DDP, sampler processes, sparse pushes) loses a random
process of a random role at a random moment, or has one stopped. Every time the launcher
ends within a bounded time with a message naming the process, and no process or
shared-memory file of the job is left. The seed of each run is printed on failure."""

import os
import random
import re
import signal
import sys
import time

import pytest

from .conftest import SCRIPTS, job_pids

CASES = [("kill", "server"), ("kill", "trainer"), ("kill", "sampler"), ("kill", "launcher"), ("stop", None)]
ROLES = ("server", "trainer", "sampler")


def _processes(job) -> dict[int, dict[str, str]]:
    """Python processes of the job (not their shells): pid -> their DISTGRAPH_* environment."""
    found = {}
    for pid in job_pids(job.session):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f, open(f"/proc/{pid}/comm") as c:
                if not c.read().startswith("python"):
                    continue
                pairs = (v.decode(errors="replace").partition("=") for v in f.read().split(b"\0") if v)
                env = {k: v for k, _, v in pairs if k.startswith("DISTGRAPH_") or k == "RANK"}
        except OSError:
            continue
        if env.get("DISTGRAPH_ROLE") in ROLES:
            found[pid] = env
    return found


def _label(env: dict[str, str]) -> str:
    """The launcher's name for a process (a sampler's output and group are its trainer's)."""
    role = "trainer" if env["DISTGRAPH_ROLE"] == "sampler" else env["DISTGRAPH_ROLE"]
    rank = env.get("DISTGRAPH_SERVER_ID", "0") if role == "server" else env["RANK"]
    return f"{env['DISTGRAPH_MACHINE_ID']}/{role}/{rank}"


@pytest.mark.parametrize("action,role", CASES, ids=[f"{a}-{r}" for a, r in CASES])
def test_a_random_fault_ends_the_job_cleanly(parts, tmp_path, launches, action, role):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    why = f"(seed {seed}) "
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SCRIPTS / 'faults.py'} train", num_samplers=1)
    time.sleep(rng.uniform(0.0, 3.0))  # servers are up; trainers start, spawn samplers, train
    if role == "launcher":
        job.proc.kill()
        job.proc.wait()
    else:
        deadline = time.monotonic() + 60
        while True:
            candidates = {p: e for p, e in _processes(job).items() if role is None or e["DISTGRAPH_ROLE"] == role}
            if candidates or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # e.g. the samplers are not started yet
        assert candidates, why + job.output[-3000:]
        victim = rng.choice(sorted(candidates))
        why += f"{action} {candidates[victim]['DISTGRAPH_ROLE']} pid {victim} ({_label(candidates[victim])}): "
        os.kill(victim, signal.SIGKILL if action == "kill" else signal.SIGSTOP)
        code = job.wait(60)  # the launcher notices within seconds; 60 is a generous bound
        assert code != 0, why + job.output[-3000:]
        named = [f"[launch] {_label(candidates[victim])} exited with code", f"(pid {victim})"]
        assert any(n in job.output for n in named), why + job.output[-3000:]
        if action == "stop":
            assert re.search(rf"\(pid {victim}\) has been stopped \(SIGSTOP\)", job.output), why + job.output
    pids, files = job.left_behind(30)
    assert not pids and not files, why + f"left {pids} {files}\n" + job.output[-3000:]

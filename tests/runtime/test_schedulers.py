"""Where the machines come from besides ip_config: a Slurm allocation (its node list expanded,
an ip_config written and shipped to every agent, srun steps to reach the nodes) and
`distgraph serve` for trainers of torchrun (their node rank and processes per node taken as
machine id and trainers per machine, the session agreed through the secret). The real runs are
in tests/cluster/test_slurm.py."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

from distgraph.cli.main import main
from distgraph.cluster.env import ProcessEnv, session_of
from distgraph.cluster.slurm import Allocation, expand_nodelist, job_port
from distgraph.errors import DistGraphError, InputError
from distgraph.launch import LaunchOptions, make_plan
from distgraph.launch.agent import write_files
from distgraph.launch.srun import SrunOptions
from distgraph.cluster.hosts import free_port

from .conftest import SCRIPTS, child_env, job_pids, session_files, write_ip_config


def test_node_lists_expand_as_scontrol_does():
    assert expand_nodelist("n[1-3,7],gpu5") == ["n1", "n2", "n3", "n7", "gpu5"]
    assert expand_nodelist("node[08-11]") == ["node08", "node09", "node10", "node11"]
    assert expand_nodelist("a[1-2]-b[0-1]") == ["a1-b0", "a1-b1", "a2-b0", "a2-b1"]
    assert expand_nodelist("solo") == ["solo"]
    for bad, message in (("n[1-3", "without its ']'"), ("n[3-1]", "runs backwards"), ("n[x]", "not a number"),
                         ("", "names no node")):
        with pytest.raises(InputError, match=message):
            expand_nodelist(bad)


def test_allocation_ip_config_and_ports():
    alloc = Allocation("1234", ["n0", "n1"], ["10.0.0.5", "10.0.0.6"])
    port = job_port("1234")
    assert port == 30050 + 8 * 1234 and job_port("1235") == port + 8 and job_port("") == 30050
    assert alloc.ip_config(2) == f"10.0.0.5 {port} 2\n10.0.0.6 {port} 2\n"


def test_slurm_plan_writes_the_allocation_ip_config_and_reaches_nodes_by_srun(parts, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[1-2]")
    monkeypatch.setattr("distgraph.cluster.slurm.node_addresses", lambda names: {"node1": "127.0.0.1",
                                                                                 "node2": "192.0.2.7"})
    plan = make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 train.py", part_config=str(parts[2]),
                                   ip_config=None, num_trainers=1, scheduler="slurm"))
    text = f"127.0.0.1 {job_port('77')} 1\n192.0.2.7 {job_port('77')} 1\n"
    assert (tmp_path / "ip_config.slurm-77.txt").read_text() == text
    assert plan.files == {"ip_config.slurm-77.txt": text} and plan.local == [True, False]
    assert {p.env["DISTGRAPH_IP_CONFIG"] for p in plan.processes} == {"ip_config.slurm-77.txt"}
    assert isinstance(plan.via, SrunOptions)
    argv = plan.via.argv("192.0.2.7", "exec /py -m distgraph.launch.agent")
    assert argv[:4] == ["srun", "--nodes=1", "--ntasks=1", "--nodelist=node2"]
    assert argv[-3:] == ["sh", "-c", "exec /py -m distgraph.launch.agent"] and "--unbuffered" in argv
    monkeypatch.delenv("SLURM_JOB_NODELIST")
    with pytest.raises(InputError, match="needs a Slurm allocation"):
        make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 t.py", part_config=str(parts[2]),
                                ip_config=None, num_trainers=1, scheduler="slurm"))
    with pytest.raises(InputError, match="give --ip_config"):
        make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 t.py", part_config=str(parts[2]),
                                ip_config=None, num_trainers=1))


def test_the_launch_command_picks_slurm_inside_an_allocation(parts, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr("distgraph.cli.launch.launch", lambda opts: seen.append(opts) or 0)
    argv = ["launch", "--workspace", str(tmp_path), "--num_trainers", "1", "--part_config", str(parts[2]), "python3 t.py"]
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[0-1]")
    assert main(argv) == 0 and seen[-1].scheduler == "slurm"
    assert main(argv[:1] + ["--ip_config", "ip.txt"] + argv[1:]) == 0 and seen[-1].scheduler == "ssh"
    monkeypatch.delenv("SLURM_JOB_NODELIST")
    assert main(argv) == 0 and seen[-1].scheduler == "ssh"  # (make_plan then asks for --ip_config)


def test_agents_write_shipped_files_inside_the_workspace_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_files("h", {"ip_config.slurm-1.txt": "10.0.0.1 30050 1\n", "sub/x.txt": "y"})
    assert (tmp_path / "ip_config.slurm-1.txt").read_text() == "10.0.0.1 30050 1\n"
    assert (tmp_path / "sub" / "x.txt").read_text() == "y"
    for bad in ("/etc/passwd", "../up.txt", "a/../../up.txt"):
        with pytest.raises(DistGraphError, match="outside the workspace"):
            write_files("h", {bad: "x"})


def test_torchrun_trainers_take_node_rank_and_processes_per_node():
    env = ProcessEnv.from_environ({"DISTGRAPH_ROLE": "trainer", "GROUP_RANK": "2", "LOCAL_WORLD_SIZE": "4",
                                   "RANK": "9", "DISTGRAPH_SECRET": "s3", "TORCHELASTIC_USE_AGENT_STORE": "True"})
    assert (env.machine_id, env.num_trainers, env.rank, env.agent_store) == (2, 4, 9, True)
    assert env.session == session_of("s3") != session_of("s4") and len(env.session) == 12
    launched = ProcessEnv.from_environ({"DISTGRAPH_ROLE": "trainer", "DISTGRAPH_MACHINE_ID": "1", "GROUP_RANK": "2",
                                        "DISTGRAPH_NUM_TRAINERS": "3", "LOCAL_WORLD_SIZE": "4",
                                        "DISTGRAPH_SESSION": "abc"})
    assert (launched.machine_id, launched.num_trainers, launched.session, launched.agent_store) == (1, 3, "abc", False)


def test_serve_plans_one_machines_servers_with_the_secret_from_the_environment(parts, tmp_path, monkeypatch, capsys):
    (tmp_path / "ip.txt").write_text("127.0.0.1 5000 2\n127.0.0.1 6000\n")
    opts = LaunchOptions(workspace=str(tmp_path), command="python3", part_config=str(parts[2]), ip_config="ip.txt",
                         num_trainers=2)
    monkeypatch.delenv("DISTGRAPH_SECRET", raising=False)
    monkeypatch.delenv("DISTGRAPH_SESSION", raising=False)
    with pytest.raises(InputError, match="set DISTGRAPH_SECRET"):
        make_plan(opts, serve=1)
    assert main(["serve", "--workspace", str(tmp_path), "--ip_config", "ip.txt", "--part_config", str(parts[2]),
                 "--machine_id", "0"]) == 2
    assert "set DISTGRAPH_SECRET" in capsys.readouterr().err
    monkeypatch.setenv("DISTGRAPH_SECRET", "abc")
    plan = make_plan(opts, serve=1)
    assert [p.label for p in plan.processes] == ["1/server/0"] and plan.local == [False, True]
    assert plan.session == session_of("abc") and plan.processes[0].env["DISTGRAPH_SECRET"] == "abc"
    assert plan.processes[0].env["DISTGRAPH_NUM_TRAINERS"] == "2"
    with pytest.raises(InputError, match="--machine_id 2 is not a machine"):
        make_plan(opts, serve=2)


@pytest.mark.multiprocess
def test_serve_ends_its_servers_when_a_trainer_of_the_job_is_killed(parts, tmp_path):
    """The torchrun recipe on loopback: `distgraph serve` for 2 machines and a trainer per
    machine started as torchrun starts them (no launcher holds them); machine 1's trainer is
    killed: both machines' servers end within 30 s, each `serve` exits naming why, nothing is left."""
    ip_config = write_ip_config(tmp_path / "ip_config.txt", [1, 1])
    env = child_env(DISTGRAPH_SECRET=secrets.token_hex(32), DISTGRAPH_STARTUP_TIMEOUT="120")  # a failed start ends
    session = env["DISTGRAPH_SESSION"]
    serves = [subprocess.Popen([sys.executable, "-m", "distgraph.cli.main", "serve", "--workspace", str(tmp_path),
                                "--ip_config", str(ip_config), "--part_config", str(parts[2]), "--machine_id",
                                str(m)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
              for m in range(2)]
    port = free_port("127.0.0.1")
    trainers = [subprocess.Popen([sys.executable, str(SCRIPTS / "wait_or_fail.py"), "wait"], env={
        **env, "DISTGRAPH_ROLE": "trainer", "DISTGRAPH_IP_CONFIG": str(ip_config),
        "DISTGRAPH_PART_CONFIG": str(parts[2]), "GROUP_RANK": str(m), "LOCAL_WORLD_SIZE": "1", "RANK": str(m),
        "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for m in range(2)]
    try:
        for t in trainers:  # (a trainer that cannot start ends, and its output with it)
            assert t.stdout.readline().strip() == "ready", t.stdout.read()
        trainers[1].send_signal(signal.SIGKILL)
        began = time.monotonic()
        codes = [s.wait(60) for s in serves]
        took = time.monotonic() - began
        outputs = [s.stdout.read() for s in serves]
        assert codes == [2, 2] and took < 30, (codes, took, outputs)
        for out in outputs:
            assert "a trainer's connection ended without its goodbye" in out and "stopping the job" in out, out
    finally:
        for p in (*trainers, *serves):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
            p.wait()
    deadline = time.monotonic() + 30
    while (job_pids(session) or session_files(session)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert job_pids(session) == [] and session_files(session) == []

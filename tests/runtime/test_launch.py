"""`distgraph launch` on loopback machines: the same script standalone and on two machines
gives the same tensors; a failing process or Ctrl-C stops everything with the right code."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch

from leaks import child_processes

from .conftest import SCRIPTS, child_env, launch_argv, write_ip_config


def by_original_id(values: torch.Tensor, part_config: Path) -> torch.Tensor:
    new2orig = torch.from_numpy(np.load(part_config.parent / "mapping" / "node._N.npy"))
    out = torch.empty_like(values)
    out[new2orig] = values
    return out


def test_standalone_and_two_loopback_machines_give_the_same_tensors(parts, graph, tmp_path, launches):
    solo, multi = tmp_path / "solo", tmp_path / "multi"
    solo.mkdir(), multi.mkdir()
    subprocess.run([sys.executable, str(SCRIPTS / "ops.py"), "--out", str(solo), "--part_config", str(parts[1])],
                   env=child_env(), check=True, timeout=120)
    # machine 0 has two servers
    job = launches(tmp_path, parts[2], [2, 1], f"{sys.executable} {SCRIPTS / 'ops.py'} --out {multi}")
    assert job.wait(150) == 0, job.output
    out, err = "".join(job.out), "".join(job.err)
    assert "[0/trainer/0] all_reduce 3" in out and "[1/trainer/1] all_reduce 3" in out
    assert "still running" not in err  # servers left on their own after the goodbyes
    assert all(re.match(r"^\[(\d/(server|trainer)/\d|launch)\] ", line) for line in err.splitlines())
    ref = torch.load(solo / "rank0.pt")
    assert torch.equal(by_original_id(ref["feat"], parts[1]), graph.ndata["feat"])
    for rank in (0, 1):
        got = torch.load(multi / f"rank{rank}.pt")
        assert got["role"] == "trainer" and got["env"]["RANK"] == str(rank) and got["env"]["WORLD_SIZE"] == "2"
        assert got["env"]["LOCAL_RANK"] == "0" and got["env"]["MASTER_ADDR"] == "127.0.0.1"
        assert torch.equal(by_original_id(got["feat"], parts[2]), graph.ndata["feat"])
        assert torch.equal(got["counts"], ref["counts"]) and got["counts"].any()
        assert torch.allclose(got["emb"], ref["emb"], atol=1e-6) and not torch.equal(got["emb"], ref["emb"] * 0)
        assert torch.allclose(got["emb2"], ref["emb2"], atol=1e-6)


def _assert_job_gone(job):
    assert not child_processes(), "launcher left processes behind"
    assert job.left_behind() == ([], [])


def test_first_failing_process_stops_the_job_with_its_exit_code(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SCRIPTS / 'wait_or_fail.py'} fail")
    assert job.wait(150) == 3, job.output
    assert "[launch] 1/trainer/1 exited with code 3; stopping the job\n" in job.err
    _assert_job_gone(job)


def test_ctrl_c_stops_every_process(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SCRIPTS / 'wait_or_fail.py'} wait")
    job.wait_for("ready", count=2)  # both trainers connected
    job.proc.send_signal(signal.SIGINT)
    assert job.wait(60) == 130, job.output
    assert "[launch] SIGINT: stopping the job\n" in job.err
    assert not any("after SIGTERM; killing it" in line for line in job.err)  # every process left within the grace
    _assert_job_gone(job)


def test_ip_config_must_list_one_machine_per_partition(parts, tmp_path):
    ip_config = write_ip_config(tmp_path / "ip_config.txt", [1])
    run = subprocess.run(launch_argv(tmp_path, parts[2], ip_config, "python3 -c pass"), env=child_env(),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "lists 1 machines but" in run.stderr and "has 2 partitions" in run.stderr


def test_a_host_whose_name_does_not_resolve_is_named_as_such(parts, tmp_path):
    ip_config = tmp_path / "ip_config.txt"
    ip_config.write_text("127.0.0.1 30050\nno-such-host.invalid 30050\n")
    run = subprocess.run(launch_argv(tmp_path, parts[2], ip_config, "python3 -c pass"), env=child_env(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 255, run.stderr
    assert "[launch] cannot resolve host no-such-host.invalid (ssh exited with code 255: " in run.stderr
    assert "lost the connection" not in run.stderr and "nothing was started" in run.stderr


def test_cli_keeps_the_command_given_after_extra_envs(monkeypatch):
    import distgraph.cli.launch as cli_launch
    from distgraph.cli.main import main

    seen = []
    monkeypatch.setattr(cli_launch, "launch", lambda opts: seen.append(opts) or 0)
    common = ["launch", "--workspace", "w", "--num_trainers", "2", "--part_config", "p.json", "--ip_config", "ip"]
    assert main(common + ["--extra_envs", "A=1", "B=x y", "python3 t.py --lr 0.1"]) == 0
    assert main(common + ["--", "python3", "t.py", "--lr", "0.1"]) == 0
    assert seen[0].command == seen[1].command == "python3 t.py --lr 0.1"
    assert seen[0].extra_envs == ["A=1", "B=x y"] and seen[1].extra_envs == []


def test_cli_quotes_each_word_of_an_argv_after_the_separator(monkeypatch):
    import distgraph.cli.launch as cli_launch
    from distgraph.cli.main import main

    seen = []
    monkeypatch.setattr(cli_launch, "launch", lambda opts: seen.append(opts) or 0)
    common = ["launch", "--workspace", "w", "--num_trainers", "1", "--part_config", "p.json", "--ip_config", "ip"]
    assert main(common + ["--", "python3", "t.py", "--a", "b c", "--q", "it's"]) == 0
    assert main(common + ["python3 t.py --a 'b c'"]) == 0  # DGL's one-string form is a command line
    assert seen[0].command == "python3 t.py --a 'b c' --q 'it'\"'\"'s'"
    assert seen[1].command == "python3 t.py --a 'b c'"


def test_trainers_may_work_on_their_own_after_the_servers_left(parts, tmp_path, launches):
    """Servers exiting after every goodbye is the normal end, not a fault: the launcher waits for
    trainers busy with local work after `exit_client()`, says nothing about the servers, and the
    script's argv arrives as typed after `--`."""
    job = launches(tmp_path, parts[2], [1, 1],
                   [sys.executable, str(SCRIPTS / "after_exit.py"), "8", "--a", "b c", "it's"])
    assert job.wait(300) == 0, job.output
    done = [line for line in job.out if 'local work done ["--a", "b c", "it\'s"]' in line]
    assert len(done) == 2, job.output
    assert "[launch]" not in "".join(job.err), job.output  # no false alarm, nothing stopped
    _assert_job_gone(job)


def test_cli_accepts_dgl_graph_format_and_refuses_unknown_formats(monkeypatch, capsys):
    import distgraph.cli.launch as cli_launch
    from distgraph.cli.main import main

    seen = []
    monkeypatch.setattr(cli_launch, "launch", lambda opts: seen.append(opts) or 0)
    common = ["launch", "--workspace", "w", "--num_trainers", "1", "--part_config", "p.json", "--ip_config", "ip"]
    assert main(common + ["--graph_format", "csr,csc", "python3 t.py"]) == 0 and seen[0].command == "python3 t.py"
    with pytest.raises(SystemExit) as exit_info:
        main(common + ["--graph_format", "csc,dense", "python3 t.py"])
    assert exit_info.value.code == 2 and "give formats among csr, csc, coo" in capsys.readouterr().err


def test_features_on_disk_reaches_every_process_from_launch_and_serve(parts, tmp_path, monkeypatch):
    import distgraph.cli.launch as cli_launch
    import distgraph.launch.runner as runner
    from distgraph.cli.main import main
    from distgraph.cluster.env import ProcessEnv
    from distgraph.launch import LaunchOptions, make_plan

    seen = []
    monkeypatch.setattr(cli_launch, "launch", lambda opts: seen.append(opts) or 0)
    monkeypatch.setattr(runner, "run", lambda plan: seen.append(plan) or 0)
    monkeypatch.setenv("DISTGRAPH_SECRET", "abc")
    (tmp_path / "ip.txt").write_text("127.0.0.1 5000\n127.0.0.1 6000\n")
    assert main(["launch", "--workspace", "w", "--num_trainers", "1", "--part_config", "p.json", "--ip_config", "ip",
                 "--features_on_disk", "python3 t.py"]) == 0 and seen[0].features_on_disk
    assert main(["serve", "--workspace", str(tmp_path), "--ip_config", "ip.txt", "--part_config", str(parts[2]),
                 "--machine_id", "1", "--features_on_disk"]) == 0
    assert seen[1].processes[0].env["DISTGRAPH_FEATURES_ON_DISK"] == "1"
    for on in (False, True):
        plan = make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 t.py", part_config=str(parts[2]),
                                       ip_config="ip.txt", num_trainers=1, features_on_disk=on))
        assert {p.env["DISTGRAPH_FEATURES_ON_DISK"] for p in plan.processes} == {str(int(on))}
        assert ProcessEnv.from_environ(plan.processes[0].env).features_on_disk is on


def test_plan_warns_when_ip_config_overrides_num_servers(parts, tmp_path, capsys):
    from distgraph.launch import LaunchOptions, make_plan

    (tmp_path / "ip.txt").write_text("127.0.0.1 5000 2\n127.0.0.1 6000\n")
    plan = make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 t.py", part_config=str(parts[2]),
                                   ip_config="ip.txt", num_trainers=1, num_servers=1))
    assert sum(p.role == "server" for p in plan.processes) == 3  # the column wins for machine 0
    assert "[launch] warning: ip.txt gives 2 servers per machine on line 1, but --num_servers is 1" in \
        capsys.readouterr().err
    make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 t.py", part_config=str(parts[2]),
                            ip_config="ip.txt", num_trainers=1, num_servers=2))
    assert "warning" not in capsys.readouterr().err


def test_plan_roles_ranks_and_ssh_for_other_hosts(parts, tmp_path, monkeypatch):
    from distgraph.launch import LaunchOptions, SshOptions, make_plan
    from distgraph.launch.ssh import python_module_line
    from distgraph.partition.layout import PartitionConfig

    monkeypatch.setenv("DISTGRAPH_HOST_SHM", "0")  # forwarded to every process, remote ones too

    (tmp_path / "ip.txt").write_text("127.0.0.1 5000 2\n192.0.2.7 6000\n")  # 192.0.2.0/24: never this host
    plan = make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 train.py", part_config=str(parts[2]),
                                   ip_config="ip.txt", num_trainers=2, extra_envs=["NCCL_DEBUG=INFO"]))
    assert [p.label for p in plan.processes] == ["0/server/0", "0/server/1", "1/server/0", "0/trainer/0",
                                                  "0/trainer/1", "1/trainer/2", "1/trainer/3"]
    assert plan.local == [True, False]
    t3 = plan.processes[-1]
    assert (t3.env["RANK"], t3.env["LOCAL_RANK"], t3.env["WORLD_SIZE"], t3.env["MASTER_ADDR"]) == ("3", "1", "4",
                                                                                                   "127.0.0.1")
    assert t3.env["DISTGRAPH_MACHINE_ID"] == "1" and t3.env["NCCL_DEBUG"] == "INFO"
    assert plan.processes[1].env["DISTGRAPH_SERVER_ID"] == "1"
    assert plan.processes[0].command.endswith("-m distgraph.server")
    assert plan.check == {"part_config": str(parts[2]), "num_parts": 2,
                          "fingerprint": PartitionConfig.load(parts[2]).fingerprint()}
    # the other host's processes are started by its agent, over one ssh session whose command
    # line holds no variable: their environments travel on its standard input
    argv = SshOptions(2222, "bob", "/keys/id", None).argv("192.0.2.7", python_module_line("/py", "distgraph.launch.agent"))
    assert argv[0] == "ssh" and argv[-2:] == ["bob@192.0.2.7", "exec /py -m distgraph.launch.agent"]
    assert "StrictHostKeyChecking=accept-new" in argv and ["-p", "2222"] == argv[argv.index("-p"):argv.index("-p") + 2]
    assert ["-i", "/keys/id"] == argv[argv.index("-i"):argv.index("-i") + 2]
    assert t3.env["DISTGRAPH_HOST_SHM"] == "0" and t3.command == "python3 train.py"


def test_a_plan_of_forked_trainers_starts_one_trainer_process_a_machine(parts, tmp_path):
    from distgraph.launch import LaunchOptions, make_plan

    (tmp_path / "ip.txt").write_text("127.0.0.1 5000\n127.0.0.1 5001\n")
    plan = make_plan(LaunchOptions(workspace=str(tmp_path), command="python3 -m worker", part_config=str(parts[2]),
                                   ip_config="ip.txt", num_trainers=3, fork_trainers=True))
    assert [p.label for p in plan.processes] == ["0/server/0", "1/server/0", "0/trainer/0", "1/trainer/3"]
    head = plan.processes[-1]
    assert (head.env["RANK"], head.env["LOCAL_RANK"], head.env["WORLD_SIZE"], head.env["DISTGRAPH_NUM_TRAINERS"],
            head.env["DISTGRAPH_FORK_TRAINERS"]) == ("3", "0", "6", "3", "3")
    assert "DISTGRAPH_FORK_TRAINERS" not in plan.processes[0].env


FAMILY = """
import os, sys, time
from pathlib import Path
os.environ.update(RANK="4", LOCAL_RANK="0", DISTGRAPH_FORK_TRAINERS="3")
from distgraph.launch.family import start_family
family = start_family()
rank, out = int(os.environ["RANK"]), Path(sys.argv[1])
say = lambda text: os.write(1, (text + "\\n").encode())  # one line in one write: the forks share the pipe
say(f"rank {rank} local {os.environ['LOCAL_RANK']} forks {os.environ.get('DISTGRAPH_FORK_TRAINERS')} {family.label}")
if sys.argv[2] == "fail":
    if rank == 5:
        time.sleep(0.5)  # after rank 6 has ended
        sys.exit(7)
    if rank == 4:
        time.sleep(600)  # still training: the fork's failure must end it
if rank != 4:
    time.sleep(0.3)
    (out / f"done{rank}").touch()
code = family.finish(0)
say(f"rank {rank} finished {code} after {sorted(p.name for p in out.iterdir())}")
sys.exit(code)
"""


@pytest.mark.parametrize("outcome", ["succeed", "fail"])
def test_forked_trainers_take_their_ranks_and_the_first_failure_ends_the_family(tmp_path, outcome):
    done = subprocess.run([sys.executable, "-c", FAMILY, str(tmp_path), outcome], capture_output=True, text=True,
                          timeout=120, env=child_env())
    lines = done.stdout.splitlines()
    assert {"rank 4 local 0 forks 3 trainer 4: ", "rank 5 local 1 forks None trainer 5: ",
            "rank 6 local 2 forks None trainer 6: "} <= set(lines), lines
    if outcome == "succeed":  # the launched process ends after its forks, with their codes
        assert done.returncode == 0, done.stderr
        assert "rank 4 finished 0 after ['done5', 'done6']" in lines
    else:  # the parent, asleep, ended with the failed fork's code
        assert done.returncode == 7 and not any(x.startswith("rank 4 finished") for x in lines), done.stdout
    assert child_processes() == []
    left = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert left == []


@pytest.mark.parametrize("num_samplers", [0, 1])
def test_every_seed_once_per_epoch_across_trainers_with_and_without_sampler_processes(parts, tmp_path, num_samplers,
                                                                                      graph, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SCRIPTS / 'epoch_seeds.py'} {tmp_path}",
                   num_samplers=num_samplers)
    assert job.wait(300) == 0, job.output[-4000:]
    seeds = torch.cat([torch.from_numpy(np.load(tmp_path / f"seeds_{r}.npy")) for r in range(2)])
    orig = torch.from_numpy(np.load(parts[2].parent / "mapping" / "node._N.npy"))
    expected = torch.nonzero(graph.ndata["train_mask"][orig]).flatten()
    assert torch.equal(seeds.sort().values, expected)  # each training node exactly once, over both trainers
    assert [int(np.load(tmp_path / f"samplers_{r}.npy")[0]) for r in range(2)] == [num_samplers] * 2
    _assert_job_gone(job)


def test_a_launcher_whose_terminal_went_away_stops_and_sweeps_its_job(parts, tmp_path):
    """A launcher whose output has nowhere to go (its pipe closed, as when its ssh session is
    lost) stops the job as a hang-up does (exit 129), and leaves no process or shared memory."""
    from distgraph.cluster.shm_files import session_files

    env = child_env()
    ip_config = write_ip_config(tmp_path / "ip_config.txt", [1, 1])
    proc = subprocess.Popen(launch_argv(tmp_path, parts[2], ip_config,
                                        f"{sys.executable} {SCRIPTS / 'wait_or_fail.py'} wait"),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.wait(timeout=150) == 128 + signal.SIGHUP
    assert not child_processes() and session_files(env["DISTGRAPH_SESSION"]) == []

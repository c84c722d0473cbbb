"""End to end on 3 test hosts (network namespaces with their own sshd, workspace and
/dev/shm): partition -> `distgraph copy` -> `distgraph launch` over ssh from machine 0;
faults (a host's link cut, the launcher SIGKILLed, a server SIGKILLed) each end the job
with an error naming the host and leave no process and no shared memory on any host."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import zmq
from leaks import new_session
from zmq.utils.monitor import recv_monitor_message

from distgraph.cluster.lifeline import SILENCE_SECONDS

from testbed import WORKSPACE, Capture, partition_and_copy_kg
from zmtp import ZAP_REFUSAL, replay

from distgraph.data import generate_sbm
from distgraph.partition import partition_graph

PY = sys.executable
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "graphsage"
TRAIN = f"{PY} graphsage/train_dist.py --graph_name g --batch_size 100 --fan_out 5,5 --num_hidden 32 --lr 0.03"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "distgraph.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def copied(bed, source):
    """The job copied to every host (once for this module)."""
    args = ["copy", "--ip_config", "ip_config.txt", "--workspace", WORKSPACE, "--rel_data_path", "data",
            "--part_config", "parts/g.json", "--script_folder", str(EXAMPLES), "--ssh_config", str(bed.ssh_config)]
    done = _cli(*args, cwd=source)
    assert done.returncode == 0, done.stdout + done.stderr
    return args


def test_copy_gives_each_host_its_own_partition_only_and_is_incremental(bed, source, copied):
    for i, h in enumerate(bed.hosts):
        ws = h.workspace
        assert (ws / "ip_config.txt").is_file() and (ws / "data" / "g.json").is_file()
        assert (ws / "graphsage" / "train_dist.py").is_file() and (ws / "data" / "mapping").is_dir()
        assert sorted(p.name for p in (ws / "data").glob("part*")) == [f"part{i}"]
        assert (ws / "data" / f"part{i}" / "indptr.npy").read_bytes() == \
            (source / "parts" / f"part{i}" / "indptr.npy").read_bytes()
    again = _cli(*copied, cwd=source)
    assert again.returncode == 0 and again.stdout.count("sending 0") == len(bed.hosts), again.stdout
    (source / "parts" / "g.json").touch()  # a changed file is sent again, to every host
    third = _cli(*copied, cwd=source)
    assert third.stdout.count("sending 1") == len(bed.hosts), third.stdout


class Launch:
    """`distgraph launch` run on host 0 over ssh (as a user logged into machine 0 would)."""

    def __init__(self, bed, command: str, **env: str):
        self.bed, self.session = bed, new_session()
        setting = " ".join(f"{k}={v}" for k, v in {"DISTGRAPH_SESSION": self.session, **env}.items())
        line = (f"cd {WORKSPACE} && {setting} {PY} -m distgraph.cli.main launch --workspace {WORKSPACE} "
                f"--num_trainers 1 --num_servers 1 --part_config data/g.json --ip_config ip_config.txt "
                f"--ssh_config {bed.ssh_config} --ssh_key {bed.key} \"{command}\"")
        self.proc = subprocess.Popen(bed.ssh_argv(bed.hosts[0], line), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in iter(self.proc.stdout.readline, ""):
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline and self.proc.poll() is None, f"no {text!r} in:\n{self.output}"
            time.sleep(0.05)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self.reader.join(10)
        return code

    def pids(self, role: str | None = None) -> list[int]:
        """Python processes of the job on any host (the hosts share this machine's process table)."""
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as f, open(f"/proc/{entry.name}/comm") as c:
                    env = f.read().split(b"\0")
                    python = c.read().startswith("python")
            except OSError:
                continue
            if python and f"DISTGRAPH_SESSION={self.session}".encode() in env and (
                    role is None or f"DISTGRAPH_ROLE={role}".encode() in env):
                found.append(int(entry.name))
        return found

    def nothing_left(self, timeout: float = 30) -> None:
        """No process of the job and no shared-memory file of it on any host, within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            files = [f for h in self.bed.hosts for f in h.shm.glob(f"distgraph.{self.session}.*")]
            pids = self.pids()
            if not pids and not files:
                return
            assert time.monotonic() < deadline, f"left behind: {pids} {files}\n{self.output[-3000:]}"
            time.sleep(0.1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in self.pids():
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def launches(bed, copied):
    started: list[Launch] = []

    def start(command: str, **env: str) -> Launch:
        started.append(Launch(bed, command, **env))
        return started[-1]

    yield start
    for job in started:
        job.close()


def test_graphsage_trains_on_three_hosts_over_ssh(bed, launches):
    job = launches(f"{TRAIN} --num_epochs 8")
    assert job.wait(300) == 0, job.output[-4000:]
    accuracy = re.search(r"\[0/trainer/0\] best val acc [\d.]+ at epoch \d+; test acc ([\d.]+)", job.output)
    assert accuracy and float(accuracy.group(1)) > 0.5, job.output[-3000:]
    for i, h in enumerate(bed.hosts):  # every host ran its machine's server and trainer
        assert f"[{i}/server/0] distgraph server 0 of machine {i} at {h.ip}:{bed.port}: serving" in job.output
        assert f"[{i}/trainer/{i}]" in job.output or i != 0
    job.nothing_left()


def test_a_host_whose_link_is_cut_ends_the_job_naming_it(bed, launches):
    job = launches(f"{TRAIN} --num_epochs 1000")
    job.wait_for("epoch 0:")
    lost = bed.hosts[2]
    subprocess.run(["ip", "link", "set", bed.veth(lost), "down"], check=True)
    try:
        code = job.wait(90)  # the launcher notices within about 15 s; 90 is a generous bound
        assert code == 255, job.output[-3000:]
        assert re.search(rf"\[launch\] lost the connection to host {re.escape(lost.ip)} \(ssh exited with code 255: "
                         r".*\); stopping the job", job.output), job.output[-3000:]
        assert "RuntimeWarning" not in job.output  # the agent starts without one (ssh's last words are ssh's)
        job.nothing_left(timeout=40)  # the cut-off host's agent gave up on its launcher too
    finally:
        subprocess.run(["ip", "link", "set", bed.veth(lost), "up"], check=True)
    job.nothing_left()


def test_a_killed_launcher_leaves_nothing_on_any_host(bed, launches):
    job = launches(f"{TRAIN} --num_epochs 1000")
    job.wait_for("epoch 0:")
    launcher = [p for p in job.pids() if b"cli.main" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert len(launcher) == 1
    os.kill(launcher[0], signal.SIGKILL)
    job.nothing_left()


def test_a_stopped_launcher_keeps_its_job_on_every_host(bed, launches):
    """Stopped (SIGSTOP) past the agents' silence, the launcher sends no heartbeat: each agent asks its ssh
    connection, which the launcher's kernel still answers, and keeps its processes; the job
    goes on once the launcher runs, and still ends when it is killed."""
    job = launches(f"{TRAIN} --num_epochs 1000")
    job.wait_for("epoch 1:")
    launcher = [p for p in job.pids() if b"cli.main" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert len(launcher) == 1
    running = sorted(job.pids())
    os.kill(launcher[0], signal.SIGSTOP)
    try:
        time.sleep(SILENCE_SECONDS + 5)
        assert sorted(job.pids()) == running, job.output[-3000:]  # every host's servers and trainers
    finally:
        os.kill(launcher[0], signal.SIGCONT)
    seen = len(job.lines)
    deadline = time.monotonic() + 120
    while not any("epoch" in line for line in job.lines[seen:]):  # training goes on, and is relayed
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output[-3000:]
        time.sleep(0.1)
    assert "is gone" not in job.output
    os.kill(launcher[0], signal.SIGKILL)
    job.nothing_left()


def test_a_killed_server_ends_the_job_naming_its_host(bed, launches):
    job = launches(f"{TRAIN} --num_epochs 1000")
    job.wait_for("epoch 0:")
    servers = {int(open(f"/proc/{p}/environ", "rb").read().split(b"DISTGRAPH_MACHINE_ID=")[1].split(b"\0")[0]): p
               for p in job.pids("server")}
    os.kill(servers[1], signal.SIGKILL)
    assert job.wait(90) != 0, job.output[-3000:]
    assert re.search(rf"\[launch\] 1/server/0 on {re.escape(bed.hosts[1].ip)} exited with code", job.output), \
        job.output[-3000:]
    job.nothing_left()


def test_a_missing_or_stale_partition_on_one_host_stops_the_launch_before_anything_starts(bed, launches,
                                                                                           tmp_path):
    missing = bed.hosts[1].workspace / "data" / "part1" / "indptr.npy"
    config = bed.hosts[2].workspace / "data" / "g.json"
    saved = missing.read_bytes(), config.read_text()
    try:
        missing.unlink()
        job = launches(TRAIN)
        assert job.wait(60) == 2, job.output
        assert f"host {bed.hosts[1].ip}: partition file data/part1/indptr.npy is missing" in job.output
        assert "nothing was started" in job.output and "serving" not in job.output
        missing.write_bytes(saved[0])
        other = tmp_path / "other"  # the same graph partitioned another way: as if host 2 kept an old copy
        partition_graph(generate_sbm(6000, 60000, num_classes=4, feat_dim=16, seed=3), "g", 3, other,
                        part_method="random")
        config.write_text((other / "g.json").read_text())
        stale = launches(TRAIN)
        assert stale.wait(60) == 2, stale.output
        assert f"host {bed.hosts[2].ip}: data/g.json is another partitioning than the launcher's" in stale.output
    finally:
        missing.write_bytes(saved[0])
        config.write_text(saved[1])


def test_a_peer_without_the_job_secret_is_refused_and_no_secret_is_on_a_command_line(bed, launches):
    job = launches(f"{TRAIN} --num_epochs 1000")
    job.wait_for("epoch 0:")
    target = bed.hosts[1]
    sock = zmq.Context.instance().socket(zmq.DEALER)  # from this machine, outside the job
    sock.linger = 0
    monitor = sock.get_monitor_socket()
    sock.connect(f"tcp://{target.ip}:{bed.port}")
    sock.send_multipart([b'\x82\xa2op\xa4ping\xa3rid\x01'])
    assert not sock.poll(3000)  # no operation, not even a ping
    events = []
    while monitor.poll(200):
        events.append(recv_monitor_message(monitor)["event"])
    sock.disable_monitor()
    monitor.close(linger=0)
    sock.close()
    assert zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL in events or zmq.EVENT_HANDSHAKE_FAILED_AUTH in events, events

    secrets_seen = set()
    for pid in job.pids():
        for item in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
            if item.startswith(b"DISTGRAPH_SECRET="):
                secrets_seen.add(item.split(b"=", 1)[1])
    assert len(secrets_seen) == 1  # one secret, in the environment of every process on every host
    secret = secrets_seen.pop()
    for entry in os.scandir("/proc"):  # including the ssh clients and the agents of the remote hosts
        if entry.name.isdigit():
            try:
                assert secret not in open(f"/proc/{entry.name}/cmdline", "rb").read()
            except OSError:
                continue
    for h in bed.hosts:  # servers listen on their ip_config address only (the host's other one is loopback)
        ss = subprocess.run(["ip", "netns", "exec", h.name, "ss", "-Hltnp"], capture_output=True, text=True).stdout
        servers = [line.split()[3] for line in ss.splitlines() if f":{bed.port}" in line.split()[3]]
        assert servers == [f"{h.ip}:{bed.port}"], ss
    job.proc.kill()  # the ssh session ends: the launcher on host 0 stops the job and sweeps every host
    job.nothing_left()


def test_distributed_kge_on_three_hosts_and_a_killed_trainer(bed, tmp_path):
    """kge partition -> distgraph copy -> kge dist-train over ssh from machine 0; then a
    trainer SIGKILLed mid-run ends the job naming it, leaving nothing behind."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kge"))
    from test_kge_train import planted_pairs

    files = planted_pairs(tmp_path, n=600, held_out=60)
    data = ["--dataset", "planted", "--format", "raw_udd_hrt", "--data_files", *files]
    partition_and_copy_kg(bed, tmp_path, data)

    def dist_train(session: str, steps: int) -> subprocess.Popen:
        line = (f"cd {WORKSPACE} && DISTGRAPH_SESSION={session} OMP_NUM_THREADS=1 {PY} -m distgraph.cli.main kge "
                f"dist-train {' '.join(data)} --data_path {WORKSPACE} --path {WORKSPACE} --ip_config ip_config.txt "
                f"--num_client_proc 1 --ssh_config {bed.ssh_config} --model_name TransE_l2 --hidden_dim 32 "
                f"--gamma 4 --lr 0.3 --batch_size 128 --neg_sample_size 32 -adv --max_step {steps} "
                f"--log_interval 100 --batch_size_eval 64 --test --save_path ckpts")
        return subprocess.Popen(bed.ssh_argv(bed.hosts[0], line), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, stdin=subprocess.DEVNULL)

    done = dist_train(new_session(), 300)
    out = done.communicate(timeout=300)[0]
    assert done.returncode == 0, out[-3000:]
    mrr = float(re.search(r"Test average MRR : ([\d.]+)", out).group(1))
    assert mrr > 0.9 and "[2][Train](300/300)" in out, out[-3000:]
    assert list((bed.hosts[0].workspace / "ckpts").glob("TransE_l2_planted_*/planted_TransE_l2_entity.npy"))

    session = new_session()
    job = dist_train(session, 100000)
    job_view = Launch.__new__(Launch)  # reuse its process and shared-memory checks for this session
    job_view.bed, job_view.session, job_view.lines = bed, session, []
    deadline = time.monotonic() + 120
    while not job_view.pids("trainer") or len(job_view.pids("trainer")) < 3:
        assert time.monotonic() < deadline and job.poll() is None
        time.sleep(0.1)
    time.sleep(2)
    victim = job_view.pids("trainer")[-1]
    machine = open(f"/proc/{victim}/environ", "rb").read().split(b"DISTGRAPH_MACHINE_ID=")[1].split(b"\0")[0].decode()
    os.kill(victim, signal.SIGKILL)
    out = job.communicate(timeout=90)[0]
    assert job.returncode != 0
    assert re.search(rf"\[launch\] {machine}/trainer/{machine}( on {re.escape(bed.hosts[int(machine)].ip)})? "
                     r"exited with code", out), out[-3000:]
    job_view.nothing_left()


def test_a_handshake_captured_on_the_wire_opens_no_other_server(bed, launches):
    """Machine 0's trainer's connection to machine 1's server, captured on host 0's link as
    tcpdump would, replayed byte for byte from outside the job: to machine 2's server and to
    machine 1's again. Both refuse the handshake; not a single request is answered."""
    client, target, other = bed.hosts
    capture = Capture(bed.veth(client), bed.port)
    try:
        job = launches(f"{TRAIN} --num_epochs 1000")
        job.wait_for("epoch 0:")
    finally:
        streams = capture.close()
    recorded = [data for (src, _, dst), data in streams.items()
                if src == client.ip and dst == target.ip and b"PLAIN" in data and b"INITIATE" in data]
    assert recorded, sorted(streams)
    for host in (other, target):  # another server of the job; the same server, later
        got = replay(recorded[0], (host.ip, bed.port))
        assert got.endswith(ZAP_REFUSAL), (host.ip, got[-60:])
    job.proc.kill()
    job.nothing_left()


def test_training_on_three_hosts_survives_a_lossy_link(bed, launches):
    """5% of host 1's packets dropped each way (nftables `numgen random`; the kernel has no
    netem): TCP retransmits, the job trains to the end and leaves nothing behind."""
    host = bed.hosts[1]
    rules = ["add table inet dgloss",
             "add chain inet dgloss in { type filter hook input priority 0 ; }",
             "add chain inet dgloss out { type filter hook output priority 0 ; }",
             "add rule inet dgloss in numgen random mod 100 < 5 counter drop",
             "add rule inet dgloss out numgen random mod 100 < 5 counter drop"]
    for rule in rules:
        subprocess.run(["ip", "netns", "exec", host.name, "nft", rule], check=True)
    try:
        job = launches(f"{TRAIN} --num_epochs 4")
        assert job.wait(600) == 0, job.output[-4000:]
        dropped = subprocess.run(["ip", "netns", "exec", host.name, "nft", "list", "table", "inet", "dgloss"],
                                 capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["ip", "netns", "exec", host.name, "nft", "delete", "table", "inet", "dgloss"])
    assert sum(int(n) for n in re.findall(r"counter packets (\d+)", dropped)) > 20, dropped
    assert re.search(r"\[0/trainer/0\] best val acc [\d.]+ at epoch \d+; test acc ([\d.]+)", job.output)
    job.nothing_left()


def test_three_hosts_resume_bitwise(bed, launches):
    """Checkpoints on 3 hosts without a shared file system (each host keeps its own pieces):
    a run resumed from its next-to-last checkpoint ends with the uninterrupted run's model."""
    command = f"{TRAIN} --num_epochs 3 --checkpoint_dir {WORKSPACE}/ck"
    whole = launches(command)
    assert whole.wait(300) == 0, whole.output[-4000:]
    for h in bed.hosts:  # every host's copy, as a run stopped before its last checkpoint left it
        bed.ssh(h, f"rm -rf {WORKSPACE}/ck2 && cp -a {WORKSPACE}/ck {WORKSPACE}/ck2 && rm -rf {WORKSPACE}/ck2/step-0000000002")
    resumed = launches(command.replace("/ck", "/ck2") + " --resume")
    assert resumed.wait(300) == 0, resumed.output[-4000:]
    assert resumed.output.count("resumed from") == 3, resumed.output[-3000:]
    digests = [re.findall(r"model digest ([0-9a-f]{16})", job.output) for job in (whole, resumed)]
    assert len(digests[0]) == 1 and digests[0] == digests[1], digests
    for h in bed.hosts:
        bed.ssh(h, f"rm -rf {WORKSPACE}/ck {WORKSPACE}/ck2")

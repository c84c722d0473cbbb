"""Test hosts on this machine: network namespaces on a bridge, each with its own address, its
own sshd (keys made for the test bed) and a private view of the workspace folder and of
/dev/shm (a mount namespace), so nothing works on a host unless it was really copied there,
and a temporary folder of its own (its sessions' TMPDIR).

Needs root, `ip netns` and sshd (`apt-get install openssh-server`, which `make test-cluster`
runs when sshd is missing). Everything is removed again on exit, even after a failure.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

WORKSPACE = "/srv/distgraph-testbed"  # the same path on every host; each host sees its own folder there
SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """Why the test bed cannot be built here, or None if it can."""
    if os.geteuid() != 0:
        return "the multi-host test bed needs root (network and mount namespaces)"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode:
        return "the multi-host test bed needs `ip netns` (iproute2)"
    if not os.path.exists(SSHD):
        return "the multi-host test bed needs sshd: apt-get install openssh-server (make test-cluster does it)"
    return None


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


_BIND = "import socket, sys; s = socket.socket(); s.bind((sys.argv[1], int(sys.argv[2]))); print(s.getsockname()[1])"


def _probe(host: "Host", port: int) -> int:
    """`port` if it is free on `host` (0: any the OS gives), else -1; asked inside its namespace."""
    done = subprocess.run(["ip", "netns", "exec", host.name, sys.executable, "-c", _BIND, host.ip, str(port)],
                          capture_output=True, text=True)
    return int(done.stdout) if done.returncode == 0 else -1


@dataclass
class Host:
    name: str  # network namespace
    ip: str
    root: Path  # its private files: workspace, host key, sshd config
    sshd: subprocess.Popen | None = None

    @property
    def workspace(self) -> Path:
        """This host's workspace as seen from outside (WORKSPACE inside it)."""
        return self.root / "workspace"

    @property
    def tmp(self) -> Path:
        """This host's temporary folder (TMPDIR of every session), not this machine's /tmp: what a
        job leaves there (a failed job's tracebacks) goes with the test bed."""
        return self.root / "tmp"

    @property
    def shm(self) -> Path:
        """This host's /dev/shm, seen through its sshd's mount namespace."""
        return Path(f"/proc/{self.sshd.pid}/root/dev/shm")


class Started:
    """A context manager for something a subclass starts in `_start()` and ends in `close()`;
    a failed start closes what it got to."""

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TestBed(Started):
    """`n` hosts `10.213.<net>.11 ...` on a bridge whose own address (this machine) is `.1`."""

    def __init__(self, n: int, root: Path):
        self.net = random.randrange(1, 250)
        self.tag = f"dg{os.getpid() % 10000}x{self.net}"
        self.root = root
        self.bridge = f"{self.tag}b"
        self.hosts = [Host(f"{self.tag}h{i}", f"10.213.{self.net}.{11 + i}", root / f"h{i}") for i in range(n)]
        self.key = root / "client_key"
        self.ssh_config = root / "ssh_config"

    def _start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.makedirs(WORKSPACE, exist_ok=True)
        os.makedirs("/run/sshd", exist_ok=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        self.ssh_config.write_text(f"Host 10.213.{self.net}.*\n  IdentityFile {self.key}\n  User root\n"
                                   f"  UserKnownHostsFile {self.root / 'known_hosts'}\n  LogLevel ERROR\n")
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"10.213.{self.net}.1/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for i, h in enumerate(self.hosts):
            (h.workspace).mkdir(parents=True)
            h.tmp.mkdir(mode=0o1777)
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(h.root / "host_key"))
            (h.root / "sshd_config").write_text(
                f"Port 22\nListenAddress {h.ip}\nHostKey {h.root / 'host_key'}\n"
                f"AuthorizedKeysFile {self.key}.pub\nPermitRootLogin prohibit-password\n"
                f"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                f"PidFile {h.root / 'sshd.pid'}\nLogLevel ERROR\nMaxStartups 100\nMaxSessions 100\n"
                f"SetEnv TMPDIR={h.tmp}\n")
            _run("ip", "netns", "add", h.name)
            veth = f"{self.tag}v{i}"
            _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.name)
            _run("ip", "link", "set", veth, "master", self.bridge, "up")
            for cmd in (("addr", "add", f"{h.ip}/24", "dev", "eth0"), ("link", "set", "eth0", "up"),
                        ("link", "set", "lo", "up")):
                _run("ip", "netns", "exec", h.name, "ip", *cmd)
            private = (f"mount --bind {h.workspace} {WORKSPACE} && mount -t tmpfs -o size=2g,mode=1777 tmpfs /dev/shm"
                       f" && exec {SSHD} -D -e -f {h.root / 'sshd_config'}")
            h.sshd = subprocess.Popen(["ip", "netns", "exec", h.name, "unshare", "--mount", "--propagation", "private",
                                       "sh", "-c", private], stdout=subprocess.DEVNULL,
                                      stderr=open(h.root / "sshd.log", "wb"), start_new_session=True)
        deadline = time.monotonic() + 30
        for h in self.hosts:
            while self.ssh(h, "true", check=False).returncode != 0:
                if time.monotonic() > deadline or h.sshd.poll() is not None:
                    raise RuntimeError(f"sshd of test host {h.ip} did not start: {(h.root / 'sshd.log').read_text()}")
                time.sleep(0.1)
        self.port = self._free_port()  # the jobs' first port on every host

    def _free_port(self) -> int:
        """A TCP port the OS gives on host 0's address inside its namespace, checked free on every
        host (each namespace is fresh, so the first one almost always is)."""
        while True:
            port = _probe(self.hosts[0], 0)
            if all(_probe(h, port) == port for h in self.hosts[1:]):
                return port

    def veth(self, host: Host) -> str:
        return f"{self.tag}v{self.hosts.index(host)}"

    def ssh_argv(self, host: Host, command: str) -> list[str]:
        return ["ssh", "-F", str(self.ssh_config), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                host.ip, command]

    def ssh(self, host: Host, command: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(self.ssh_argv(host, command), capture_output=True, text=True, check=check,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def close(self) -> None:
        """Remove every process, namespace, interface and file of the test bed."""
        for h in self.hosts:
            if h.sshd is not None and h.sshd.poll() is None:
                try:
                    os.killpg(h.sshd.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                h.sshd.wait()
        for h in self.hosts:  # whatever still runs in a host (its sshd's sessions left their process group)
            pids = subprocess.run(["ip", "netns", "pids", h.name], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", h.name], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


class Capture:
    """What a passive observer of one host's link sees (tcpdump on its veth): the payload of
    every TCP segment that host sends to `port`, collected in a thread until `close()`."""

    def __init__(self, interface: str, port: int):
        self.port = port
        self.segments: dict[tuple[str, int, str], dict[int, bytes]] = {}  # (src, sport, dst) -> seq -> payload
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
        self.sock.bind((interface, 0))
        self.sock.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self.sock.recv(65536)
            except socket.timeout:
                continue
            if frame[12:14] != b"\x08\x00" or frame[23] != 6:  # IPv4, TCP
                continue
            ip = frame[14:]
            tcp = ip[(ip[0] & 0xF) * 4:]
            total = int.from_bytes(ip[2:4], "big")
            payload = tcp[(tcp[12] >> 4) * 4:total - (ip[0] & 0xF) * 4]
            if int.from_bytes(tcp[2:4], "big") != self.port or not payload:
                continue
            key = (socket.inet_ntoa(ip[12:16]), int.from_bytes(tcp[0:2], "big"), socket.inet_ntoa(ip[16:20]))
            self.segments.setdefault(key, {})[int.from_bytes(tcp[4:8], "big")] = payload

    def close(self) -> dict[tuple[str, int, str], bytes]:
        """Each captured connection's client bytes, in order (retransmissions counted once)."""
        self._stop.set()
        self._thread.join()
        self.sock.close()
        streams = {}
        for key, by_seq in self.segments.items():
            data, next_seq = bytearray(), None
            for seq in sorted(by_seq):
                if next_seq is None or seq == next_seq:
                    data += by_seq[seq]
                    next_seq = (seq + len(by_seq[seq])) & 0xFFFFFFFF
            streams[key] = bytes(data)
        return streams


def partition_and_copy_kg(bed: TestBed, root: Path, data: list[str]) -> None:
    """`kge partition` of the KG in `root` (`data`: its --dataset, --format and --data_files
    flags) into a part per host, an ip_config.txt of the hosts, and `distgraph copy` of both to
    every host's workspace, as a user would from their own computer."""
    def cli(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "distgraph.cli.main", *args], cwd=root, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    cli("kge", "partition", *data, "--data_path", str(root), "-k", str(len(bed.hosts)))
    (root / "ip_config.txt").write_text("".join(f"{h.ip} {bed.port} 1\n" for h in bed.hosts))
    cli("copy", "--ip_config", "ip_config.txt", "--workspace", WORKSPACE, "--rel_data_path", "planted/partitions",
        "--part_config", "planted/partitions/planted.json", "--ssh_config", str(bed.ssh_config))

"""Lifelines end a process when its starter is gone, and only then: the end of the pipe
counts, a silence only when the connection to the starter's host stops answering too
(`tcp_link`), which a stopped or busy starter's kernel keeps answering."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from distgraph.cluster.tcp_link import ESTABLISHED, GIVE_UP_RETRANSMITS, reaches_peer, socket_state


def _watcher(timeout: str, answers: str) -> subprocess.Popen:
    """A process watching a lifeline (its stdin) with `timeout`; `reachable()` returns the
    successive values of `answers` ("1": reachable, "0": not), then True."""
    code = textwrap.dedent(f"""
        import sys, time
        from distgraph.cluster.lifeline import watch
        answers = list({answers!r})
        def reachable():
            print("asked", flush=True)
            return not answers or answers.pop(0) == "1"
        watch(0, {timeout}, "test process", "its starter", reachable=None if {answers!r} == "none" else reachable)
        print("watching", flush=True)
        time.sleep(60)
    """)
    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    os.close(r)
    proc.starter_fd = w
    assert proc.stdout.readline() == "watching\n"
    return proc


def _end(proc: subprocess.Popen, timeout: float = 30) -> tuple[int, str, str]:
    """Exit code, output and error output of a watcher, once it ends (killed after `timeout`)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.starter_fd >= 0:
            os.close(proc.starter_fd)
    return proc.returncode, out, err


def test_a_silent_starter_whose_host_answers_is_waited_for_and_its_end_is_noticed_at_once():
    proc = _watcher("0.3", "1111")  # 0.3 s silences, the host keeps answering
    time.sleep(2.5)
    assert proc.poll() is None  # several silences, not gone
    t0 = time.monotonic()
    os.close(proc.starter_fd)  # the starter dies: the kernel closes the pipe
    proc.starter_fd = -1
    code, out, err = _end(proc)
    assert code == 1 and time.monotonic() - t0 < 10  # at once, not after a silence
    assert out.count("asked") >= 4 and "its starter is gone (its lifeline closed); exiting" in err


def test_a_silent_starter_whose_connection_stopped_answering_is_gone():
    code, out, err = _end(_watcher("0.2", "110"))
    assert code == 1 and out.count("asked") == 3
    assert "its starter is gone (no heartbeat for 0.2 s and its connection stopped answering); exiting" in err


def test_without_a_connection_to_ask_a_silence_means_gone():
    code, out, err = _end(_watcher("0.2", "none"))
    assert code == 1 and "asked" not in out and "(no heartbeat for 0.2 s); exiting" in err


def _connected() -> tuple[socket.socket, socket.socket, socket.socket]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    client = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    return srv, client, peer


def test_socket_state_of_a_loopback_connection_both_ways():
    srv, client, peer = _connected()
    with srv, client, peer:
        here, there = client.getsockname(), client.getpeername()
        assert socket_state(here, there).state == ESTABLISHED
        assert socket_state(there, here).state == ESTABLISHED and socket_state(here, ("127.0.0.1", 1)) is None
        client.close()
        assert socket_state(here, there) is None or socket_state(here, there).state != ESTABLISHED


def test_a_stopped_peer_process_still_reaches_its_peer():
    """The kernel acknowledges for a process that reads nothing (stopped): reachable at once."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    peer = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\n"
                             f"c = socket.create_connection(('127.0.0.1', {srv.getsockname()[1]}))\n"
                             "print('connected', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        conn, _ = srv.accept()
        assert peer.stdout.readline() == "connected\n"
        os.kill(peer.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        assert reaches_peer(conn.getsockname(), conn.getpeername(), lambda: conn.send(b"x" * 4096), 20)
        assert time.monotonic() - t0 < 10  # acknowledged, not undecided at the deadline
        conn.close()
    finally:
        peer.kill()
        peer.wait()
        srv.close()


LOST = """
import socket, subprocess, time
from distgraph.cluster.tcp_link import reaches_peer, socket_state
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()
here, there = c.getsockname(), c.getpeername()
subprocess.run(["ip", "link", "set", "lo", "down"], check=True)  # the network drops: nothing is closed
print(reaches_peer(here, there, lambda: c.send(b"x" * 100), 60), socket_state(here, there).retransmits)
"""


def test_a_connection_whose_network_dropped_stops_answering():
    """In a network namespace of its own whose only link goes down, data is never acknowledged:
    resent GIVE_UP_RETRANSMITS times (a few seconds), the peer counts as unreachable."""
    try:
        done = subprocess.run(["unshare", "-n", sys.executable, "-c", LOST], capture_output=True, text=True,
                              timeout=120)
    except FileNotFoundError:
        pytest.skip("no unshare command")
    if done.returncode and ("Operation not permitted" in done.stderr or "unshare failed" in done.stderr):
        pytest.skip("cannot make a network namespace here (needs root)")
    assert done.returncode == 0, done.stderr
    reachable, retransmits = done.stdout.split()
    assert reachable == "False" and int(retransmits) >= GIVE_UP_RETRANSMITS


def test_a_closing_or_missing_socket_does_not_reach_its_peer(tmp_path):
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    line = "   0: 0100007F:1F90 0200007F:0050 {st} 00000000:00000000 00:00000000 {re:08X}     0        0 1 1\n"
    table = tmp_path / "tcp"
    here, there = ("127.0.0.1", 0x1F90), ("127.0.0.2", 0x50)
    for st, re, want in (("01", 0, True), ("08", 0, False), ("01", GIVE_UP_RETRANSMITS, False)):
        table.write_text(header + line.format(st=st, re=re))
        assert reaches_peer(here, there, lambda: None, 1.0, (str(table),)) is want, (st, re)
    assert socket_state(here, there, (str(table),)).retransmits == GIVE_UP_RETRANSMITS
    assert not reaches_peer(here, ("127.0.0.3", 80), lambda: None, 1.0, (str(table),))


def _agent(part_config, tmp_path, ssh_connection: str) -> subprocess.Popen:
    """An agent (as ssh starts it) told a lifeline timeout of 0.5 s, checked and waiting for `G`."""
    import json

    from .conftest import child_env

    job = {"session": "lifeline-test", "workspace": str(tmp_path), "host": "test-host", "lifeline_timeout": 0.5,
           "check": {"part_config": str(part_config), "fingerprint": None, "num_parts": 2, "machines": []},
           "processes": []}
    proc = subprocess.Popen([sys.executable, "-m", "distgraph.launch.agent"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(SSH_CONNECTION=ssh_connection))
    proc.stdin.write(json.dumps(job) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline()) == {"checked": True}
    return proc


def test_an_agent_waits_for_a_silent_launcher_whose_host_answers(parts, tmp_path):
    srv, client, peer = _connected()  # stands for the agent's ssh session: sshd's end is `peer`
    with srv, client, peer:
        (a, ap), (b, bp) = peer.getsockname(), peer.getpeername()
        agent = _agent(parts[2], tmp_path, f"{b} {bp} {a} {ap}")
        try:
            time.sleep(3)  # six silences of 0.5 s
            assert agent.poll() is None
            agent.stdin.close()  # the session ends
            assert agent.wait(30) == 1
            assert "the launcher is gone (its lifeline closed)" in agent.stderr.read()
            assert '{"probe": true}' in agent.stdout.read()  # traffic it made on the silent session
        finally:
            agent.kill()
            agent.wait()


def test_an_agent_whose_session_connection_is_gone_gives_up_after_the_silence(parts, tmp_path):
    agent = _agent(parts[2], tmp_path, "127.0.0.1 1 127.0.0.1 2")  # no such connection
    try:
        assert agent.wait(30) == 1
        assert "(no heartbeat for 0.5 s and its connection stopped answering)" in agent.stderr.read()
    finally:
        agent.kill()
        agent.wait()

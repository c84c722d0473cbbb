"""`distgraph partition` answers: Ctrl-C stops it during the METIS call and during KaMinPar's
(which hold the CPU in C) and leaves no folder it made; output that is not a terminal gets one
plain line per stage and no carriage returns; a second partitioning into a folder being
written is refused at once; a failed run into a folder holding an earlier partition leaves that
partition whole."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from distgraph.data import generate_sbm, save_npz
from distgraph.errors import PartitionError
from distgraph.partition import load_partition_book, partition_graph
from distgraph.partition.out_folder import output_folder

pytestmark = pytest.mark.multiprocess  # partitioning processes, interrupted


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A graph whose METIS call into 8 parts takes 1.5-2 s on an idle machine here (more when loaded)."""
    path = tmp_path_factory.mktemp("big") / "g.npz"
    save_npz(generate_sbm(300_000, 6_000_000, feat_dim=2, seed=0), path)
    return path


def _start(graph: Path, out: Path, *flags: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "distgraph.cli.main", "partition", "--input", str(graph), "--graph_name", "g",
            "--num_parts", "8", "--out", str(out), *flags]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_line(proc: subprocess.Popen, text: str, seen: list[str]) -> None:
    for line in proc.stderr:
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"never saw {text!r}: {''.join(seen)}")


@pytest.fixture(scope="module")
def whole_run(big, tmp_path_factory) -> tuple[str, str, Path, float]:
    """A partitioning run to its end, output not a terminal: (stdout, stderr, its folder, the
    seconds its METIS assignment took)."""
    out = tmp_path_factory.mktemp("whole") / "out"
    done = subprocess.run([sys.executable, "-m", "distgraph.cli.main", "partition", "--input", str(big),
                           "--graph_name", "g", "--num_parts", "8", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr, out, float(re.search(r"assign ([\d.]+) s", done.stdout).group(1))


@pytest.mark.parametrize("method", ["metis", "kaminpar"])
def test_ctrl_c_during_the_assignment_stops_at_once_and_leaves_no_folder(big, tmp_path, method, whole_run):
    out = tmp_path / "out"
    proc = _start(big, out, "--part_method", method)
    seen: list[str] = []
    _wait_for_line(proc, f"assign ({method})", seen)
    time.sleep(0.3)  # inside the C call
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == 130 and "interrupted" in err, "".join(seen) + err
    assert took < whole_run[3] / 2, (took, whole_run[3])  # before the C call could end (0.1-0.3 s against 4-11)
    assert not out.exists()


def test_plain_lines_off_a_terminal(whole_run):
    rest, stages, out, _ = whole_run
    assert "\r" not in stages and "partition g: started" in stages and "partition g: relabel and write (" in stages
    assert "partition g: done in" in stages and "edge cut:" in rest
    assert load_partition_book(out / "g.json").num_partitions() == 8
    assert not (out / ".distgraph.lock").exists()


def test_a_second_run_into_a_folder_being_written_is_refused(big, tmp_path):
    out = tmp_path / "out"
    first = _start(big, out)
    _wait_for_line(first, "assign (metis)", [])
    second = _start(big, out)
    _, err2 = second.communicate(timeout=120)
    assert second.returncode == 2 and "another partitioning is writing into" in err2, err2
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=120)
    assert not out.exists()


def test_a_failed_run_keeps_the_earlier_partition_whole_and_removes_its_own_files(tmp_path):
    g = generate_sbm(300, 3000, feat_dim=2, seed=0)
    partition_graph(g, "g", 2, tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(RuntimeError, match="stopped"):
        with output_folder(tmp_path):
            (tmp_path / "part5").mkdir()
            np.save(tmp_path / "part5" / "node_feat.npy", np.zeros(3))  # a file of this run, named by no config
            np.save(tmp_path / "part0" / "stray.npy", np.zeros(3))
            raise RuntimeError("stopped")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert load_partition_book(tmp_path / "g.json").num_partitions() == 2
    with output_folder(tmp_path / "new"):
        with pytest.raises(PartitionError, match="another partitioning is writing"):
            with output_folder(tmp_path / "new"):
                pass

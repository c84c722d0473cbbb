"""The streaming partitioner stays under a memory cap that the in-memory path exceeds on the same
graph: a 2M-edge graph, each command in a cgroup limited to 260 MB (the in-memory METIS path peaks
near 340 MB here, streaming with KaMinPar near 180 MB, files' page cache included)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from memcap import run_capped, why_not

from distgraph.data.sbm_chunked import generate_sbm_chunked
from distgraph.partition import load_partition

pytestmark = [pytest.mark.multiprocess, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]
CAP = 260 << 20


def test_streaming_fits_a_cap_the_in_memory_path_exceeds(tmp_path):
    generate_sbm_chunked(tmp_path / "g", 200_000, 2_000_000, num_classes=16, feat_dim=4, feat_dtype="float32",
                         progress=False)

    def partition(out: str, *flags: str):
        argv = [sys.executable, "-m", "distgraph.cli.main", "partition", "--input", str(tmp_path / "g"),
                "--graph_name", "g", "--num_parts", "4", "--out", str(tmp_path / out), *flags]
        return run_capped(argv, CAP, capture_output=True, text=True, timeout=600)

    streamed, peak = partition("stream", "--memory_budget", "0.01")  # too large for the budget: streaming
    assert streamed.returncode == 0, streamed.stderr[-2000:]
    assert "kaminpar streaming" in streamed.stdout and peak <= CAP
    assert load_partition(tmp_path / "stream" / "g.json", 3).num_inner_nodes > 0
    in_memory, _ = partition("memory", "--part_method", "metis", "--memory_budget", "100")
    assert "metis as asked, in memory" in in_memory.stdout
    assert in_memory.returncode == -9, (in_memory.returncode, in_memory.stderr[-2000:])  # killed at the cap
    assert not (tmp_path / "memory" / "g.json").exists()

"""Which partitioner `distgraph partition` runs, and why it says so.

The in-memory path holds the whole graph and runs METIS with several balance constraints: the
best cuts, at about 170 bytes an edge at its peak (docs/benchmarks.md). The streaming path holds
per-node arrays and one bucket of edges, and runs KaMinPar on an undirected graph file (on its
clusters, for a large graph: stream/coarsen.py): a few bytes an edge, one combined balance weight. Without `--part_method`, a graph whose in-memory
path would fit the memory budget (an eighth of this machine's memory unless given) is partitioned
in memory with METIS, a larger one by streaming with KaMinPar.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import PartitionError

IN_MEMORY_BYTES_PER_EDGE = 170
IN_MEMORY_BYTES_PER_NODE = 64  # degrees, parts, the numbering and its inverse, the CSC's offsets
BUDGET_SHARE = 8  # the default budget: this machine's memory / BUDGET_SHARE


@dataclass(frozen=True)
class Choice:
    method: str  # metis | kaminpar | random
    streaming: bool
    why: str


def default_budget() -> int:
    """Bytes the partitioner may plan to use when not told: a share of this machine's memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // BUDGET_SHARE


def available_memory() -> int:
    """Bytes of memory this machine has free for a new job: the kernel's MemAvailable (what psutil
    reports, read here without importing it: a hundredth of a second of the command's start-up)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    import psutil  # a kernel without MemAvailable

    return psutil.virtual_memory().available


def choose(num_edges: int, num_nodes: int, requested: str | None, streamable: bool, in_memory_only: str | None,
           budget: int, available: int | None = None) -> Choice:
    """The partitioner for a graph of `num_nodes` nodes and `num_edges` edges: `requested` (a
    --part_method) or the automatic choice; `streamable`: the input can be read as a stream
    (.npz, chunked format); `in_memory_only`: why this run needs the whole graph in memory (an
    option), if it does. A graph the in-memory path would run out of this machine's memory with
    (`available`) is refused before the kernel's OOM killer can end the run with no word."""
    need = IN_MEMORY_BYTES_PER_EDGE * num_edges + IN_MEMORY_BYTES_PER_NODE * num_nodes
    fits = need <= budget
    size = (f"{num_nodes:,} nodes and {num_edges:,} edges need about {need / 2**30:.1f} GiB in memory, the budget "
            f"is {budget / 2**30:.1f} GiB")
    available = available_memory() if available is None else available
    if need > available and (not streamable or in_memory_only is not None):
        hint = (f"the node ids run up to {num_nodes - 1:,} for {num_edges:,} edges: ids are used as they are, so "
                f"renumber the nodes from 0 (or write them as strings)" if num_nodes > 16 * max(num_edges, 1) else
                f"{in_memory_only or 'this input is read whole'}: write it as a chunked folder (distgraph can stream "
                f"it) or partition across hosts (--ip_config)")
        raise PartitionError(f"partitioning in memory needs about {need / 2**30:.1f} GiB and this machine has "
                             f"{available / 2**30:.1f} GiB available ({num_nodes:,} nodes, {num_edges:,} edges); "
                             f"{hint}")
    if requested is not None:
        streaming = streamable and in_memory_only is None and (requested == "kaminpar" or not fits)
        where = "streaming" if streaming else "in memory"
        return Choice(requested, streaming, f"{requested} as asked, {where} ({size})")
    if fits or not streamable or in_memory_only:
        method = "metis" if fits else "kaminpar"
        reason = ("it fits" if fits else
                  f"{in_memory_only or 'this input is read whole'}, and kaminpar needs less memory than METIS")
        return Choice(method, False, f"{method} in memory: {reason} ({size})")
    return Choice("kaminpar", True, f"kaminpar streaming: the graph is too large for the in-memory METIS path "
                                    f"({size}); --part_method metis and --memory_budget override this")


def choose_cluster(num_edges: int, requested: str | None, num_hosts: int) -> Choice:
    """The assignment of a distributed partitioning, which runs on the coordinating host over the
    graph's undirected ParHIP file (assembled from the hosts' pieces): KaMinPar unless asked
    otherwise, as it needs the least memory there."""
    where = f"the edges on {num_hosts} hosts, the assignment on this one"
    if requested is not None:
        return Choice(requested, True, f"{requested} as asked ({where})")
    return Choice("kaminpar", True, f"kaminpar ({where}: of the partitioners it needs the least memory per edge, "
                                    f"{num_edges:,} edges); --part_method metis or random overrides this")

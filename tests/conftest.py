"""Shared fixtures: small seeded graphs, a one-thread torch (the CI machine has 2 cores), and
a check that the whole suite leaves no process and no shared-memory segment behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from leaks import child_processes, shm_entries

from distgraph.data import generate_mag, generate_sbm

torch.set_num_threads(1)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def sbm():
    return generate_sbm(3000, 30000, num_classes=6, feat_dim=8, seed=1)


@pytest.fixture(scope="session")
def mag():
    return generate_mag(1200, 900, 40, 80, num_classes=5, feat_dim=8, seed=2)


@pytest.fixture(scope="session")
def block():
    """One typed block of a small MAG-shaped graph: several relations, 40 papers and 10 institutions as seeds."""
    import distgraph as dgl

    g = generate_mag(300, 200, 20, 40, seed=3)
    sampler = dgl.dataloading.NeighborSampler([{"writes": 3, "cites": 4, "affiliated_with": 2, "has_topic": 2}])
    _, _, (b,) = sampler.sample(g, {"paper": torch.arange(40), "institution": torch.arange(10)},
                                generator=torch.Generator().manual_seed(0))
    assert len({int(t) for t in b.edge_type()}) >= 3 and b.num_edges() > 100
    return b


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """After the whole suite: no child process alive, no new /dev/shm entry."""
    before = shm_entries()
    yield
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (child_processes() or shm_entries() - before):
        time.sleep(0.1)
    children = [f"{c.pid} {' '.join(c.cmdline()[:4])}" for c in child_processes()]
    assert not children, f"processes left behind: {children}"
    assert not shm_entries() - before, f"shared memory left behind: {sorted(shm_entries() - before)}"

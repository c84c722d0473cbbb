"""Shared fixtures: small seeded graphs and a one-thread torch (the CI machine has 2 cores)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from distgraph.data import generate_mag, generate_sbm

torch.set_num_threads(1)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def sbm():
    return generate_sbm(3000, 30000, num_classes=6, feat_dim=8, seed=1)


@pytest.fixture(scope="session")
def mag():
    return generate_mag(1200, 900, 40, 80, num_classes=5, feat_dim=8, seed=2)

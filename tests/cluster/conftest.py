"""The multi-host test bed (`testbed.py`), built once for the tests of this folder, which
`make test-cluster` runs (and `.ci/run` when it runs as root). They skip, saying why, where
the test bed cannot be built."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from testbed import TestBed, available  # noqa: E402

from distgraph.data import generate_sbm  # noqa: E402
from distgraph.partition import partition_graph  # noqa: E402

HOSTS = 3


@pytest.fixture(scope="session")
def bed(tmp_path_factory):
    why = available()
    if why is not None:
        pytest.skip(why)
    before = set(Path(tempfile.gettempdir()).glob("distgraph-*.log"))
    with TestBed(HOSTS, tmp_path_factory.mktemp("testbed")) as tb, pytest.MonkeyPatch.context() as env:
        # commands the tests start on this machine (a launcher among them) keep their temporary
        # files, a failed job's traceback log included, in a folder of the test run
        env.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmp-here")))
        yield tb
    # a failed job's tracebacks went to temporary folders of the test run, which pytest removes
    assert set(Path(tempfile.gettempdir()).glob("distgraph-*.log")) <= before


@pytest.fixture(scope="session")
def source(tmp_path_factory, bed):
    """A job as a user prepares it on their own computer: a 3-part partition and an ip_config."""
    root = tmp_path_factory.mktemp("source")
    g = generate_sbm(6000, 60000, num_classes=4, feat_dim=16, seed=3)
    partition_graph(g, "g", HOSTS, root / "parts", part_method="metis", balance_ntypes=None)
    (root / "ip_config.txt").write_text("".join(f"{h.ip} {bed.port}\n" for h in bed.hosts))
    return root

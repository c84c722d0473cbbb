"""Files a job writes hold its user's model and data (checkpoints, partitions, embeddings,
copied workspaces): they are created readable by their owner only (files 0600, folders
0700), whatever the user's umask, as the job's shared-memory segments are."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

JOB_UMASK = 0o077


def make_private() -> None:
    """Give this process, and every process it starts, the job's umask (command-line entry
    points, servers and hosts' agents call it first)."""
    os.umask(JOB_UMASK)


@contextmanager
def private_files() -> Iterator[None]:
    """Create what is written inside readable by its owner only (library calls from a user's
    own process, whose umask is the user's)."""
    old = os.umask(JOB_UMASK)
    try:
        yield
    finally:
        os.umask(old)

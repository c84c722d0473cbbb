"""An entity table larger than the memory a job may use trains bucket by bucket: under a cgroup
cap of 450 MiB, a KG whose entity table and Adagrad state take 606 MB trains with 16 entity
partitions on disk, and the same command with the table in memory is killed at the cap."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from memcap import run_capped, why_not

pytestmark = [pytest.mark.multiprocess, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]
CAP = 450 << 20
ENTITIES, DIM = 1_500_000, 100


def _kg(folder: Path) -> Path:
    """udd_hrt files of ENTITIES entities, 10 relations and 200,000 random triples."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    ids = np.arange(ENTITIES).astype(str)
    (folder / "entities.dict").write_text("\n".join(np.char.add(np.char.add(ids, "\te"), ids)) + "\n")
    (folder / "relations.dict").write_text("".join(f"{i}\tr{i}\n" for i in range(10)))
    triples = np.stack([rng.integers(0, ENTITIES, 200_000), rng.integers(0, 10, 200_000),
                        rng.integers(0, ENTITIES, 200_000)], 1)
    np.savetxt(folder / "train.txt", triples, fmt="%d", delimiter="\t")
    return folder


def test_a_table_larger_than_the_cap_trains_on_disk_and_not_in_memory(tmp_path):
    data = _kg(tmp_path / "kg")
    assert ENTITIES * (DIM + 1) * 4 > CAP  # the table and its Adagrad state alone exceed the cap

    def train(*flags: str):
        argv = [sys.executable, "-m", "distgraph.cli.main", "kge", "train", "--model_name", "TransE_l2", "--dataset",
                "kg", "--format", "udd_hrt", "--data_path", str(data), "--data_files", "entities.dict",
                "relations.dict", "train.txt", "--hidden_dim", str(DIM), "--max_step", "20", "--batch_size", "500",
                "--neg_sample_size", "50", "--no_save_emb", "--save_path", str(tmp_path / "save"), *flags]
        # the run killed at the cap cannot remove its temporary folder: keep it under tmp_path
        env = {**os.environ, "TMPDIR": str(tmp_path)}
        return run_capped(argv, CAP, capture_output=True, text=True, timeout=600, env=env)

    on_disk, peak = train("--num_entity_partitions", "16")
    assert on_disk.returncode == 0, on_disk.stderr[-2000:]
    assert "on disk in 16 partitions" in on_disk.stdout and "training takes" in on_disk.stdout and peak <= CAP
    in_memory, _ = train()
    assert in_memory.returncode == -9, (in_memory.returncode, in_memory.stderr[-2000:])  # killed at the cap
    assert list(tmp_path.glob("distgraph-kge-*")), "the killed run's partition is not under tmp_path"

"""Checkpoints: tensors with their server-side optimiser state (Adagrad sums, Adam moments and
step counts) and each trainer's own state save and load; a resumed run continues exactly as
the uninterrupted one; a checkpoint loads onto another number of servers per machine but not
onto another partitioning; an incomplete or damaged checkpoint loads nothing."""

import os
import stat
import json
import sys

import pytest
import torch

from distgraph.errors import InputError
from distgraph.optim import SparseAdagrad, SparseAdam
from distgraph.partition import partition_graph

from .conftest import NUM_NODES, SCRIPTS


def _tables(dist):
    emb = dist.DistEmbedding(NUM_NODES, 8, "emb", init_func=dist.Uniform(-0.5, 0.5, seed=3))
    emb2 = dist.DistEmbedding(NUM_NODES, 4, "emb2", init_func=dist.Normal(0.0, 0.1, seed=4))
    counts = dist.DistTensor((NUM_NODES, 2), torch.int64, "counts", init_func=dist.Zeros(), persistent=True)
    return emb, emb2, counts


def _train(emb, emb2, counts, steps, seed):
    """Sparse steps touching rows of every machine, through both optimisers."""
    adagrad, adam = SparseAdagrad([emb], lr=0.1), SparseAdam([emb2], lr=0.05)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        ids = torch.randint(0, NUM_NODES, (400,), generator=gen)
        ((emb(ids) ** 2).sum() + (emb2(ids) - 1).pow(2).sum()).backward()
        adagrad.step()
        adam.step()
        counts[ids] = counts[ids] + 1


def _values(emb, emb2, counts):
    every = torch.arange(NUM_NODES)
    return emb.weight[every], emb2.weight[every], counts[every]


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_standalone_resume_equals_an_uninterrupted_run(parts, runtime, tmp_path):
    runtime.initialize(part_config=str(parts[1]))
    tables = _tables(runtime)
    _train(*tables, steps=3, seed=0)
    state = {"step": 3, "rng": torch.get_rng_state(), "note": "after three steps"}
    old_umask = os.umask(0o022)  # a user's permissive umask: the checkpoint is still theirs alone
    try:
        path = runtime.save_checkpoint(tmp_path / "ck", tables, state)
    finally:
        os.umask(old_umask)
    assert (path / "checkpoint.json").is_file() and (path / "trainer-0.pt").is_file()
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [path, *path.rglob("*")]}
    assert len(modes) > 3 and all(m == (0o700 if (path / n).is_dir() or n == path.name else 0o600)
                                  for n, m in modes.items()), modes
    saved = _values(*tables)
    _train(*tables, steps=4, seed=1)
    uninterrupted = _values(*tables)
    assert not _same(saved, uninterrupted)

    got = runtime.load_checkpoint(path, tables)
    assert got["step"] == 3 and got["note"] == "after three steps" and torch.equal(got["rng"], state["rng"])
    assert _same(_values(*tables), saved)
    _train(*tables, steps=4, seed=1)
    assert _same(_values(*tables), uninterrupted)  # bitwise: the optimiser state came back too

    with pytest.raises(InputError, match="already holds a complete checkpoint"):
        runtime.save_checkpoint(path, tables)


def test_incomplete_damaged_and_foreign_checkpoints_load_nothing(parts, runtime, tmp_path, graph):
    runtime.initialize(part_config=str(parts[1]))
    tables = _tables(runtime)
    _train(*tables, steps=2, seed=0)
    path = runtime.save_checkpoint(tmp_path / "ck", tables)
    _train(*tables, steps=2, seed=1)
    before = _values(*tables)
    manifest = json.loads((path / "checkpoint.json").read_text())

    (path / "checkpoint.json").rename(path / "aside.json")  # as if the run died before publishing it
    with pytest.raises(InputError, match="is incomplete"):
        runtime.load_checkpoint(path, tables)
    (path / "aside.json").rename(path / "checkpoint.json")

    piece = path / manifest["tensors"]["emb2"]["pieces"][0]["files"]["adam.v"][0]
    piece.write_bytes(piece.read_bytes()[:-8])  # damaged after the rows of emb were found intact
    with pytest.raises(InputError, match="adam.v.npy has .* bytes, the checkpoint recorded"):
        runtime.load_checkpoint(path, tables)
    assert _same(_values(*tables), before)  # nothing was changed, not even the intact tensors

    with pytest.raises(InputError, match="has no tensor 'other'"):
        runtime.load_checkpoint(path, [runtime.DistTensor((NUM_NODES, 1), torch.float32, "other")])


def test_a_checkpoint_refuses_another_partitioning(parts, runtime, tmp_path, graph):
    runtime.initialize(part_config=str(parts[1]))
    tables = _tables(runtime)
    path = runtime.save_checkpoint(tmp_path / "ck", tables)
    manifest = json.loads((path / "checkpoint.json").read_text())
    manifest["partition"]["fingerprint"] = "0123456789abcdef"  # as if taken on another partitioning
    (path / "checkpoint.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="was taken on partition 'g' with 1 parts .* load it onto the "
                                         "partitioning it was taken on"):
        runtime.load_checkpoint(path, tables)


def test_fingerprints_tell_partitionings_apart(parts, tmp_path, graph):
    from distgraph.partition.layout import PartitionConfig

    partition_graph(graph, "g", 2, tmp_path / "again", part_method="random")
    partition_graph(graph, "g", 2, tmp_path / "other", part_method="random", seed=5)
    prints = [PartitionConfig.load(p).fingerprint() for p in (parts[2], tmp_path / "again" / "g.json",
                                                              tmp_path / "other" / "g.json", parts[1])]
    assert prints[0] == prints[1] and len(set(prints)) == 3


def test_two_machines_resume_on_another_number_of_servers(parts, tmp_path, launches):
    script = f"{sys.executable} {SCRIPTS / 'checkpoint_resume.py'}"
    first = launches(tmp_path, parts[2], [2, 1], f"{script} save {tmp_path}")
    assert first.wait(120) == 0, first.output[-3000:]
    pieces = json.loads((tmp_path / "ck" / "checkpoint.json").read_text())["tensors"]["emb"]["pieces"]
    assert len(pieces) == 3  # one per server: each wrote its own rows
    second = launches(tmp_path, parts[2], [1, 2], f"{script} resume {tmp_path}")  # other servers per machine
    assert second.wait(120) == 0, second.output[-3000:]
    a, b = torch.load(tmp_path / "first.pt"), torch.load(tmp_path / "second.pt")
    assert torch.equal(a["saved"], b["saved"]) and torch.equal(a["final"], b["final"])
    assert not torch.equal(a["saved"], a["final"])


def test_checkpoint_dir_keeps_the_newest_and_resumes_from_the_latest(parts, runtime, tmp_path):
    runtime.initialize(part_config=str(parts[1]))
    tables = _tables(runtime)
    ckpts = runtime.CheckpointDir(tmp_path / "run", keep=2)
    assert ckpts.load_latest(tables) is None
    for step in (1, 2, 3):
        _train(*tables, steps=1, seed=step)
        ckpts.save(step, tables, {"step": step})
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["step-0000000002", "step-0000000003"]
    last = _values(*tables)
    (ckpts.path(4)).mkdir()  # a later checkpoint that never completed
    _train(*tables, steps=1, seed=9)
    step, state = ckpts.load_latest(tables)
    assert step == 3 and state == {"step": 3} and _same(_values(*tables), last)
